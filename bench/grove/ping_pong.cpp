// ping_pong: two processes, N round trips (ping k, pong k), every k checked. --pinned 1 spawns both
// pinned (spawn_options::pinned), to measure what pinning costs the scheduler.
#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {
struct ping {
  grove::pid from;
  long long k;
};
struct pong {
  long long k;
};
}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 1'000'000}, {"pinned", 0}});
  const long long n = f["n"];
  const grove::spawn_options options{.pinned = f["pinned"] != 0};
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"])});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  grove::pid ponger = grove::spawn(options, [n] {
    for (long long i = 0; i < n; ++i) grove::receive([](ping p) { grove::send(p.from, pong{p.k}); });
  });
  const auto t0 = std::chrono::steady_clock::now();
  grove::spawn(options, [ponger, n, main_pid] {
    const grove::pid self = grove::self();
    long long bad = 0;
    for (long long k = 0; k < n; ++k) {
      grove::send(ponger, ping{self, k});
      grove::receive([&](pong p) { bad += p.k != k; });
    }
    grove::send(main_pid, bad);
  });
  const long long bad = grove::receive([](long long b) { return b; });
  const double seconds = bench::seconds_since(t0);
  bench::result("ping_pong", "round_trips_per_second", "1/s", static_cast<double>(n) / seconds, f);
  return bad == 0 ? 0 : 1;
}
