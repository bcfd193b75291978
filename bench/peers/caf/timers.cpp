// timers: N event-based actors (100,000), spawned first from main (see spawn.cpp for why), each wait a
// pseudo-random 1..1000 ms (`after(ms)`, a receive timeout); each measures its lateness (actual wake
// - its own start - its wait) and sends it to a collector actor. Reports late_p50_ms, late_p99_ms
// and late_max_ms (nearest-rank percentiles). The waits come from the LCG in bench/README.md:
// x = x*6364136223846793005 + 1442695040888963407 mod 2^64, ms = 1 + (x>>33) % 1000, x starting at
// --seed, one step per actor in spawn order.
#include "peer.hpp"

#include <algorithm>
#include <cmath>

using namespace caf;

namespace {

using late_atom = atom_constant<atom("late")>;
using done_atom = atom_constant<atom("done")>;
using steady = std::chrono::steady_clock;

behavior sleeper(event_based_actor* self, std::int64_t ms, actor collector) {
  auto start = steady::now();
  return {after(std::chrono::milliseconds(ms)) >> [=] {
    auto late = steady::now() - start - std::chrono::milliseconds(ms);
    self->send(collector, late_atom::value,
               std::int64_t(std::chrono::duration_cast<std::chrono::microseconds>(late).count()));
    self->quit();
  }};
}

struct collected {
  std::vector<std::int64_t> late_us;
};

behavior collector(stateful_actor<collected>* self, std::int64_t n, actor report) {
  self->state.late_us.reserve(n);
  return {[=](late_atom, std::int64_t us) {
    self->state.late_us.push_back(us);
    if (std::int64_t(self->state.late_us.size()) == n) {
      self->send(report, done_atom::value, std::move(self->state.late_us));
      self->quit();
    }
  }};
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("timers", argc, argv, {{"n", 100000}, {"seed", 42}});
  std::int64_t n = b["n"];
  auto cfg = b.config();
  actor_system sys{cfg};
  scoped_actor main_actor{sys};

  auto coll = sys.spawn(collector, n, actor{main_actor});
  std::uint64_t x = b["seed"];
  std::int64_t sum_ms = 0; // 50035349 for seed 42 and n = 100,000: reported as a check
  for (std::int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::int64_t ms = 1 + (x >> 33) % 1000;
    sum_ms += ms;
    sys.spawn(sleeper, ms, coll);
  }
  std::vector<std::int64_t> late;
  main_actor->receive([&](done_atom, std::vector<std::int64_t>& v) { late = std::move(v); });
  if (std::int64_t(late.size()) != n)
    b.fail("collector got " + std::to_string(late.size()) + " reports, expected " + std::to_string(n));

  std::sort(late.begin(), late.end());
  auto rank = [&](double q) { // nearest rank: the ceil(q*n)-th smallest, 1-based
    auto r = std::max<std::int64_t>(1, std::int64_t(std::ceil(q * late.size())));
    return late[r - 1] / 1000.0;
  };
  b.result("late_p50_ms", "ms", rank(0.50), {{"sum_ms", sum_ms}});
  b.result("late_p99_ms", "ms", rank(0.99), {{"sum_ms", sum_ms}});
  b.result("late_max_ms", "ms", rank(1.0), {{"sum_ms", sum_ms}});
}
