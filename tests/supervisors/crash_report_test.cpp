// Crash reports: one structured report per crash, restart and give-up, through the supervisor's own
// logger or the global one; the default prints one line to stderr.
#include <stdexcept>

#include "helpers.hpp"

using namespace sup_test;

TEST_CASE("a crash and its restart produce one report each with supervisor, child, pid, reason and count") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct go {};
  sup::flags f{.intensity = 3};
  f.name = "reporting";
  f.logger = reports.logger();
  auto thrower =
      sup::worker("thrower", [] { grove::receive([](go) { throw std::runtime_error("division by zero"); }); });
  grove::pid s = sup::start_link(f, {thrower});
  grove::pid old = child_pid(s, "thrower");
  grove::send(old, go{});
  grove::pid now = wait_restarted(s, "thrower", old);
  REQUIRE(reports.wait_for(sup::report_kind::child_restarted, 1));
  auto all = reports.snapshot();
  REQUIRE(all.size() == 2);
  const auto& crash = all[0];
  CHECK(crash.kind == sup::report_kind::child_crashed);
  CHECK(crash.supervisor == s);
  CHECK(crash.supervisor_name == "reporting");
  CHECK(crash.child_id == "thrower");
  CHECK(crash.child == old);
  CHECK(crash.reason.is_exception());
  CHECK(crash.exception == "division by zero");
  CHECK(crash.restarts_in_window == 1);
  CHECK(crash.intensity == 3);
  CHECK(crash.period == std::chrono::milliseconds(5000));
  const auto& restart = all[1];
  CHECK(restart.kind == sup::report_kind::child_restarted);
  CHECK(restart.child == now);
  std::string line = sup::format_report(crash);
  CHECK(line.find("supervisor reporting") != std::string::npos);
  CHECK(line.find("child 'thrower'") != std::string::npos);
  CHECK(line.find("crashed: exception: division by zero") != std::string::npos);
  CHECK(line.find("restarts 1 of 3 in 5000 ms") != std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("supervisors without a logger of their own report to the global logger, and an empty one silences them") {
  report_log global;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::set_logger(global.logger());
  grove::pid s = sup::start_link({.intensity = 10}, {idle_worker("a")});
  grove::pid old = child_pid(s, "a");
  grove::exit(old, grove::exit_reason("boom"));
  grove::pid second = wait_restarted(s, "a", old);
  CHECK(global.wait_for(sup::report_kind::child_restarted, 1));
  sup::set_logger({});
  grove::exit(second, grove::exit_reason("boom"));
  CHECK(!wait_restarted(s, "a", second).is_null());
  CHECK(global.snapshot().size() == 2);
  sup::reset_logger();
  auto ref = grove::monitor(s);
  sup::stop(s);
  wait_down(ref);
}

TEST_CASE("a logger that throws does not disturb the supervisor") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::flags f{.intensity = 10};
  f.logger = [](const sup::crash_report&) { throw std::runtime_error("log disk full"); };
  grove::pid s = sup::start_link(f, {idle_worker("a")});
  grove::pid old = child_pid(s, "a");
  grove::exit(old, grove::exit_reason("boom"));
  CHECK(!wait_restarted(s, "a", old).is_null());
}

TEST_CASE("every report kind has a name and a one-line format") {
  for (auto k : {sup::report_kind::child_crashed, sup::report_kind::child_restarted, sup::report_kind::start_failed,
                 sup::report_kind::restart_failed, sup::report_kind::shutdown_error, sup::report_kind::gave_up,
                 sup::report_kind::auto_shutdown}) {
    sup::crash_report r;
    r.kind = k;
    r.child_id = "x";
    CHECK(std::string(sup::to_string(k)) != "unknown");
    std::string line = sup::format_report(r);
    CHECK(line.find("'x'") != std::string::npos);
    CHECK(line.find('\n') == std::string::npos);
  }
}
