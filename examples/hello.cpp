// hello: two processes play ping-pong. The pinger sends a ping carrying its own pid, the ponger
// answers each with a pong, and after three rounds the pinger tells the main thread, which has a
// scoped_process so that a process can reply to it.
//
// Expected output:
//   ping 1
//   pong 1
//   ping 2
//   pong 2
//   ping 3
//   pong 3
//   done: 3 rounds of ping-pong between <0.2.1> and <0.1.1>
// (the pids may differ)
#include <fmt/format.h>

#include <grove/grove.hpp>

namespace {

struct ping {
  grove::pid from;
  int n;
};
struct pong {
  int n;
};
struct finished {
  int rounds;
  grove::pid pinger, ponger;
};

constexpr int rounds = 3;

}  // namespace

int main() {
  grove::runtime rt;
  grove::scoped_process me;
  const grove::pid main = me.pid();

  const grove::pid ponger = grove::spawn([] {
    for (int i = 0; i < rounds; ++i) {
      grove::receive([](const ping& p) {
        fmt::print("pong {}\n", p.n);
        grove::send(p.from, pong{p.n});
      });
    }
  });

  grove::spawn([main, ponger] {
    for (int n = 1; n <= rounds; ++n) {
      fmt::print("ping {}\n", n);
      grove::send(ponger, ping{grove::self(), n});
      grove::receive([](pong) {});
    }
    grove::send(main, finished{rounds, grove::self(), ponger});
  });

  const auto f = grove::receive([](const finished& f) { return f; });
  fmt::print("done: {} rounds of ping-pong between {} and {}\n", f.rounds, f.pinger, f.ponger);
  return 0;
}
