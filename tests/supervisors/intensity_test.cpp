// Restart intensity and escalation (OTP): more than `intensity` restarts in `period` make the
// supervisor stop all its children in reverse order and exit `shutdown`; its own supervisor then
// restarts it (or gives up in turn).
#include <atomic>

#include "helpers.hpp"

using namespace sup_test;
using strings = std::vector<std::string>;

namespace {
sup::flags logged(sup::flags f, report_log& reports) {
  f.logger = reports.logger();
  return f;
}
}  // namespace

TEST_CASE("exceeding the restart intensity stops all children in reverse order and the supervisor exits shutdown") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);  // the supervisor's shutdown must not end the test's process
  grove::pid s = sup::start_link(logged({.intensity = 2, .period = std::chrono::seconds(60)}, reports),
                                 {logged_worker("a", log), logged_worker("b", log), logged_worker("c", log)});
  auto ref = grove::monitor(s);
  for (int i = 0; i < 2; ++i) {
    grove::pid old = child_pid(s, "b");
    grove::exit(old, grove::exit_reason("boom"));
    REQUIRE(!wait_restarted(s, "b", old).is_null());
  }
  log.clear();
  grove::exit(child_pid(s, "b"), grove::exit_reason("boom"));  // the third in 60 s
  CHECK(wait_down(ref).is_shutdown());
  CHECK(log.snapshot() == strings{"stop:b", "stop:c", "stop:a"});  // b crashed; then c and a, reverse order
  auto gave_up = reports.of(sup::report_kind::gave_up);
  REQUIRE(gave_up.size() == 1);
  CHECK(gave_up[0].child_id == "b");
  CHECK(gave_up[0].restarts_in_window == 3);
  CHECK(gave_up[0].reason.text() == "boom");
  auto e = grove::receive([](grove::exit_signal x) { return x; },
                          grove::after(grove_test::patience, [] { return grove::exit_signal{}; }));
  CHECK(e.from == s);
  CHECK(e.reason.is_shutdown());
}

TEST_CASE("intensity zero makes the supervisor give up at the first crash") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  grove::pid s = sup::start_link(logged({.intensity = 0}, reports), {idle_worker("a")});
  auto ref = grove::monitor(s);
  grove::exit(child_pid(s, "a"), grove::exit_reason("boom"));
  CHECK(wait_down(ref).is_shutdown());
  CHECK(reports.count(sup::report_kind::child_restarted) == 0);
}

TEST_CASE("restarts further apart than the period never make the supervisor give up") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const auto period = std::chrono::milliseconds(100);
  grove::pid s = sup::start_link(logged({.intensity = 1, .period = period}, reports), {idle_worker("a")});
  for (int i = 0; i < 3; ++i) {
    grove::pid old = child_pid(s, "a");
    grove::exit(old, grove::exit_reason("boom"));
    REQUIRE(!wait_restarted(s, "a", old).is_null());
    // Let the window pass, counted from a moment after the restart was decided (however late the
    // supervisor ran): a condition on the clock, not a synchronisation.
    const auto t = std::chrono::steady_clock::now();
    grove_test::wait_until([&] { return std::chrono::steady_clock::now() > t + 2 * period; });
  }
  CHECK(grove::is_alive(s));
  CHECK(reports.count(sup::report_kind::gave_up) == 0);
}

TEST_CASE("a subtree that gives up is restarted by its parent supervisor: escalation") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::flags inner_flags = logged({.intensity = 1, .period = std::chrono::seconds(60)}, reports);
  inner_flags.name = "inner";
  auto inner = sup::supervisor_child("inner", inner_flags, {logged_worker("w1", log), logged_worker("w2", log)});
  grove::pid top = sup::start_link(logged({.intensity = 5, .period = std::chrono::seconds(60)}, reports),
                                   {logged_worker("before", log), inner, logged_worker("after", log)});
  grove::pid inner1 = child_pid(top, "inner");
  grove::pid before = child_pid(top, "before");
  REQUIRE(grove::whereis("inner") == inner1);
  grove::pid w = child_pid(inner1, "w1");
  grove::exit(w, grove::exit_reason("boom"));
  w = wait_restarted(inner1, "w1", w);
  REQUIRE(!w.is_null());
  log.clear();
  grove::exit(w, grove::exit_reason("boom"));  // the second in 60 s: inner gives up
  grove::pid inner2 = wait_restarted(top, "inner", inner1);
  REQUIRE(!inner2.is_null());
  CHECK(!grove::is_alive(inner1));
  CHECK(child_pid(top, "before") == before);  // one_for_one at the top
  CHECK(log.snapshot() == strings{"stop:w1", "stop:w2", "start:w1", "start:w2"});
  CHECK(grove_test::wait_until([&] { return grove::whereis("inner") == inner2; }));
  auto gave_up = reports.of(sup::report_kind::gave_up);
  REQUIRE(gave_up.size() == 1);
  CHECK(gave_up[0].supervisor == inner1);
  CHECK(gave_up[0].supervisor_name == "inner");
  auto crashed = reports.of(sup::report_kind::child_crashed);
  REQUIRE(crashed.size() == 3);
  CHECK(crashed[2].supervisor == top);
  CHECK(crashed[2].child_id == "inner");
  CHECK(crashed[2].reason.is_shutdown());
}

TEST_CASE("a child that fails to restart is tried again, and each try counts toward the intensity") {
  report_log reports;
  std::atomic<int> starts{0};
  std::atomic<int> fail_from{1000};  // starts with this index or higher fail
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  struct never {};
  sup::child_spec flaky;
  flaky.id = "flaky";
  flaky.start = [&]() -> grove::result<grove::pid> {
    if (starts.fetch_add(1) >= fail_from.load()) return grove::errc::process_limit;
    return grove::spawn_link([] { grove::receive([](never) {}); });
  };
  grove::pid s = sup::start_link(logged({.intensity = 3, .period = std::chrono::seconds(60)}, reports), {flaky});
  auto ref = grove::monitor(s);
  fail_from = 1;  // every restart fails from now on
  grove::exit(child_pid(s, "flaky"), grove::exit_reason("boom"));
  CHECK(wait_down(ref).is_shutdown());
  // restart 1 (fails), try again 2 (fails), 3 (fails), the 4th would exceed 3 in 60 s: give up.
  CHECK(starts.load() == 1 + 3);
  CHECK(reports.count(sup::report_kind::restart_failed) == 3);
  CHECK(reports.count(sup::report_kind::gave_up) == 1);
}
