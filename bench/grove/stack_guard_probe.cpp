// stack_guard_probe: what the guard below each execution stack costs (runtime/src/stack_slots.hpp):
// reserving 8,192 slots of 256 KiB and protecting a 4 KiB or a 64 KiB guard below each, 3 rounds.
//   g++ -std=c++20 -O2 bench/grove/stack_guard_probe.cpp -o /tmp/sgp && /tmp/sgp
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <initializer_list>
int main() {
  for (int rep = 0; rep < 3; ++rep)
  for (std::size_t guard : {4096ul, 65536ul}) {
    const std::size_t stack = 256 * 1024, stride = stack + guard, n = 8192;
    auto t0 = std::chrono::steady_clock::now();
    char* r = (char*)mmap(nullptr, stride * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    for (std::size_t i = 0; i < n; ++i) mprotect(r + i * stride, guard, PROT_NONE);
    auto t1 = std::chrono::steady_clock::now();
    munmap(r, stride * n);
    auto t2 = std::chrono::steady_clock::now();
    std::printf("guard %6zu B: reserve+protect 8192 slots %.2f ms, release %.2f ms\n", guard,
                std::chrono::duration<double, std::milli>(t1 - t0).count(), std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
}
