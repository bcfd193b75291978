// idle: N event-based actors (100,000), spawned from main (see spawn.cpp for why), parked waiting for a message
// (no timer); once all have run, wait --settle seconds (1), then report the CPU time (user + system,
// getrusage) the process used over --seconds (5) of wall time in which nothing happens: cpu_seconds.
// CAF's workers keep polling for a while before they sleep; that is part of what is measured.
// Then exits at once.
#include "peer.hpp"

#include <atomic>
#include <future>

using namespace caf;

namespace {

using stop_atom = atom_constant<atom("stop")>;

struct start_count {
  explicit start_count(std::int64_t n) : n(n) {}
  const std::int64_t n;
  std::atomic<std::int64_t> started{0};
  std::promise<void> all_started;
};

behavior parked(event_based_actor* self, start_count* count) {
  if (count->started.fetch_add(1, std::memory_order_relaxed) + 1 == count->n)
    count->all_started.set_value();
  return {[=](stop_atom) { self->quit(); }};
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("idle", argc, argv, {{"n", 100000}, {"seconds", 5}, {"settle", 1}});
  auto cfg = b.config();
  actor_system sys{cfg};
  start_count count(b["n"]);
  auto all_started = count.all_started.get_future();
  // An actor that nobody references is terminated, so the handles are kept here.
  std::vector<actor> mailboxes;
  mailboxes.reserve(count.n);

  auto before = sys.registry().running();
  for (std::int64_t i = 0; i < count.n; ++i)
    mailboxes.push_back(sys.spawn(parked, &count));
  all_started.wait();
  auto alive = peer::await_running(sys, before + count.n);
  if (std::int64_t(alive - before) != count.n)
    b.fail(std::to_string(alive - before) + " actors running, expected " + std::to_string(count.n));

  std::this_thread::sleep_for(std::chrono::seconds(b["settle"]));
  auto cpu0 = peer::cpu_seconds();
  auto w0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(b["seconds"]));
  double cpu = std::round((peer::cpu_seconds() - cpu0) * 1e6) / 1e6; // getrusage has µs resolution
  double wall = peer::seconds_since(w0);
  b.result("cpu_seconds", "s", cpu, {{"wall_seconds", wall}});
  peer::exit_now(0);
}
