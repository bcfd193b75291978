// ring: `size` processes in a ring pass one token carrying the hops left; N hops in all. The ring is
// built before the clock starts. Checks that the token ends at position N mod size.
#include <vector>

#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {
struct next_is {
  grove::pid next;
};
struct token {
  long long left;
};
}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 10'000'000}, {"size", 1000}});
  const long long n = f["n"], size = f["size"];
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"])});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  std::vector<grove::pid> ring;
  for (long long i = 0; i < size; ++i) {
    ring.push_back(grove::spawn([i, size, main_pid] {
      grove::pid next = grove::receive([](next_is m) { return m.next; });
      for (;;) {
        long long left = grove::receive([](token t) { return t.left; });
        if (left == 0) {
          grove::send(main_pid, i);  // the token stops here
        } else {
          grove::send(next, token{left - 1});
        }
        if (left < size) return;  // it will not come round again
      }
    }));
  }
  for (long long i = 0; i < size; ++i) grove::send(ring[static_cast<std::size_t>(i)], next_is{ring[static_cast<std::size_t>((i + 1) % size)]});
  const auto t0 = std::chrono::steady_clock::now();
  grove::send(ring[0], token{n});
  const long long at = grove::receive([](long long i) { return i; });
  const double seconds = bench::seconds_since(t0);
  bench::result("ring", "hops_per_second", "1/s", static_cast<double>(n) / seconds, f);
  return at == n % size ? 0 : 1;
}
