// bench/grove/membarrier_probe.cpp: what an asymmetric fence would cost the send without a reference
// (runtime/src/delivery.cpp, "Sending without a reference", Rejected): the sender's store and full
// fence, against membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which would let the sender drop its
// fence at the price of one such call per batch of finalized PCBs. In ns a call, median [min, max]
// of 5 rounds, with another thread of the program spinning on a CPU (as a busy worker does) and
// alone.
//
//   build/release/bench/grove/membarrier_probe
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

std::atomic<std::uint32_t> seq{0};
std::atomic<bool> stop{false};

long membarrier(int cmd) { return ::syscall(SYS_membarrier, cmd, 0, 0); }

template <class F>
void measure(const char* name, int calls, F call) {
  std::vector<double> ns;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("%-48s %9.1f ns [%.1f, %.1f]\n", name, ns[2], ns[0], ns[4]);
}

}  // namespace

int main() {
  measure("store + seq_cst fence (the sender's, today)", 10'000'000, [] {
    seq.store(seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  });
  if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) {
    std::printf("membarrier: private expedited not available here\n");
    return 0;
  }
  std::thread spinner([] {
    while (!stop.load(std::memory_order_relaxed)) {  // relaxed: a flag polled until set
    }
  });
  measure("membarrier, another thread busy", 20'000, [] { membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED); });
  stop.store(true, std::memory_order_relaxed);
  spinner.join();
  measure("membarrier, alone", 20'000, [] { membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED); });
}
