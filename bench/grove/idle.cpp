// idle: N processes parked in a receive with no timer; after `settle` seconds, the CPU time the whole
// program uses over `seconds` of wall time in which nothing happens.
#include <atomic>
#include <thread>

#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {
struct all_parked {};
struct never {};
}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 100'000}, {"seconds", 5}, {"settle", 1}});
  const auto n = static_cast<std::size_t>(f["n"]);
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"])});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  std::atomic<std::size_t> started{0};
  grove::spawn([&started, n, main_pid] {
    for (std::size_t i = 0; i < n; ++i)
      grove::spawn([&started, n, main_pid] {
        if (started.fetch_add(1, std::memory_order_relaxed) + 1 == n) grove::send(main_pid, all_parked{});  // a count
        grove::receive([](never) {});
      });
  });
  grove::receive([](all_parked) {});
  std::this_thread::sleep_for(std::chrono::seconds(f["settle"]));  // the workload: let it go quiet
  const double cpu0 = bench::cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(f["seconds"]));  // the measured idle window
  const double cpu = bench::cpu_seconds() - cpu0;
  bench::result("idle", "cpu_seconds", "s", cpu, f, fmt::format(",\"wall_seconds\":{:.3f}", bench::seconds_since(t0)));
  std::fflush(stdout);
  std::_Exit(0);
}
