// tcp_echo: C connections over 127.0.0.1, each a client process doing round trips of 64 bytes
// with its own server process (a process per connection on each side, grove::net); the clock
// runs from the first connect to the last round trip. --n connections (100; the harness runs 1,
// 100 and 1,000), --round_trips in all (200,000), spread evenly. Checks every echoed byte.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include <grove/grove.hpp>
#include <grove/net.hpp>

#include "bench_common.hpp"

namespace net = grove::net;

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 100}, {"round_trips", 200'000}});
  const long long total = f["round_trips"], conns = std::max(1LL, f["n"]);
  const long long each = std::max(1LL, total / conns);
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"]), .process_limit = 1'000'000});
  grove::scoped_process me;
  auto l = net::listener::listen(net::address::loopback(0), {.backlog = 4096});
  if (!l) {
    std::fprintf(stderr, "tcp_echo: listen: %s\n", l.error().message().c_str());
    return 1;
  }
  const net::address at = *l->local_address();
  grove::spawn([l = std::move(*l), conns]() mutable {
    for (long long i = 0; i < conns; ++i) {
      auto s = l.accept();
      if (!s) return;
      (void)s->set_nodelay(true);
      grove::spawn([s = std::move(*s)]() mutable {
        char buf[64];
        while (!s.read_exact(buf, sizeof buf) && !s.write_all(buf, sizeof buf)) {
        }
      });
    }
  });
  std::atomic<long long> bad{0};
  const grove::pid self = me.pid();
  struct done {};
  const auto t0 = std::chrono::steady_clock::now();
  for (long long c = 0; c < conns; ++c) {
    grove::spawn([at, each, c, self, &bad] {
      auto s = net::stream::connect(at);
      if (!s) {
        bad.fetch_add(each);
        grove::send(self, done{});
        return;
      }
      (void)s->set_nodelay(true);
      char out[64], in[64];
      for (long long k = 0; k < each; ++k) {
        std::memset(out, static_cast<int>((c + k) & 0xff), sizeof out);
        if (s->write_all(out, sizeof out) || s->read_exact(in, sizeof in) || std::memcmp(in, out, sizeof in) != 0) {
          bad.fetch_add(each - k);
          break;
        }
      }
      grove::send(self, done{});
    });
  }
  for (long long c = 0; c < conns; ++c) grove::receive([](done) {});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bad.load() != 0) {
    std::fprintf(stderr, "tcp_echo: %lld round trips failed\n", bad.load());
    return 1;
  }
  bench::result("tcp_echo", "round_trips_per_second", "1/s", static_cast<double>(each * conns) / secs, f);
  return 0;
}
