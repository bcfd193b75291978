// timers: N processes, process i sleeping ms_i (the LCG of bench/README.md); each reports its
// lateness (wake - start - ms_i) to a collector. Nearest-rank p50, p99 and max.
#include <algorithm>
#include <cmath>
#include <vector>

#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {
struct late {
  double ms;
};
}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 100'000}, {"seed", 42}});
  const long long n = f["n"];
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"])});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  std::uint64_t x = static_cast<std::uint64_t>(f["seed"]);
  long long sum_ms = 0;
  std::vector<long long> sleeps(static_cast<std::size_t>(n));
  for (auto& ms : sleeps) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    ms = 1 + static_cast<long long>((x >> 33) % 1000);
    sum_ms += ms;
  }
  // The collector is a process, as in the Erlang and Go programs; it hands the lateness list to main.
  const grove::pid collector = grove::spawn([n, main_pid] {
    std::vector<double> got;
    got.reserve(static_cast<std::size_t>(n));
    for (long long i = 0; i < n; ++i) got.push_back(grove::receive([](late l) { return l.ms; }));
    grove::send(main_pid, std::move(got));
  });
  grove::spawn([&sleeps, collector] {
    for (long long ms : sleeps) {
      grove::spawn([ms, collector] {
        const auto start = std::chrono::steady_clock::now();
        grove::sleep_for(std::chrono::milliseconds(ms));
        const double woke_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        grove::send(collector, late{woke_ms - static_cast<double>(ms)});
      });
    }
  });
  std::vector<double> lateness = grove::receive([](std::vector<double> v) { return v; });
  std::sort(lateness.begin(), lateness.end());
  auto rank = [&](double q) { return lateness[static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(n)))) - 1]; };
  std::string extra = fmt::format(",\"sum_ms\":{}", sum_ms);
  bench::result("timers", "late_p50_ms", "ms", rank(0.50), f, extra);
  bench::result("timers", "late_p99_ms", "ms", rank(0.99), f, extra);
  bench::result("timers", "late_max_ms", "ms", lateness.back(), f, extra);
  return lateness.front() >= 0 ? 0 : 1;  // never early
}
