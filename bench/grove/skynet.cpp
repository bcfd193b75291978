// skynet: a 10-ary tree with N leaves (1,111,111 processes for N = 1M); each leaf sends its number
// up, each parent sends the sum of its children. Checks N(N-1)/2. bench/README.md has the rules.
#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {

void skynet(grove::pid parent, long long num, long long size, long long div) {
  if (size == 1) {
    grove::send(parent, num);
    return;
  }
  const grove::pid self = grove::self();
  const long long child_size = size / div;
  for (long long i = 0; i < div; ++i) {
    long long child_num = num + i * child_size;
    grove::spawn([self, child_num, child_size, div] { skynet(self, child_num, child_size, div); });
  }
  long long sum = 0;
  for (long long i = 0; i < div; ++i) sum += grove::receive([](long long v) { return v; });
  grove::send(parent, sum);
}

}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 1'000'000}, {"div", 10}});
  const long long n = f["n"], div = f["div"];
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"]), .process_limit = std::size_t{1} << 22});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  const auto t0 = std::chrono::steady_clock::now();
  grove::spawn([main_pid, n, div] { skynet(main_pid, 0, n, div); });
  const long long sum = grove::receive([](long long v) { return v; });
  const double seconds = bench::seconds_since(t0);
  bench::result("skynet", "seconds", "s", seconds, f, fmt::format(",\"sum\":{}", sum));
  return sum == n * (n - 1) / 2 ? 0 : 1;
}
