// spawn: one parent process spawns N processes; each counts itself when it first runs, then sleeps
// one hour (a pending timer each). The clock stops when the N-th has counted itself. Reports
// spawn_seconds, alive (Grove's own live count) and bytes_per_process. bench/README.md has the rules.
#include <atomic>

#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {
struct all_running {};
struct go {};
}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 1'000'000}});
  const auto n = static_cast<std::size_t>(f["n"]);
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"]),
                     .process_limit = std::max<std::size_t>(n + n / 4 + 100'000, std::size_t{1} << 20)});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  std::atomic<std::size_t> running{0};
  // The baseline: this thread's scoped process and the spawning parent, which stays alive.
  const std::size_t baseline = grove::system_info().process_count + 1;
  const long rss_before = bench::vm_rss_kib();
  const auto t0 = std::chrono::steady_clock::now();
  // The spawning parent: a process, as in the Erlang and Go programs.
  grove::spawn([&running, n, main_pid] {
    for (std::size_t i = 0; i < n; ++i) {
      grove::spawn([&running, n, main_pid] {
        // relaxed: a count; the process that completes it tells main
        if (running.fetch_add(1, std::memory_order_relaxed) + 1 == n) grove::send(main_pid, all_running{});
        grove::sleep_for(std::chrono::hours(1));
      });
    }
    grove::receive([](go) {});
  });
  grove::receive([](all_running) {});
  const double seconds = bench::seconds_since(t0);
  const long rss_after = bench::vm_rss_kib();
  const std::size_t alive = grove::system_info().process_count;
  const double bytes = static_cast<double>(rss_after - rss_before) * 1024.0 / static_cast<double>(n);
  bench::result("spawn", "spawn_seconds", "s", seconds, f);
  bench::result("spawn", "alive", "processes", static_cast<double>(alive), f, fmt::format(",\"baseline\":{}", baseline));
  bench::result("spawn", "bytes_per_process", "B", bytes, f);
  std::fflush(stdout);
  std::_Exit(alive == n + baseline ? 0 : 1);  // without waiting out the hour
}
