// grove/services/deadline.hpp: one point in time that travels with a request.
//
//   auto d = grove::services::deadline::after(1200ms);  // at the edge, once
//   auto a = call(first, query{}, d);                   // every blocking operation takes it...
//   auto b = pool.run(d, [](const deadline& d) { ... });// ...and the time left shrinks as work proceeds
//
// A deadline is absolute (steady_clock), so passing it on never extends it: a 1 s budget spent on
// three calls in a row is 1 s in all, never 3 × 1 s, and a server that receives a call sees the
// caller's deadline in its call_info. Operations that wait on a deadline return
// errc::deadline_exceeded when it passes, never earlier and within a timer tick (~0.3 ms) plus
// scheduling delay after it. A value type: copy it freely, between processes too. Thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include <grove/duration.hpp>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

class deadline {
 public:
  using clock = std::chrono::steady_clock;

  // No deadline: waits for ever.
  constexpr deadline() noexcept = default;
  static constexpr deadline never() noexcept { return deadline(); }
  static constexpr deadline at(clock::time_point t) noexcept { return deadline(t); }
  // `d` from now (a negative or zero d: already passed; one too long to represent, such as
  // milliseconds::max() or grove::forever: never, as grove/duration.hpp reads every duration).
  template <class Rep, class Period>
  static deadline after(std::chrono::duration<Rep, Period> d) noexcept {
    const std::int64_t ns = grove::detail::timeout_ns(d);
    if (ns == grove::detail::never_ns) return never();
    const auto now = clock::now();
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::time_point::max() - now);
    if (ns >= left.count()) return never();
    return deadline(now + std::chrono::duration_cast<clock::duration>(std::chrono::nanoseconds(ns)));
  }

  constexpr bool is_never() const noexcept { return when_ == clock::time_point::max(); }
  bool has_passed() const noexcept { return !is_never() && clock::now() >= when_; }
  // Time left: zero once passed, clock::duration::max() for never.
  clock::duration remaining() const noexcept {
    if (is_never()) return clock::duration::max();
    const auto left = when_ - clock::now();
    return left > clock::duration::zero() ? left : clock::duration::zero();
  }
  constexpr clock::time_point when() const noexcept { return when_; }

  // This deadline or `d` from now, whichever comes first (a callee's own budget never extends the
  // caller's).
  template <class Rep, class Period>
  deadline sooner(std::chrono::duration<Rep, Period> d) const noexcept {
    return earliest(*this, after(d));
  }
  friend constexpr deadline earliest(const deadline& a, const deadline& b) noexcept {
    return deadline(std::min(a.when_, b.when_));
  }
  friend constexpr bool operator==(const deadline&, const deadline&) noexcept = default;

 private:
  constexpr explicit deadline(clock::time_point t) noexcept : when_(t) {}
  clock::time_point when_ = clock::time_point::max();
};

// What is left of it, now: "never", "passed", or "in 1.250 s" / "in 12.5 ms" / "in 830 us".
std::string to_string(const deadline& d);

}  // namespace grove::services

template <>
struct fmt::formatter<grove::services::deadline> : grove::detail::text_formatter {
  template <class Ctx>
  auto format(const grove::services::deadline& d, Ctx& ctx) const -> decltype(ctx.out()) {
    return format_text(grove::services::to_string(d), ctx);
  }
};

GROVE_PUBLIC_END
