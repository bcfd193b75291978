// Durations at their extremes, for every call that takes one: a duration too long to represent
// (milliseconds::max(), hours::max(), an infinite floating-point one) means never, and zero or a
// negative one means now (grove/duration.hpp).
//
// "Never" is checked by watching the call not return for `quiet`, then ending it from outside: an
// event that must not happen can only be watched for a while. That wait orders nothing.
#include "support/fixture.hpp"

#include <cmath>
#include <limits>
#include <thread>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

constexpr auto quiet = 300ms;

struct returned {};
struct tick {};

// Spawns a process that runs `blocking` and then tells the caller; checks that it has not returned
// after `quiet`, then kills it and checks it was still there to be killed.
template <class F>
void check_blocks(F blocking) {
  const grove::pid me = grove::self();
  auto s = grove::spawn_monitor([me, blocking] {
    blocking();
    grove::send(me, returned{});
  });
  const bool early = grove::receive([](returned) { return true; }, grove::after(quiet, [] { return false; }));
  CHECK_FALSE(early);
  grove::exit(s.pid, grove::exit_reason::kill());
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.is_killed());
}

// Spawns a process that runs `prompt`, which must return at once; checks that it does.
template <class F>
void check_returns(F prompt) {
  const grove::pid me = grove::self();
  grove::spawn([me, prompt] {
    prompt();
    grove::send(me, returned{});
  });
  CHECK(grove::receive([](returned) { return true; }, grove::after(patience, [] { return false; })));
}

}  // namespace

TEST_CASE("grove reads durations too long to represent as never, and zero, negative and NaN as now") {
  static_assert(grove::is_forever(std::chrono::milliseconds::max()));
  static_assert(grove::is_forever(std::chrono::hours::max()));
  static_assert(grove::is_forever(std::chrono::seconds::max()));
  static_assert(grove::is_forever(std::chrono::nanoseconds::max()));
  static_assert(grove::is_forever(grove::forever));
  static_assert(grove::is_forever(std::chrono::hours(24 * 365 * 1000)));  // 1,000 years: past 2^63 ns
  static_assert(!grove::is_forever(std::chrono::hours(24 * 365 * 100)));  // 100 years: representable
  static_assert(grove::detail::timeout_ns(std::chrono::milliseconds(1500)) == 1'500'000'000);
  static_assert(grove::detail::timeout_ns(std::chrono::milliseconds(-1)) == 0);
  static_assert(grove::detail::timeout_ns(std::chrono::seconds::min()) == 0);
  static_assert(grove::detail::timeout_ns(std::chrono::duration<long long, std::pico>(2'500)) == 2);
  CHECK(grove::is_forever(std::chrono::duration<double>(std::numeric_limits<double>::infinity())));
  CHECK(grove::is_forever(std::chrono::duration<double>(1e300)));
  CHECK(grove::detail::timeout_ns(std::chrono::duration<double>(std::nan(""))) == 0);
  CHECK(grove::detail::timeout_ns(std::chrono::duration<double>(-std::numeric_limits<double>::infinity())) == 0);
  CHECK(grove::detail::timeout_ns(std::chrono::duration<double, std::milli>(2.5)) == 2'500'000);
}

TEST_CASE("receive with after(max), after(huge) or after(infinity) waits for a message and never times out") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  check_blocks([] { grove::receive([](tick) {}, grove::after(std::chrono::milliseconds::max(), [] {})); });
  check_blocks([] { grove::receive([](tick) {}, grove::after(std::chrono::hours::max(), [] {})); });
  check_blocks([] { grove::receive([](tick) {}, grove::after(std::chrono::hours(24 * 365 * 1000), [] {})); });
  check_blocks([] {
    grove::receive([](tick) {}, grove::after(std::chrono::duration<double>(std::numeric_limits<double>::infinity()), [] {}));
  });
  check_blocks([] { grove::receive([](tick) {}, grove::after(grove::forever, [] {})); });
  // And a message still ends such a wait.
  const grove::pid self = me.pid();
  grove::pid waiter = grove::spawn([self] {
    bool got = grove::receive([](tick) { return true; }, grove::after(std::chrono::milliseconds::max(), [] { return false; }));
    grove::send(self, got);
  });
  grove::send(waiter, tick{});
  CHECK(grove::receive([](bool got) { return got; }, grove::after(patience, [] { return false; })));
}

TEST_CASE("receive with after(0) or a negative after polls, in a process and on a foreign thread") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  check_returns([] { grove::receive([](tick) {}, grove::after(0ms, [] {})); });
  check_returns([] { grove::receive([](tick) {}, grove::after(-5s, [] {})); });
  check_returns([] { grove::receive([](tick) {}, grove::after(std::chrono::hours::min(), [] {})); });
  CHECK(grove::receive([](tick) { return 1; }, grove::after(-1h, [] { return 2; })) == 2);
  CHECK(grove::receive([](tick) { return 1; }, grove::after(std::chrono::milliseconds::min(), [] { return 2; })) == 2);
  grove::send(me.pid(), tick{});
  CHECK(grove::receive([](tick) { return 1; }, grove::after(-1h, [] { return 2; })) == 1);  // a message is still taken
}

TEST_CASE("sleep_for(max) and sleep_until(time_point::max()) sleep until the process is ended") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  check_blocks([] { grove::sleep_for(std::chrono::seconds::max()); });
  check_blocks([] { grove::sleep_for(std::chrono::hours::max()); });
  check_blocks([] { grove::sleep_for(std::chrono::milliseconds::max()); });
  check_blocks([] { grove::sleep_for(std::chrono::hours(24 * 365 * 1000)); });
  check_blocks([] { grove::sleep_for(grove::forever); });
  check_blocks([] { grove::sleep_until(std::chrono::steady_clock::time_point::max()); });
  check_blocks([] { grove::sleep_until(std::chrono::system_clock::time_point::max()); });
}

TEST_CASE("sleep_for of zero, a negative duration or min, and sleep_until in the past, return at once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  check_returns([] { grove::sleep_for(0ms); });
  check_returns([] { grove::sleep_for(-1h); });
  check_returns([] { grove::sleep_for(std::chrono::seconds::min()); });
  check_returns([] { grove::sleep_until(std::chrono::steady_clock::now() - 1h); });
  check_returns([] { grove::sleep_until(std::chrono::steady_clock::time_point::min()); });
  grove::sleep_for(-1s);  // a scoped process too
  grove::sleep_until(std::chrono::steady_clock::time_point::min());
}

TEST_CASE("send_after with a duration too long to represent never fires, and can still be cancelled") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::vector<grove::timer_ref> timers;
  timers.push_back(grove::send_after(me.pid(), tick{}, std::chrono::hours::max()));
  timers.push_back(grove::send_after(me.pid(), tick{}, std::chrono::milliseconds::max()));
  timers.push_back(grove::send_after(me.pid(), tick{}, std::chrono::seconds::max()));
  timers.push_back(grove::send_after(me.pid(), tick{}, grove::forever));
  timers.push_back(grove::send_after(me.pid(), tick{}, std::chrono::hours(24 * 365 * 1000)));
  timers.push_back(grove::send_after(me.pid(), tick{}, std::chrono::duration<double>(std::numeric_limits<double>::infinity())));
  // From a process too (its own worker's wheel, not a foreign thread's round robin).
  const grove::pid self = me.pid();
  grove::spawn([self] { grove::send(self, grove::send_after(self, tick{}, std::chrono::hours::max())); });
  timers.push_back(grove::receive([](grove::timer_ref t) { return t; }));
  CHECK_FALSE(grove::receive([](tick) { return true; }, grove::after(quiet, [] { return false; })));
  for (auto& t : timers) CHECK(grove::cancel_timer(t));
}

TEST_CASE("send_after with zero, a negative duration or min fires at once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::send_after(me.pid(), tick{}, 0ms);
  grove::send_after(me.pid(), tick{}, -1h);
  grove::send_after(me.pid(), tick{}, std::chrono::hours::min());
  for (int i = 0; i < 3; ++i) CHECK(grove::receive([](tick) { return true; }, grove::after(patience, [] { return false; })));
}

TEST_CASE("process_info with a timeout of max waits for the answer; zero or negative does not block") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid target = grove::spawn([] { grove::receive([](tick) {}); });
  auto info = grove::process_info(target, std::chrono::milliseconds::max());  // from a foreign thread
  REQUIRE(info.has_value());
  CHECK(info->pid == target);
  const grove::pid self = me.pid();
  grove::spawn([self, target] {  // from a process
    auto i = grove::process_info(target, std::chrono::milliseconds::max());
    grove::send(self, i.has_value() && i->pid == target);
  });
  CHECK(grove::receive([](bool ok) { return ok; }, grove::after(patience, [] { return false; })));
  (void)grove::process_info(target, 0ms);  // answered or not: it returns
  (void)grove::process_info(target, -1s);
  grove::spawn([self, target] {
    (void)grove::process_info(target, std::chrono::milliseconds::min());
    grove::send(self, returned{});
  });
  CHECK(grove::receive([](returned) { return true; }, grove::after(patience, [] { return false; })));
  grove::send(target, tick{});
}

TEST_CASE("wait_until_idle(max) waits until the last process has exited") {
  grove_test::runtime_fixture rt;
  grove::spawn([] { grove::sleep_for(200ms); });
  CHECK(rt->wait_until_idle(std::chrono::milliseconds::max()));
  CHECK(rt->wait_until_idle(0ms));  // idle now: true at once
  grove::spawn([] { grove::receive([](tick) {}); });
  CHECK_FALSE(rt->wait_until_idle(-1s));  // not idle, and a negative timeout does not wait
}

TEST_CASE("stop(max) gives processes all the time they take to shut down and kills none") {
  grove_test::runtime_fixture rt;
  std::atomic<bool> cleaned{false};
  grove::spawn(grove::spawn_options{.trap_exit = true}, [&cleaned] {
    grove::receive([](grove::exit_signal) {});
    grove::sleep_for(200ms);  // a slow cleanup
    cleaned = true;
  });
  grove::stop_report r = rt.stop(std::chrono::milliseconds::max());
  CHECK(r.clean);
  CHECK(r.killed == 0);
  CHECK(cleaned.load());
}
