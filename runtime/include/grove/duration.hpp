// grove/duration.hpp: how Grove reads a duration, in one place.
//
// Every call that takes a duration or a deadline (receive's after, sleep_for, sleep_until,
// send_after, process_info, runtime::stop, wait_until_idle, and the supervisors' and services'
// timeouts) converts it with timeout_ns() below, which saturates instead of overflowing:
//   - zero, negative or NaN: now (a receive polls, a sleep yields, a timer fires at once);
//   - too long to represent as nanoseconds (2^63 ns, ~292 years: milliseconds::max(), hours::max(),
//     seconds::max(), an infinite floating-point duration, grove::forever): never;
//   - anything else: that long, to the nanosecond. A deadline that far ahead is kept as it is; only
//     one past ~292 years of steady-clock time means never.
// APIs that take std::chrono::milliseconds accept milliseconds::max() for "never"; templates
// (after, sleep_for, send_after) accept any duration. Converting a wider duration to milliseconds
// at the call site (hours::max() to a milliseconds parameter) overflows in the caller's own code:
// pass grove::forever or milliseconds::max() there.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <ratio>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// A wait that never ends.
inline constexpr std::chrono::nanoseconds forever = std::chrono::nanoseconds::max();

namespace detail {

// timeout_ns's "never".
inline constexpr std::int64_t never_ns = std::numeric_limits<std::int64_t>::max();

// d in nanoseconds, saturated as the file comment says: 0 for now, never_ns for never.
template <class Rep, class Period>
constexpr std::int64_t timeout_ns(std::chrono::duration<Rep, Period> d) noexcept {
  using to_ns = std::ratio_divide<Period, std::nano>;  // d.count() * num / den nanoseconds
  constexpr long double never = static_cast<long double>(never_ns);
  if constexpr (std::chrono::treat_as_floating_point_v<Rep>) {
    const long double ns = static_cast<long double>(d.count()) * to_ns::num / to_ns::den;
    if (!(ns > 0)) return 0;  // zero, negative, NaN
    return ns >= never ? never_ns : static_cast<std::int64_t>(ns);
  } else {
    const auto c = d.count();
    if (c <= 0) return 0;
    if constexpr (to_ns::den == 1) {  // seconds, milliseconds, ...: c * num, unless that overflows
      if (static_cast<std::uintmax_t>(c) >= static_cast<std::uintmax_t>(never_ns) / to_ns::num) return never_ns;
      return static_cast<std::int64_t>(c) * static_cast<std::int64_t>(to_ns::num);
    } else if constexpr (to_ns::num == 1) {  // finer than nanoseconds: c / den cannot grow
      const auto ns = static_cast<std::uintmax_t>(c) / static_cast<std::uintmax_t>(to_ns::den);
      return ns >= static_cast<std::uintmax_t>(never_ns) ? never_ns : static_cast<std::int64_t>(ns);
    } else {  // an odd ratio: long double has a 64-bit mantissa on x86-64, exact enough to compare
      const long double ns = static_cast<long double>(c) * to_ns::num / to_ns::den;
      return ns >= never ? never_ns : static_cast<std::int64_t>(ns);
    }
  }
}

}  // namespace detail

// Whether Grove reads `d` as never (see the file comment).
template <class Rep, class Period>
constexpr bool is_forever(std::chrono::duration<Rep, Period> d) noexcept {
  return detail::timeout_ns(d) == detail::never_ns;
}

}  // namespace grove

GROVE_PUBLIC_END
