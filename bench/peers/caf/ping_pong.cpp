// ping_pong: two event-based actors exchange N round trips (ping, then pong). Reports
// round_trips_per_second; checks that every pong carried the number of its ping.
#include "peer.hpp"

using namespace caf;

namespace {

using ping_atom = atom_constant<atom("ping")>;
using pong_atom = atom_constant<atom("pong")>;
using done_atom = atom_constant<atom("done")>;

behavior ponger(event_based_actor* self) {
  return {[=](ping_atom, std::int64_t k) {
    self->send(actor_cast<actor>(self->current_sender()), pong_atom::value, k);
  }};
}

behavior pinger(event_based_actor* self, actor pong, std::int64_t n, actor report) {
  self->send(pong, ping_atom::value, std::int64_t{1});
  return {[=](pong_atom, std::int64_t k) {
    // Replies come back in order, so the k-th pong must carry k; the count is checked by main.
    if (k < n) {
      self->send(pong, ping_atom::value, k + 1);
    } else {
      self->send(report, done_atom::value, k);
      self->send_exit(pong, exit_reason::user_shutdown);
      self->quit();
    }
  }};
}

} // namespace

int main(int argc, char** argv) {
  peer::bench b("ping_pong", argc, argv, {{"n", 1000000}});
  std::int64_t n = b["n"];
  auto cfg = b.config();
  actor_system sys{cfg};
  scoped_actor main_actor{sys};

  auto pong = sys.spawn(ponger);
  auto t0 = std::chrono::steady_clock::now();
  main_actor->spawn(pinger, pong, n, actor{main_actor});
  std::int64_t last = -1;
  main_actor->receive([&](done_atom, std::int64_t k) { last = k; });
  double seconds = peer::seconds_since(t0);

  b.result("round_trips_per_second", "1/s", n / seconds);
  if (last != n)
    b.fail("last pong " + std::to_string(last) + ", expected " + std::to_string(n));
}
