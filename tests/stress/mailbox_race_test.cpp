// Stress: races on one mailbox. Signals that need no wake-up (link, unlink, monitor, demonitor) are
// pushed into the receiver's inbox without waking it; a message pushed behind one of them while it
// is half written (exchanged in, not yet linked: mailbox.hpp) wakes a receiver that cannot see it
// yet, so the half-written signal's sender must wake the receiver once it has linked it. The test
// has such signals arriving at a process while it is sent pings one at a time: a ping stranded
// behind a signal shows as a missing answer. Sized by GROVE_STRESS_SCALE.
#include "support/events.hpp"
#include "support/fixture.hpp"

#include <vector>

using grove_test::patience;

namespace {

struct ping {
  grove::pid from;
  int n;
};
struct go {};
struct stop {};

}  // namespace

TEST_CASE("a message is never stranded behind a link or monitor signal that is still being written") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid echo = grove::spawn([] {
    for (bool more = true; more;) {
      more = grove::receive([](ping p) {
        grove::send(p.from, p.n);
        return true;
      }, [](stop) { return false; });
    }
  });
  // Churners: on each go, a few rounds of monitor, demonitor, link and unlink of the echo, which
  // arrive in its inbox while the ping of the same round does. (Bounded per round: an unbounded
  // flood from three workers outruns one receiver and only measures the backlog.)
  std::vector<grove::pid> churners;
  std::vector<grove::monitor_ref> watches;
  for (int i = 0; i < 3; ++i) {
    auto s = grove::spawn_monitor([echo] {
      for (bool more = true; more;) {
        more = grove::receive([echo](go) {
          for (int k = 0; k < 4; ++k) {
            grove::demonitor(grove::monitor(echo));
            grove::link(echo);
            grove::unlink(echo);
          }
          return true;
        }, [](stop) { return false; });
      }
    });
    churners.push_back(s.pid);
    watches.push_back(s.monitor);
  }
#if defined(__SANITIZE_THREAD__)
  const int rounds = 5'000 * static_cast<int>(grove_test::stress_scale());  // ~4x slower per round there
#else
  const int rounds = 20'000 * static_cast<int>(grove_test::stress_scale());
#endif
  int answered = 0;
  for (int i = 0; i < rounds; ++i) {
    for (grove::pid c : churners) grove::send(c, go{});
    grove::send(echo, ping{me.pid(), i});
    const int got = grove::receive([](int n) { return n; }, grove::after(patience, [] { return -1; }));
    if (got != i) break;
    ++answered;
  }
  CHECK(answered == rounds);
  for (grove::pid c : churners) grove::send(c, stop{});
  for (auto& w : watches) CHECK(grove_test::wait_down(w).is_normal());
  grove::send(echo, stop{});
}
