// bench/grove/clock_probe.cpp: what a timestamp costs the tracer (runtime/src/tracer.cpp,
// "Timestamps"): rdtsc against CLOCK_MONOTONIC (steady_clock, through the vDSO) and
// CLOCK_MONOTONIC_COARSE, in ns a read, median [min, max] of 5 rounds of 10^7 reads; and the
// kernel's clocksource, which decides whether the tracer may use the TSC.
//
//   build/release/bench/grove/clock_probe     (or: g++ -std=c++20 -O2 bench/grove/clock_probe.cpp)
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr int reads = 10'000'000;
volatile std::uint64_t sink;

template <class F>
void measure(const char* name, F read) {
  std::vector<double> ns;
  for (int round = 0; round < 5; ++round) {
    std::uint64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reads; ++i) sum += read();
    const auto t1 = std::chrono::steady_clock::now();
    sink = sum;
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / reads);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("%-24s %5.1f ns a read [%.1f, %.1f]\n", name, ns[2], ns[0], ns[4]);
}

}  // namespace

int main() {
  std::string source = "?";
  std::ifstream("/sys/devices/system/clocksource/clocksource0/current_clocksource") >> source;
  std::printf("kernel clocksource: %s\n", source.c_str());
#if defined(__x86_64__)
  measure("rdtsc", [] { return static_cast<std::uint64_t>(__rdtsc()); });
#endif
  measure("steady_clock::now", [] {
    return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  });
  measure("CLOCK_MONOTONIC_COARSE", [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_nsec);
  });
}
