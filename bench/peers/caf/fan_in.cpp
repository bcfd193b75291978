// fan_in: --senders event-based actors (16) each send N messages (250,000) to one receiving actor,
// which counts and sums them. Each sender sends all of its messages from its start handler and
// terminates. Reports messages_per_second over senders * N messages, from the first spawn to the
// last message received; checks the count and the sum.
#include "peer.hpp"

using namespace caf;

namespace {

using done_atom = atom_constant<atom("done")>;

struct tally {
  std::int64_t count = 0;
  std::int64_t sum = 0;
};

behavior receiver(stateful_actor<tally>* self, std::int64_t total, actor report) {
  return {[=](std::int64_t k) {
    auto& t = self->state;
    t.sum += k;
    if (++t.count == total) {
      self->send(report, done_atom::value, t.count, t.sum);
      self->quit();
    }
  }};
}

void sender(event_based_actor* self, actor to, std::int64_t n) {
  for (std::int64_t k = 1; k <= n; ++k)
    self->send(to, k);
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("fan_in", argc, argv, {{"n", 250000}, {"senders", 16}});
  std::int64_t n = b["n"], senders = b["senders"], total = senders * n;
  auto cfg = b.config();
  actor_system sys{cfg};
  scoped_actor main_actor{sys};

  auto t0 = std::chrono::steady_clock::now();
  auto to = sys.spawn(receiver, total, actor{main_actor});
  for (std::int64_t s = 0; s < senders; ++s)
    sys.spawn(sender, to, n);
  tally got;
  main_actor->receive([&](done_atom, std::int64_t count, std::int64_t sum) { got = {count, sum}; });
  double seconds = peer::seconds_since(t0);

  b.result("messages_per_second", "1/s", total / seconds);
  std::int64_t want = senders * n * (n + 1) / 2;
  if (got.count != total || got.sum != want)
    b.fail("got " + std::to_string(got.count) + " messages summing to " + std::to_string(got.sum)
           + ", expected " + std::to_string(total) + " and " + std::to_string(want));
}
