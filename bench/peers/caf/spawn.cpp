// spawn: N event-based actors, spawned from main with actor_system::spawn, that each wait one hour
// for a message that never comes (`after(seconds(3600))`, a receive timeout: each holds a pending
// timer in CAF's clock). Reports spawn_seconds (until every actor has run its start and counted
// itself), alive (the registry's count of running actors) and bytes_per_process (VmRSS growth / N).
// Then exits at once.
//
// Why from main and not from a spawning actor, as the Erlang and Go peers do: CAF 0.17's
// work-stealing deque steals from the tail with find_predecessor, a walk over the whole queue, so
// when one actor spawns N children onto its own worker, the other worker's steals cost O(N) each:
// 100,000 actors took 1-60 s and 1,000,000 did not finish in 200 s. Spawning from outside the
// workers spreads the new actors over both workers' queues (bench/README.md, "CAF").
#include "peer.hpp"

#include <atomic>
#include <future>

using namespace caf;

namespace {

struct start_count {
  explicit start_count(std::int64_t n) : n(n) {}
  const std::int64_t n;
  std::atomic<std::int64_t> started{0};
  std::promise<void> all_started;
};

behavior sleeper(event_based_actor* self, start_count* count) {
  if (count->started.fetch_add(1, std::memory_order_relaxed) + 1 == count->n)
    count->all_started.set_value();
  return {after(std::chrono::seconds(3600)) >> [=] { self->quit(); }};
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("spawn", argc, argv, {{"n", 1000000}});
  auto cfg = b.config();
  actor_system sys{cfg};
  start_count count(b["n"]);
  auto all_started = count.all_started.get_future();

  auto before = sys.registry().running();
  auto rss0 = peer::rss_bytes();
  auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < count.n; ++i)
    sys.spawn(sleeper, &count);
  all_started.wait();
  double seconds = peer::seconds_since(t0);
  auto rss1 = peer::rss_bytes();
  auto alive = peer::await_running(sys, before + count.n);

  b.result("spawn_seconds", "s", seconds);
  b.result("alive", "processes", alive, {{"baseline", static_cast<std::int64_t>(before)}});
  b.result("bytes_per_process", "B", double(rss1 - rss0) / count.n);
  if (static_cast<std::int64_t>(alive - before) != count.n)
    b.fail(std::to_string(alive) + " actors running, expected " + std::to_string(count.n) + " + "
           + std::to_string(before));
  peer::exit_now(0);
}
