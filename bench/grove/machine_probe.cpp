// bench/grove/machine_probe.cpp: two costs of the machine itself that bound Grove's figures
// (bench/results-notes.md says where they are the limit).
//
//   build/release/bench/grove/machine_probe [megabytes=570]
//
// 1. First touch: write one byte per 4 KiB page of a fresh anonymous mapping of that size (570 MB:
//    what a million sleeping Grove processes occupy), 3 rounds. On the reference VM fresh pages
//    cost 2.6-2.8 us each, so the spawn benchmark at 1M cannot take less than ~0.4 s.
// 2. A C++ throw caught three frames up, 200,000 times: what grove::exit and every crash pay to the
//    C++ unwinder (2.9-4.2 us per throw on the reference VM).
// 3. An uncontended atomic read-modify-write on one thread (a fetch_or, and a load plus a
//    compare-exchange), 3 rounds of 100 M each: the price of each of the ~11 RMWs a message hop
//    makes (bench/RESULTS.md, "The message path"). 8.3 ns and 13.3-14.4 ns on the reference VM.
// 4. sched_yield with nothing else waiting for the CPU, 1,000,000 calls: what an idle worker pays
//    each time it yields while it spins (runtime/src/parking.cpp, spin_yield_ns). 355-367 ns on the
//    reference VM.
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

struct thrown {
  long value;
};
__attribute__((noinline)) void level3(long i) {
  if (i >= 0) throw thrown{i};
}
__attribute__((noinline)) void level2(long i) { level3(i); }
__attribute__((noinline)) void level1(long i) { level2(i); }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mb = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 570;
  const std::size_t bytes = mb << 20, pages = bytes / 4096;
  for (int round = 0; round < 3; ++round) {
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return 1;
    auto* p = static_cast<volatile char*>(m);
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    const double s = seconds_since(t0);
    std::printf("first touch of %zu MB: %.3f s, %.2f us per 4 KiB page\n", mb, s, s / static_cast<double>(pages) * 1e6);
    ::munmap(m, bytes);
  }
  const long throws = 200'000;
  long sum = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < throws; ++i) {
    try {
      level1(i);
    } catch (const thrown& e) {
      sum += e.value;
    }
  }
  const double s = seconds_since(t0);
  std::printf("C++ throw caught 3 frames up: %.2f us per throw (checksum %ld)\n", s / throws * 1e6, sum);
  alignas(64) static std::atomic<std::uint32_t> word{0};
  const long rmws = 100'000'000;
  for (int round = 0; round < 3; ++round) {
    const auto t1 = std::chrono::steady_clock::now();
    for (long i = 0; i < rmws; ++i) word.fetch_or(1u << (i & 7), std::memory_order_acq_rel);
    const double or_s = seconds_since(t1);
    const auto t2 = std::chrono::steady_clock::now();
    for (long i = 0; i < rmws; ++i) {
      std::uint32_t seen = word.load(std::memory_order_relaxed);
      word.compare_exchange_strong(seen, seen + 1, std::memory_order_acq_rel, std::memory_order_relaxed);
    }
    const double cas_s = seconds_since(t2);
    std::printf("atomic RMW, one thread: fetch_or %.2f ns, load + compare_exchange %.2f ns\n", or_s / rmws * 1e9, cas_s / rmws * 1e9);
  }
  const long yields = 1'000'000;
  const auto t3 = std::chrono::steady_clock::now();
  for (long i = 0; i < yields; ++i) ::sched_yield();
  std::printf("sched_yield, nothing else runnable: %.0f ns per call\n", seconds_since(t3) / yields * 1e9);
  return sum == throws * (throws - 1) / 2 ? 0 : 1;
}
