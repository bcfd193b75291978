// ring: --size event-based actors (1,000) in a ring pass one token N times (10,000,000 hops); the
// token carries the hops left. Reports hops_per_second (ring built before the clock starts); checks
// that the actor holding the token at the end is the one at position N mod size.
#include "peer.hpp"

using namespace caf;

namespace {

using next_atom = atom_constant<atom("next")>;
using token_atom = atom_constant<atom("token")>;
using done_atom = atom_constant<atom("done")>;
using stop_atom = atom_constant<atom("stop")>;

struct ring_state {
  actor next;
};

behavior ring_node(stateful_actor<ring_state>* self, std::int64_t index, actor report) {
  return {
    [=](next_atom, actor next) { self->state.next = std::move(next); },
    [=](token_atom, std::int64_t hops) {
      if (hops == 0)
        self->send(report, done_atom::value, index);
      else
        self->send(self->state.next, token_atom::value, hops - 1);
    },
    [=](stop_atom) {
      self->state.next = nullptr;
      self->quit();
    },
  };
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("ring", argc, argv, {{"n", 10000000}, {"size", 1000}});
  std::int64_t n = b["n"], size = b["size"];
  auto cfg = b.config();
  actor_system sys{cfg};
  scoped_actor main_actor{sys};

  std::vector<actor> nodes;
  for (std::int64_t i = 0; i < size; ++i)
    nodes.push_back(sys.spawn(ring_node, i, actor{main_actor}));
  for (std::int64_t i = 0; i < size; ++i)
    main_actor->send(nodes[i], next_atom::value, nodes[(i + 1) % size]);

  auto t0 = std::chrono::steady_clock::now();
  main_actor->send(nodes[0], token_atom::value, n);
  std::int64_t last = -1;
  main_actor->receive([&](done_atom, std::int64_t i) { last = i; });
  double seconds = peer::seconds_since(t0);
  for (auto& node : nodes)
    main_actor->send(node, stop_atom::value);

  b.result("hops_per_second", "1/s", n / seconds);
  if (last != n % size)
    b.fail("token ended at " + std::to_string(last) + ", expected " + std::to_string(n % size));
}
