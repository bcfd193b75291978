// clock.hpp: the runtime's clock and how a timeout becomes a deadline.
//
// Deadlines are steady-clock nanoseconds in a std::uint64_t. A timeout arrives as nanoseconds
// already saturated by grove/duration.hpp (detail::timeout_ns: 0 for now, never_ns for never);
// deadline_after_ns adds it to now and saturates again, so no conversion anywhere can wrap around
// and turn "in ~292 years" into "already passed".
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

#include <grove/duration.hpp>

namespace grove::internal {

// A deadline that never comes (2^63 - 1 ns of steady-clock time, ~292 years after boot). The timer
// wheel keeps such a node without ever firing it (timer_wheel.hpp, invariant 3).
inline constexpr std::uint64_t never_deadline_ns = static_cast<std::uint64_t>(detail::never_ns);

inline std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// The same clock as now_ns() (CLOCK_MONOTONIC), as of the kernel's last tick: behind it by at most
// coarse_clock_lag_ns(), for a fraction of the cost: 5.8-7.7 ns a read against 25.7-31.3 ns for
// now_ns() on this project's VM (`build/release/bench/grove/clock_probe`, two days). For "can a
// deadline be due yet?" asked on every scheduling round.
inline std::uint64_t coarse_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}
// How far coarse_now_ns() may be behind now_ns(): twice its resolution (one kernel tick, 4 ms at
// HZ=250), for a tick that comes late.
inline std::uint64_t coarse_clock_lag_ns() noexcept {
  static const std::uint64_t lag = [] {
    timespec res{};
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return std::uint64_t{20'000'000};  // HZ=100, and more
    return 2 * (static_cast<std::uint64_t>(res.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(res.tv_nsec));
  }();
  return lag;
}

// now + timeout_ns, or never_deadline_ns for never_ns and for anything that would pass it.
inline std::uint64_t deadline_after_ns(std::int64_t timeout_ns) noexcept {
  if (timeout_ns >= detail::never_ns) return never_deadline_ns;
  const std::uint64_t d = now_ns() + static_cast<std::uint64_t>(timeout_ns < 0 ? 0 : timeout_ns);  // both < 2^63
  return d >= never_deadline_ns ? never_deadline_ns : d;
}

// A deadline as a steady_clock time point (never_deadline_ns is time_point::max()).
inline std::chrono::steady_clock::time_point steady_time(std::uint64_t deadline_ns) noexcept {
  return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(static_cast<std::int64_t>(deadline_ns)));
}

}  // namespace grove::internal
