// retry.cpp: the pure parts of retry policies (grove/services/retry.hpp): backoff, the default
// retryable set, the jitter draw.
//
// The draw uses no thread_local generator: a process may move to another worker thread whenever it
// blocks, and code must not keep a thread_local's address across that (runtime/DESIGN.md §2). One atomic
// counter, mixed by splitmix64, gives independent-enough uniform draws from any thread.
#include <grove/services/retry.hpp>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace grove::services {

std::chrono::nanoseconds retry_policy::backoff(unsigned n, double u) const noexcept {
  const double initial = static_cast<double>(std::chrono::nanoseconds(initial_backoff).count());
  const double cap = static_cast<double>(std::chrono::nanoseconds(max_backoff).count());
  const double grown = initial * std::pow(std::max(1.0, multiplier), static_cast<double>(n > 0 ? n - 1 : 0));
  const double capped = std::min(cap, grown);
  const double j = std::clamp(jitter, 0.0, 1.0);
  const double shortened = capped * (1.0 - j * std::clamp(u, 0.0, 1.0));
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::max(0.0, shortened)));
}

bool retry_policy::is_retryable(const failure& f) const {
  if (f.code == errc::deadline_exceeded) return false;  // the same deadline for every attempt
  if (retry_if) return retry_if(f);
  return f.code == grove::errc::timeout || f.code == grove::errc::noproc || f.code == errc::exited || f.code == errc::pool_full;
}

retry_stats retry_policy::stats() const noexcept {
  const retry_counters& c = *counters;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return retry_stats{get(c.calls),     get(c.attempts),  get(c.retries),      get(c.recovered),
                     get(c.stopped_by_deadline), get(c.exhausted), get(c.not_retryable)};
}

namespace detail {

double jitter_draw() noexcept {
  static std::atomic<std::uint64_t> state{0x2545F4914F6CDD1Dull};
  std::uint64_t z = state.fetch_add(0x9E3779B97F4A7C15ull, std::memory_order_relaxed);  // a tally: relaxed
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

failure stopped_at_deadline(const failure& last) {
  return failure(make_error_code(errc::deadline_exceeded),
                 exit_reason(fmt::format("retry stopped before the deadline; last error: {}", last.to_string())));
}

}  // namespace detail
}  // namespace grove::services
