// The services error model (grove/services/outcome.hpp): one std::error_code category, failures that
// carry exit reasons, outcome<T>.
#include "helpers.hpp"

#include <stdexcept>

using namespace svc_test;

TEST_CASE("service errors are std::error_codes of the grove.services category, one sentence each") {
  std::error_code ec = svc::errc::deadline_exceeded;
  CHECK(ec == svc::errc::deadline_exceeded);
  CHECK(ec != grove::errc::timeout);
  CHECK(std::string(ec.category().name()) == "grove.services");
  for (int e = 1; e <= static_cast<int>(svc::errc::no_workers); ++e) {
    std::string m = svc::make_error_code(static_cast<svc::errc>(e)).message();
    CHECK(!m.empty());
    CHECK(m.find("unknown") == std::string::npos);
  }
}

TEST_CASE("an outcome holds a value or a failure, and value() throws services::error for a failure") {
  svc::outcome<int> ok = 3;
  CHECK(ok.has_value());
  CHECK(*ok == 3);
  CHECK(!ok.error());
  svc::outcome<std::string> converted = "text";
  CHECK(converted.value() == "text");
  svc::outcome<int> bad = svc::failure(svc::make_error_code(svc::errc::exited), grove::exit_reason("db_down"));
  CHECK(!bad);
  CHECK(bad.error() == svc::errc::exited);
  CHECK(bad.failure().reason == grove::exit_reason("db_down"));
  CHECK(bad.failure().to_string() == "the process exited before answering: db_down");
  try {
    (void)bad.value();
    FAIL("value() did not throw");
  } catch (const svc::error& e) {
    CHECK(e.code() == svc::errc::exited);
    CHECK(e.failure().reason.text() == "db_down");
  }
  svc::outcome<void> done;
  CHECK(done.has_value());
  svc::outcome<void> not_done = svc::errc::pool_full;
  CHECK(not_done.error() == svc::errc::pool_full);
  CHECK_THROWS_AS(not_done.value(), svc::error);
  auto from_exception = svc::failure::from_exception(std::length_error("too long"));
  CHECK(from_exception.code == svc::errc::exception);
  CHECK(from_exception.to_string() == "exception: too long");
  CHECK(svc::failure::from_exit(grove::exit_reason::noproc()).code == grove::errc::noproc);
}
