// fan_in: 16 senders each send 1..N to one receiver, which counts and sums them. The clock runs from
// the first spawn to the last message received.
#include <grove/grove.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 250'000}, {"senders", 16}});
  const long long n = f["n"], senders = f["senders"];
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"])});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  const auto t0 = std::chrono::steady_clock::now();
  grove::pid receiver = grove::spawn([n, senders, main_pid] {
    long long count = 0, sum = 0;
    for (long long i = 0; i < n * senders; ++i) {
      grove::receive([&](long long v) {
        ++count;
        sum += v;
      });
    }
    grove::send(main_pid, std::pair<long long, long long>(count, sum));
  });
  for (long long s = 0; s < senders; ++s)
    grove::spawn([receiver, n] {
      for (long long v = 1; v <= n; ++v) grove::send(receiver, v);
    });
  auto [count, sum] = grove::receive([](std::pair<long long, long long> r) { return r; });
  const double seconds = bench::seconds_since(t0);
  bench::result("fan_in", "messages_per_second", "1/s", static_cast<double>(count) / seconds, f);
  return count == n * senders && sum == senders * n * (n + 1) / 2 ? 0 : 1;
}
