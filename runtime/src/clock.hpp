// clock.hpp: the runtime's clock and how a timeout becomes a deadline.
//
// Deadlines are steady-clock nanoseconds in a std::uint64_t. A timeout arrives as nanoseconds
// already saturated by grove/duration.hpp (detail::timeout_ns: 0 for now, never_ns for never);
// deadline_after_ns adds it to now and saturates again, so no conversion anywhere can wrap around
// and turn "in ~292 years" into "already passed".
#pragma once

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
