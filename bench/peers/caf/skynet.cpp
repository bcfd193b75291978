// skynet: a 10-ary tree of event-based actors with N leaves (1,000,000 by default; 1,111,111 actors
// in all); each leaf sends its number to its parent and terminates, each inner node spawns its
// children, sums their messages and sends the sum up. Checks the root's sum against N*(N-1)/2.
// Reports seconds.
#include "peer.hpp"

using namespace caf;

namespace {

using sum_atom = atom_constant<atom("sum")>;

struct node_state {
  std::int64_t sum = 0;
  std::int64_t pending = 0;
};

behavior skynet(stateful_actor<node_state>* self, actor parent, std::int64_t num, std::int64_t size,
                std::int64_t div) {
  if (size == 1) {
    self->send(parent, sum_atom::value, num);
    return {};
  }
  std::int64_t sub = size / div;
  for (std::int64_t i = 0; i < div; ++i)
    self->spawn(skynet, actor_cast<actor>(self), num + i * sub, sub, div);
  self->state.pending = div;
  return {[=](sum_atom, std::int64_t x) {
    self->state.sum += x;
    if (--self->state.pending == 0) {
      self->send(parent, sum_atom::value, self->state.sum);
      self->quit();
    }
  }};
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("skynet", argc, argv, {{"n", 1000000}, {"div", 10}});
  std::int64_t n = b["n"], div = b["div"];
  for (std::int64_t m = n; m != 1; m /= div)
    if (m % div != 0)
      b.fail("--n must be a power of --div");
  auto cfg = b.config();
  actor_system sys{cfg};
  scoped_actor main_actor{sys};

  auto t0 = std::chrono::steady_clock::now();
  main_actor->spawn(skynet, actor{main_actor}, std::int64_t{0}, n, div);
  std::int64_t sum = -1;
  main_actor->receive([&](sum_atom, std::int64_t s) { sum = s; });
  double seconds = peer::seconds_since(t0);

  b.result("seconds", "s", seconds, {{"sum", sum}});
  if (sum != n * (n - 1) / 2)
    b.fail("sum " + std::to_string(sum) + ", expected " + std::to_string(n * (n - 1) / 2));
}
