// grove/supervisor/restart_intensity.hpp: OTP's restart intensity ("at most `intensity` restarts in
// any `period`") as a small value type, O(1) amortised per restart.
//
// OTP's supervisor keeps every restart of the last period in a list and walks it on each restart
// (lists:takewhile), which is O(restarts in the window): at 100,000 back-to-back restarts in a 1 s
// window that walk is what the supervisor spends its time on. Here the restarts in the window sit in
// a ring buffer in time order: a restart appends its time and drops the expired ones from the front.
// Each time stamp is appended once and dropped once, so a restart costs O(1) amortised, and the
// buffer never holds more than intensity + 1 stamps (a supervisor gives up at intensity + 1).
//
// The window: a restart at time t counts at `now` while t > now - period (the last `period`,
// measured in nanoseconds of the steady clock). OTP measures in whole seconds (a restart counts
// while t >= now - period, both in seconds), so OTP may count a restart up to one second longer.
//
// Not thread-safe: one supervisor owns it. Pure (takes the time as an argument), so it can be tested
// without a clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::supervisor {

class restart_intensity {
 public:
  using clock = std::chrono::steady_clock;

  // At most `intensity` (>= 0) restarts in any `period` (> 0). Values out of range are clamped
  // (intensity to 0, period to 1 ns); supervisor flags are validated before they get here.
  restart_intensity(int intensity, std::chrono::nanoseconds period) noexcept;

  // Records a restart at `now` (not earlier than the previous call's). Returns false when this one
  // makes more than `intensity` restarts within the last `period`: the supervisor must give up.
  bool add(clock::time_point now);
  // Restarts within the window that ends at `now` (drops the expired ones).
  std::size_t count(clock::time_point now) noexcept;

  int intensity() const noexcept { return intensity_; }
  std::chrono::nanoseconds period() const noexcept { return std::chrono::nanoseconds(period_ns_); }

 private:
  void expire(std::int64_t now_ns) noexcept;
  std::int64_t front() const noexcept { return ring_[head_ & (ring_.size() - 1)]; }

  int intensity_;
  std::int64_t period_ns_;
  std::vector<std::int64_t> ring_;  // power-of-two capacity; restart times in ns, oldest at head_
  std::size_t head_ = 0;            // index of the oldest (mod capacity)
  std::size_t size_ = 0;
};

}  // namespace grove::supervisor

GROVE_PUBLIC_END
