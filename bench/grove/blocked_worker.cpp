// blocked_worker: every worker but one is blocked in a syscall (a 300 ms nanosleep, again and again)
// while another process does N receives with a 10 ms timeout, armed on whichever worker it runs on;
// each measures how late its timeout came (wake - start - 10 ms). The blocked workers' own timers must be
// taken over by the free one (runtime/src/parking.cpp, "Timers no worker strands"). Nearest-rank
// p50, p99 and max lateness. With --threads 1 there is no free worker: the figure says what a
// blocked worker costs when nobody can take over.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {
struct stop_blocking {};
}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 200}, {"block_ms", 300}, {"timeout_ms", 10}});
  const long long n = f["n"];
  const unsigned workers = static_cast<unsigned>(f["threads"]);
  grove::runtime rt({.workers = workers});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  std::atomic<bool> stop{false};
  // workers - 1 blockers, each holding a worker in nanosleep (a real syscall, no runtime call).
  std::atomic<unsigned> blocking{0};
  for (unsigned i = 0; i + 1 < workers; ++i) {
    grove::spawn([&stop, &blocking, ms = f["block_ms"]] {
      blocking.fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
        timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000};
        ::nanosleep(&ts, nullptr);
      }
    });
  }
  while (blocking.load() + 1 < workers) std::this_thread::yield();
  const auto timeout = std::chrono::milliseconds(f["timeout_ms"]);
  grove::spawn([n, timeout, main_pid] {
    std::vector<double> late;
    late.reserve(static_cast<std::size_t>(n));
    for (long long i = 0; i < n; ++i) {
      const auto start = std::chrono::steady_clock::now();
      grove::receive([](stop_blocking) {}, grove::after(timeout, [] {}));
      late.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start - timeout).count());
    }
    grove::send(main_pid, std::move(late));
  });
  std::vector<double> late = grove::receive([](std::vector<double> v) { return v; });
  stop = true;
  std::sort(late.begin(), late.end());
  auto rank = [&](double q) { return late[static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(n)))) - 1]; };
  bench::result("blocked_worker", "late_p50_ms", "ms", rank(0.50), f);
  bench::result("blocked_worker", "late_p99_ms", "ms", rank(0.99), f);
  bench::result("blocked_worker", "late_max_ms", "ms", late.back(), f);
  return late.front() >= 0 ? 0 : 1;  // never early
}
