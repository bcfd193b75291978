// stats.hpp: what the server's and the client's statistics share: a relaxed counter, and the log2
// latency histogram (bucket i counts [2^i, 2^(i+1)) µs) with its quantile.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace grove::http::internal {

// A counter read as a snapshot (relaxed: no other memory is published through it).
struct tally {
  std::atomic<std::uint64_t> v{0};
  void add(std::uint64_t n = 1) noexcept { v.fetch_add(n, std::memory_order_relaxed); }
  void sub(std::uint64_t n = 1) noexcept { v.fetch_sub(n, std::memory_order_relaxed); }
  std::uint64_t get() const noexcept { return v.load(std::memory_order_relaxed); }
};

using latency_histogram = std::array<tally, 32>;

// Counts the time since `since` in its log2 bucket of microseconds (bucket 0 also under 1 µs).
inline void record_latency(latency_histogram& h, std::chrono::steady_clock::time_point since) noexcept {
  auto us = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - since).count());
  unsigned b = 0;
  while (us > 1 && b < 31) {
    us >>= 1;
    ++b;
  }
  h[b].add();
}

inline std::array<std::uint64_t, 32> snapshot(const latency_histogram& h) noexcept {
  std::array<std::uint64_t, 32> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = h[i].get();
  return out;
}

// The q-quantile (0..1) of a snapshot, in ms (its bucket's upper bound); 0 if empty.
inline double latency_quantile_ms(const std::array<std::uint64_t, 32>& buckets, double q) noexcept {
  std::uint64_t total = 0;
  for (auto n : buckets) total += n;
  if (total == 0) return 0;
  const auto want = static_cast<std::uint64_t>(q * static_cast<double>(total - 1)) + 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (seen >= want) return static_cast<double>(std::uint64_t{2} << i) / 1000.0;
  }
  return 0;
}

}  // namespace grove::http::internal
