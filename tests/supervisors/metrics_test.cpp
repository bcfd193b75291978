// A named supervisor's restarts on grove::metrics's page (grove/metrics.hpp), while it lives.
#include "support/fixture.hpp"

#include <string>

#include <grove/metrics.hpp>
#include <grove/supervisor.hpp>

namespace sup = grove::supervisor;

namespace {
struct crash {};

double restarts_on_page(const std::string& name) {
  const std::string page = grove::metrics::prometheus_text();
  const std::string key = "grove_supervisor_restarts_total{supervisor=\"" + name + "\"} ";
  const auto at = page.find(key);
  return at == std::string::npos ? -1 : std::stod(page.substr(at + key.size()));
}
}  // namespace

TEST_CASE("a named supervisor's restarts are on the metrics page while it lives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::flags f{.intensity = 10};
  f.name = "billing";
  f.logger = sup::logger{};
  grove::pid s = sup::start_link(f, {sup::worker("w", [] { grove::receive([](crash) { throw std::runtime_error("x"); }); })});
  CHECK(restarts_on_page("billing") == 0);
  for (int i = 0; i < 3; ++i) {
    auto kids = sup::which_children(s);
    REQUIRE(kids);
    const grove::pid old = (*kids)[0].pid;
    grove::send(old, crash{});
    REQUIRE(grove_test::wait_until([&] {
      auto now = sup::which_children(s);
      return now && !(*now)[0].pid.is_null() && (*now)[0].pid != old;
    }));
  }
  CHECK(restarts_on_page("billing") == 3);
  REQUIRE(!sup::stop(s));
  CHECK(restarts_on_page("billing") == -1);  // gone with it
}
