// grove/services/retry.hpp: retries, only when asked, and never past the caller's deadline.
//
//   svc::retry_policy policy{.max_attempts = 4, .initial_backoff = 100ms};
//   auto r = svc::retry(policy, deadline, [&](const svc::deadline& d) { return svc::call(db, get{k}, d); });
//   policy.stats().retries;                         // every retry is counted here
//
// Nothing in Grove retries implicitly: a call, a pool run, a task are each attempted once. retry()
// runs `attempt` (with the deadline, so each attempt spends only what is left) until it succeeds,
// fails with an error the policy does not retry, or has been tried max_attempts times — and before
// each backoff it checks the deadline: if the wait would reach it, it stops at once, without
// sleeping, and returns errc::deadline_exceeded whose reason names the last error. So a 1 s budget
// with retries still returns within 1 s (plus the last attempt's own overrun, which its deadline
// bounds). deadline_exceeded itself is never retried: the deadline is the same for every attempt.
//
// Backoff before retry n (n = 1 for the first retry): min(max_backoff, initial_backoff ×
// multiplier^(n-1)), shortened by up to `jitter` of itself at random (uniform), so it never exceeds
// the capped value and callers that failed together do not retry together.
//
// The counters are shared by the copies of a policy (a shared_ptr), so one policy used by many
// processes counts in one place. Thread-safe. retry() sleeps with grove::sleep_for: call it from a
// process or a scoped_process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <grove/exit_reason.hpp>
#include <grove/process.hpp>

#include <grove/services/deadline.hpp>
#include <grove/services/detail/common.hpp>
#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

// Counters (relaxed atomics: each is a tally; a snapshot may mix moments).
struct retry_counters {
  std::atomic<std::uint64_t> calls{0};             // retry() calls
  std::atomic<std::uint64_t> attempts{0};          // attempts made (first tries included)
  std::atomic<std::uint64_t> retries{0};           // attempts after a failure (attempts - calls)
  std::atomic<std::uint64_t> recovered{0};         // calls that succeeded after at least one retry
  std::atomic<std::uint64_t> stopped_by_deadline{0};  // calls that stopped because the backoff would pass the deadline
  std::atomic<std::uint64_t> exhausted{0};         // calls that failed max_attempts times
  std::atomic<std::uint64_t> not_retryable{0};     // calls that failed with an error not retried
};

struct retry_stats {
  std::uint64_t calls = 0, attempts = 0, retries = 0, recovered = 0, stopped_by_deadline = 0, exhausted = 0,
                not_retryable = 0;
};

struct retry_policy {
  unsigned max_attempts = 3;                        // first try included (1: no retry)
  std::chrono::milliseconds initial_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  double multiplier = 2.0;                          // >= 1
  double jitter = 0.5;                              // in [0, 1]: how much of each delay is random
  // Which failures to retry; empty: timeout, noproc, exited and pool_full (deadline_exceeded never).
  std::function<bool(const failure&)> retry_if{};
  std::shared_ptr<retry_counters> counters = std::make_shared<retry_counters>();

  // The delay before retry n (>= 1) for a uniform draw u in [0, 1).
  std::chrono::nanoseconds backoff(unsigned n, double u) const noexcept;
  bool is_retryable(const failure& f) const;
  retry_stats stats() const noexcept;
};

namespace detail {
double jitter_draw() noexcept;  // uniform in [0, 1), thread-safe, no thread_local (processes migrate)
failure stopped_at_deadline(const failure& last);
}  // namespace detail

// See the file comment. `attempt` takes the deadline (or nothing) and returns an outcome<T>, a T, or
// void; a std::exception it throws is a failure (errc::exception, not retried by default).
template <class F>
auto retry(const retry_policy& policy, const deadline& d, F attempt) -> outcome<detail::value_t<detail::deadline_result_t<F>>> {
  using R = detail::deadline_result_t<F>;
  using V = detail::value_t<R>;
  retry_counters& c = *policy.counters;
  c.calls.fetch_add(1, std::memory_order_relaxed);
  for (unsigned n = 1;; ++n) {
    c.attempts.fetch_add(1, std::memory_order_relaxed);
    auto once = [&]() -> R { return detail::invoke_with_deadline(attempt, d); };
    outcome<V> r = detail::from_wire<V>(detail::run_catching<R>(once));
    if (r) {
      if (n > 1) c.recovered.fetch_add(1, std::memory_order_relaxed);
      return r;
    }
    const failure f = r.failure();
    if (!policy.is_retryable(f)) {
      c.not_retryable.fetch_add(1, std::memory_order_relaxed);
      return r;
    }
    if (n >= policy.max_attempts) {
      c.exhausted.fetch_add(1, std::memory_order_relaxed);
      return r;
    }
    const std::chrono::nanoseconds wait = policy.backoff(n, detail::jitter_draw());
    if (d.remaining() <= wait) {  // the next attempt would start at or after the deadline
      c.stopped_by_deadline.fetch_add(1, std::memory_order_relaxed);
      return detail::stopped_at_deadline(f);
    }
    c.retries.fetch_add(1, std::memory_order_relaxed);
    grove::sleep_for(wait);
  }
}

}  // namespace grove::services

GROVE_PUBLIC_END
