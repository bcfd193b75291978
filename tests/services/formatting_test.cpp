// fmt prints the supervisors' and services' public values by name (with only Grove's
// headers and fmt/core.h: this file includes no fmt/format.h, so it is also the link check).
#include "support/fixture.hpp"

#include <fmt/core.h>

#include <grove/services.hpp>
#include <grove/supervisor.hpp>

using namespace std::chrono_literals;
namespace sup = grove::supervisor;
namespace svc = grove::services;

TEST_CASE("supervisor values print by name with fmt, with the string options") {
  CHECK(fmt::format("{}", sup::strategy::rest_for_one) == "rest_for_one");
  CHECK(fmt::format("{}", sup::auto_shutdown::any_significant) == "any_significant");
  CHECK(fmt::format("{}", sup::child_state::restarting) == "restarting");
  CHECK(fmt::format("{}", sup::restart_type::transient) == "transient");
  CHECK(fmt::format("{}", sup::child_type::supervisor) == "supervisor");
  CHECK(fmt::format("{}", sup::report_kind::gave_up) == "gave_up");
  CHECK(fmt::format("{}", sup::errc::duplicate_child_id) == "duplicate_child_id");
  CHECK(fmt::format("[{:>12}]", sup::child_state::running) == "[     running]");
  sup::crash_report r;
  r.kind = sup::report_kind::child_crashed;
  r.child_id = "db";
  r.reason = grove::exit_reason("timeout");
  CHECK(fmt::format("{}", r) == sup::format_report(r));
}

TEST_CASE("services values print with fmt: errors by name, failures and deadlines in words") {
  CHECK(fmt::format("{}", svc::errc::pool_full) == "pool_full");
  const svc::failure f{svc::errc::deadline_exceeded};
  CHECK(fmt::format("{}", f) == f.to_string());
  CHECK(fmt::format("{}", svc::deadline::never()) == "never");
  CHECK(fmt::format("{}", svc::deadline::after(-1ms)) == "passed");
  const std::string soon = fmt::format("{}", svc::deadline::after(50ms));
  CHECK(soon.rfind("in ", 0) == 0);
  CHECK(soon.find(" ms") != std::string::npos);
  CHECK(fmt::format("{}", svc::deadline::after(10s)).find(" s") != std::string::npos);
  CHECK(fmt::format("{:<8}|", svc::deadline::never()) == "never   |");
}
