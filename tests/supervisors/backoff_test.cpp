// Restart backoff (Grove beyond OTP): a child's restarts are delayed exponentially; the supervisor
// keeps serving meanwhile, shows the child as restarting, and counts restarts toward the intensity
// when it decides on them.
#include <atomic>

#include "helpers.hpp"

using namespace sup_test;
using strings = std::vector<std::string>;

namespace {
sup::flags logged(sup::flags f, report_log& reports) {
  f.logger = reports.logger();
  return f;
}
sup::backoff_policy fixed(std::chrono::milliseconds initial, std::chrono::milliseconds max) {
  return sup::backoff_policy{.initial = initial, .max = max, .multiplier = 2.0, .jitter = 0.0};
}
}  // namespace

TEST_CASE("a child with backoff is restarted after its delay and shows restarting meanwhile") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec c = idle_worker("c");
  c.backoff = fixed(std::chrono::milliseconds(1500), std::chrono::milliseconds(1500));
  grove::pid s = sup::start_link(logged({.intensity = 10}, reports), {c});
  grove::pid old = child_pid(s, "c");
  const auto t0 = std::chrono::steady_clock::now();
  grove::exit(old, grove::exit_reason("boom"));
  REQUIRE(reports.wait_for(sup::report_kind::child_crashed, 1));
  CHECK(child_state_of(s, "c") == sup::child_state::restarting);  // the call is served during the delay
  CHECK(!wait_restarted(s, "c", old).is_null());
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(1500));  // timers never fire early
}

TEST_CASE("a child that fails to start is retried after growing delays, not at once") {
  report_log reports;
  std::atomic<int> attempts{0};
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct never {};
  std::atomic<bool> failing{false};
  sup::child_spec c;
  c.id = "c";
  c.backoff = fixed(std::chrono::milliseconds(20), std::chrono::milliseconds(1000));
  c.start = [&]() -> grove::result<grove::pid> {
    if (failing.load() && attempts.fetch_add(1) < 4) return grove::errc::process_limit;  // the 5th try works
    return grove::spawn_link([] { grove::receive([](never) {}); });
  };
  grove::pid s = sup::start_link(logged({.intensity = 100}, reports), {c});
  grove::pid old = child_pid(s, "c");
  failing = true;
  const auto t0 = std::chrono::steady_clock::now();
  grove::exit(old, grove::exit_reason("boom"));
  CHECK(!wait_restarted(s, "c", old).is_null());
  // Delays 20, 40, 80, 160, 320 ms (jitter 0) before tries 1..5.
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(20 + 40 + 80 + 160 + 320));
  CHECK(attempts.load() == 5);
  CHECK(reports.count(sup::report_kind::restart_failed) == 4);
  CHECK(reports.count(sup::report_kind::child_restarted) == 1);
}

TEST_CASE("terminate_child cancels a pending delayed restart") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec c = idle_worker("c");
  // Long enough for both calls below to reach the supervisor within it, however slowly this runs.
  c.backoff = fixed(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000));
  grove::pid s = sup::start_link(logged({.intensity = 10}, reports), {c, idle_worker("other")});
  grove::exit(child_pid(s, "c"), grove::exit_reason("boom"));
  REQUIRE(reports.wait_for(sup::report_kind::child_crashed, 1));
  CHECK(sup::delete_child(s, "c") == sup::errc::restarting);
  CHECK(sup::terminate_child(s, "c") == std::error_code{});
  // Past the delay, it has not come back; restart the other child to have a later event to wait for.
  const auto t = std::chrono::steady_clock::now();
  grove_test::wait_until([&] { return std::chrono::steady_clock::now() > t + std::chrono::milliseconds(2000); });
  CHECK(child_state_of(s, "c") == sup::child_state::stopped);
  CHECK(reports.count(sup::report_kind::child_restarted) == 0);
  CHECK(sup::delete_child(s, "c") == std::error_code{});
}

TEST_CASE("with backoff in a rest_for_one group the later children stop at once and all start after the delay") {
  event_log log;
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  sup::child_spec db = logged_worker("db", log);
  db.backoff = fixed(std::chrono::milliseconds(1000), std::chrono::milliseconds(1000));  // outlasts the look below
  grove::pid s = sup::start_link(logged({.strategy = sup::strategy::rest_for_one, .intensity = 10}, reports),
                                 {db, logged_worker("cache", log)});
  log.clear();
  grove::exit(child_pid(s, "db"), grove::exit_reason("boom"));
  REQUIRE(grove_test::wait_until([&] { return log.count("stop:cache") == 1; }));
  auto kids = sup::which_children(s);
  REQUIRE(kids);
  CHECK((*kids)[0].state == sup::child_state::restarting);
  CHECK((*kids)[1].state == sup::child_state::restarting);
  REQUIRE(grove_test::wait_until([&] { return log.with_prefix("start:").size() == 2; }));
  CHECK(log.snapshot() == strings{"stop:db", "stop:cache", "start:db", "start:cache"});
}

TEST_CASE("each delayed restart counts toward the intensity when it is decided") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  sup::child_spec c = idle_worker("c");
  c.backoff = fixed(std::chrono::milliseconds(10), std::chrono::milliseconds(10));
  grove::pid s = sup::start_link(logged({.intensity = 2, .period = std::chrono::seconds(60)}, reports), {c});
  auto ref = grove::monitor(s);
  for (int i = 0; i < 2; ++i) {
    grove::pid old = child_pid(s, "c");
    grove::exit(old, grove::exit_reason("boom"));
    REQUIRE(!wait_restarted(s, "c", old).is_null());
  }
  grove::exit(child_pid(s, "c"), grove::exit_reason("boom"));
  CHECK(wait_down(ref).is_shutdown());
  CHECK(reports.count(sup::report_kind::gave_up) == 1);
}
