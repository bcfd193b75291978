// Deadlines and retries (grove/services/deadline.hpp, retry.hpp): a budget is spent once; retries
// happen only when asked, are counted, and never sleep or retry past the caller's deadline.
#include "helpers.hpp"

#include <atomic>
#include <stdexcept>

using namespace svc_test;

namespace {

// A server that counts the calls it gets and never answers `stall`.
struct flaky {
  struct stall {
    using reply_type = int;
  };
  struct attempt {};
  struct count {};
  int calls = 0;
  void handle_call(stall, svc::reply_to<int>) { ++calls; }  // the reply is dropped: never answered
  svc::outcome<int> handle_call(attempt) {
    ++calls;
    return grove::errc::timeout;
  }
  int handle_call(count) const { return calls; }
};

}  // namespace

TEST_CASE("a deadline's time left shrinks, is zero once passed, and never has no end") {
  auto d = svc::deadline::after(1h);
  CHECK(!d.has_passed());
  CHECK(d.remaining() <= std::chrono::hours(1));
  CHECK(d.remaining() > std::chrono::minutes(59));
  auto passed = svc::deadline::after(-1s);
  CHECK(passed.has_passed());
  CHECK(passed.remaining() == std::chrono::nanoseconds(0));
  CHECK(svc::deadline::never().is_never());
  CHECK(!svc::deadline::never().has_passed());
  CHECK(svc::deadline().is_never());
  CHECK(svc::deadline::after(std::chrono::hours::max()).is_never());
  CHECK(svc::deadline::after(std::chrono::milliseconds::max()).is_never());
  CHECK(svc::deadline::after(grove::forever).is_never());
  CHECK(svc::deadline::after(std::chrono::hours(24 * 365 * 1000)).is_never());
  CHECK(svc::deadline::after(std::chrono::duration<double>(1.0 / 0.0)).is_never());
  CHECK(svc::deadline::after(std::chrono::milliseconds::min()).has_passed());
  CHECK(svc::deadline::after(std::chrono::duration<double>(-1.0 / 0.0)).has_passed());
  CHECK(svc::deadline::after(0ms).has_passed());
  CHECK(!svc::deadline::after(std::chrono::hours(24 * 365 * 100)).is_never());  // far, but a real time
}

TEST_CASE("earliest and sooner never extend a deadline") {
  auto near = svc::deadline::after(1s);
  auto far = svc::deadline::after(1h);
  CHECK(earliest(near, far) == near);
  CHECK(earliest(far, svc::deadline::never()) == far);
  CHECK(near.sooner(1h) == near);
  CHECK(far.sooner(1s).when() < far.when());
  CHECK(!svc::deadline::never().sooner(1s).is_never());
}

TEST_CASE("a 1 s budget spent on calls in a row takes 1 s in all, not 1 s per call") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = svc::start_link<flaky>({}).value();
  const auto budget = svc::deadline::after(1s);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) CHECK(svc::call(s, flaky::stall{}, budget).error() == svc::errc::deadline_exceeded);
  const double took = seconds_since(start);
  CHECK(took >= 1.0);
  CHECK(took < 2.0);
}

TEST_CASE("nothing retries unless asked: a failed call is attempted once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = svc::start_link<flaky>({}).value();
  CHECK(svc::call(s, flaky::attempt{}).error() == grove::errc::timeout);
  CHECK(svc::call(s, flaky::count{}).value() == 1);
}

TEST_CASE("backoff grows exponentially, is capped, and jitter only shortens it") {
  svc::retry_policy p{.initial_backoff = 100ms, .max_backoff = 1s, .multiplier = 2.0, .jitter = 0.5};
  CHECK(p.backoff(1, 0.0) == 100ms);
  CHECK(p.backoff(2, 0.0) == 200ms);
  CHECK(p.backoff(3, 0.0) == 400ms);
  CHECK(p.backoff(5, 0.0) == 1s);   // 1.6 s capped
  CHECK(p.backoff(30, 0.0) == 1s);
  CHECK(p.backoff(1, 0.999) > 50ms);
  CHECK(p.backoff(1, 0.999) <= 100ms);
  CHECK(p.backoff(1, 0.5) == 75ms);
  svc::retry_policy none{.jitter = 0.0};
  CHECK(none.backoff(2, 0.9) == 200ms);
}

TEST_CASE("a retry policy retries the errors it is told to and counts every retry") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  svc::retry_policy p{.max_attempts = 5, .initial_backoff = 1ms, .max_backoff = 5ms};
  auto failures = std::make_shared<std::atomic<int>>(2);
  auto r = svc::retry(p, svc::deadline::after(patience), [failures]() -> svc::outcome<int> {
    if (failures->fetch_sub(1) > 0) return grove::errc::timeout;
    return 9;
  });
  CHECK(r.value() == 9);
  auto s = p.stats();
  CHECK(s.calls == 1);
  CHECK(s.attempts == 3);
  CHECK(s.retries == 2);
  CHECK(s.recovered == 1);
  svc::retry_policy copy = p;  // copies count in the same place
  (void)svc::retry(copy, svc::deadline::after(patience), [] { return 1; });
  CHECK(p.stats().calls == 2);
}

TEST_CASE("an error the policy does not retry is returned after one attempt") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  svc::retry_policy p{.max_attempts = 5, .initial_backoff = 1ms};
  auto attempts = std::make_shared<std::atomic<int>>(0);
  auto r = svc::retry(p, svc::deadline::after(patience), [attempts]() -> int {
    attempts->fetch_add(1);
    throw std::runtime_error("malformed request");  // exceptions are not retried by default
  });
  CHECK(r.error() == svc::errc::exception);
  CHECK(attempts->load() == 1);
  CHECK(p.stats().not_retryable == 1);
  svc::retry_policy only_pool_full{.max_attempts = 3, .initial_backoff = 1ms,
                                   .retry_if = [](const svc::failure& f) { return f.code == svc::errc::pool_full; }};
  auto t = svc::retry(only_pool_full, svc::deadline::after(patience), [] { return svc::outcome<int>(grove::errc::timeout); });
  CHECK(t.error() == grove::errc::timeout);
  CHECK(only_pool_full.stats().attempts == 1);
}

TEST_CASE("retries stop after max_attempts and return the last error") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = svc::start_link<flaky>({}).value();
  svc::retry_policy p{.max_attempts = 3, .initial_backoff = 1ms, .max_backoff = 2ms};
  auto r = svc::retry(p, svc::deadline::after(patience), [s](const svc::deadline& d) { return svc::call(s, flaky::attempt{}, d); });
  CHECK(r.error() == grove::errc::timeout);
  CHECK(svc::call(s, flaky::count{}).value() == 3);
  CHECK(p.stats().exhausted == 1);
  CHECK(p.stats().retries == 2);
}

TEST_CASE("a retry whose backoff would pass the deadline stops at once and reports deadline_exceeded") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = svc::start_link<flaky>({}).value();
  svc::retry_policy p{.max_attempts = 10, .initial_backoff = 10s, .max_backoff = 10s, .jitter = 0.0};
  auto start = std::chrono::steady_clock::now();
  auto r = svc::retry(p, svc::deadline::after(5s), [s](const svc::deadline& d) { return svc::call(s, flaky::attempt{}, d); });
  CHECK(seconds_since(start) < 2.5);  // did not sleep towards the deadline
  CHECK(r.error() == svc::errc::deadline_exceeded);
  CHECK(r.failure().to_string().find("timed out") != std::string::npos);  // names the last error
  CHECK(p.stats().stopped_by_deadline == 1);
  CHECK(p.stats().retries == 0);
  CHECK(svc::call(s, flaky::count{}).value() == 1);
  // With a budget that runs out during the retries: never more than the budget.
  svc::retry_policy q{.max_attempts = 100, .initial_backoff = 300ms, .max_backoff = 300ms, .jitter = 0.0};
  start = std::chrono::steady_clock::now();
  auto r2 = svc::retry(q, svc::deadline::after(1s), [s](const svc::deadline& d) { return svc::call(s, flaky::stall{}, d); });
  const double took = seconds_since(start);
  CHECK(r2.error() == svc::errc::deadline_exceeded);
  CHECK(took < 2.0);
  CHECK(q.stats().attempts >= 1);
}
