// aggregator: the classic aggregator experiment, inside Grove — why unbounded fan-out and shared
// pools fail, and how separate bounded pools (bulkheads) with one deadline per request fix it.
//
//   aggregator                         a smoke run: three 1 s phases at a quarter of the latencies
//   aggregator SECONDS [CLIENTS] [WORKERS]   the demo: each phase SECONDS long (tools/demo: 30)
//
// Three backends are servers (grove/services/server.hpp) that serve a few requests at once and queue
// the rest: `first` and `third` answer in 200 ms, 6 at a time; `second` answers in 200 ms when
// healthy and 1.3 s when degraded, 2 at a time. Beyond 8 requests serving or queued, a backend
// answers 503 (after a tenth of its latency). A backend drops a queued request whose deadline (which
// travels with the call) has passed, but one it has started it finishes: work abandoned by a caller
// keeps it busy. An aggregator server fans each request out to all three with gather (task.hpp)
// under one deadline: 1.2 s. Ten clients call it in a loop. Per phase the demo prints requests/s,
// latency percentiles, full vs partial responses, and misses per backend (late, rejected by a pool,
// failed).
//   A  unbounded fan-out, backends healthy: every request hits every backend at once; `second`
//      (and, less, the others) are pushed past their capacity and fail (503): many partial answers.
//   B  one shared pool of 5, `second` degraded: `second`'s calls hold the pool's slots until the
//      deadline, so the fast backends' calls wait in the queue and miss the deadline too.
//   C  a fast pool of 6 for first/third and a slow pool of 3 for second, `second` degraded: only
//      `second` misses; first and third stay on time (the bulkhead).
// Nothing retries: the retries line stays at 0.
//
// Expected output (shape; figures vary with the machine), per phase, e.g. for C:
//   phase C: fast pool of 6 (first, third) + slow pool of 3 (second), second degraded
//     10 clients for 31.2 s
//     requests      260   8.3/s
//     latency    p50 1203 ms   p90 1205 ms   p99 1212 ms
//     responses  full 0 (0%)   partial 260 (100%)
//     misses     (late = past the deadline, rejected = pool full, failed = 503 or a dead process)
//       first        0 of    260 (  0%)   late     0   rejected     0   failed     0
//       second     260 of    260 (100%)   late   212   rejected     0   failed    48
//       third        0 of    260 (  0%)   late     0   rejected     0   failed     0
//   ...and a last line that checks the shape: "shape: ok (...)".
#include <cstdio>
#include <cstdlib>
#include <string>

#include "aggregator.hpp"

int main(int argc, char** argv) {
  namespace demo = aggregator_demo;
  const bool smoke = argc < 2;
  const double seconds = smoke ? 1.0 : std::atof(argv[1]);
  const int clients = argc > 2 ? std::atoi(argv[2]) : 10;
  const unsigned workers = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 0;
  const double scale = smoke ? 0.25 : 1.0;
  if (seconds <= 0 || clients <= 0) {
    std::fprintf(stderr, "usage: aggregator [seconds_per_phase [clients [workers]]]\n");
    return 2;
  }
  grove::runtime rt({.workers = workers});
  grove::scoped_process me;
  fmt::print("aggregator: 3 backends, deadline {} ms, {} clients, {:.0f} s per phase{}\n\n",
             demo::scaled(std::chrono::milliseconds(1200), scale).count(), clients, seconds,
             smoke ? " (smoke run: latencies x0.25; give a phase length for the real demo)" : "");
  std::vector<demo::phase_result> results;
  for (const auto& pc : demo::phases(std::chrono::milliseconds(static_cast<long>(seconds * 1000)), clients, scale)) {
    results.push_back(demo::run_phase(pc));
    fmt::print("{}\n", demo::format(results.back()));
    std::fflush(stdout);
  }
  const auto& a = results[0];
  const auto& b = results[1];
  const auto& c = results[2];
  const double a_failed = static_cast<double>(a.calls[0][3] + a.calls[1][3] + a.calls[2][3]);
  const bool a_ok = a_failed > 0;
  const bool b_ok = b.miss_share(0) + b.miss_share(2) > 0.2;
  const bool c_ok = c.miss_share(0) < 0.05 && c.miss_share(2) < 0.05 && c.miss_share(1) > 0.5;
  fmt::print("shape: {} (A: backends failed {} calls; B: first/third missed {:.0f}%/{:.0f}%; C: first/third missed "
             "{:.0f}%/{:.0f}%, second {:.0f}%)\n",
             a_ok && b_ok && c_ok ? "ok" : "unexpected", a_failed, 100 * b.miss_share(0), 100 * b.miss_share(2),
             100 * c.miss_share(0), 100 * c.miss_share(2), 100 * c.miss_share(1));
  return 0;
}
