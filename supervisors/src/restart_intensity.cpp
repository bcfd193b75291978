// restart_intensity.cpp: the O(1)-amortised restart window (grove/supervisor/restart_intensity.hpp).
#include <algorithm>
#include <grove/supervisor/restart_intensity.hpp>

namespace grove::supervisor {

namespace {
std::int64_t ns_of(restart_intensity::clock::time_point t) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

restart_intensity::restart_intensity(int intensity, std::chrono::nanoseconds period) noexcept
    : intensity_(std::max(intensity, 0)), period_ns_(std::max<std::int64_t>(period.count(), 1)) {}

void restart_intensity::expire(std::int64_t now_ns) noexcept {
  // A stamp counts while stamp > now - period (see the header); written as now - stamp < period so
  // that nothing overflows for stamps near the clock's epoch.
  while (size_ > 0 && now_ns - front() >= period_ns_) {
    ++head_;
    --size_;
  }
}

bool restart_intensity::add(clock::time_point now) {
  const std::int64_t t = ns_of(now);
  expire(t);
  if (size_ == ring_.size()) {  // full: double, keeping the order (amortised O(1))
    std::vector<std::int64_t> bigger(ring_.empty() ? 8 : ring_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & (ring_.size() - 1)];
    ring_ = std::move(bigger);
    head_ = 0;
  }
  ring_[(head_ + size_) & (ring_.size() - 1)] = t;
  ++size_;
  if (size_ > static_cast<std::size_t>(intensity_)) {
    // Over the limit: the supervisor gives up. Keep at most intensity + 1 stamps, so that a caller
    // that goes on anyway (tests) cannot grow the ring without bound.
    while (size_ > static_cast<std::size_t>(intensity_) + 1) {
      ++head_;
      --size_;
    }
    return false;
  }
  return true;
}

std::size_t restart_intensity::count(clock::time_point now) noexcept {
  expire(ns_of(now));
  return size_;
}

}  // namespace grove::supervisor
