// spawn_million: the headline. Spawns N processes (default 1,000,000) that each sleep for an hour,
// so every one is alive at once and holds a pending timer (BEAM's classic spawn test), then prints
// how long it took until all had started, the runtime's own count of live processes, and the
// resident memory per process. Then stops the runtime, which shuts them all down.
//
//   spawn_million [N] [workers]
//
// Expected output (figures vary by machine):
//   spawned 1000000 sleeping processes in 0.52 s (0.52 µs each)
//   alive (runtime's count): 1000002 = 1000000 sleepers + spawner + this thread
//   resident memory: 301 bytes per process (VmRSS +286 MB)
//   stack image copies so far: 999038, 982594 of them kept as differences (1024 execution stacks)
//   stopped: 1000000 processes shut down in 0.61 s
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include <fmt/format.h>

#include <grove/grove.hpp>

namespace {

long vm_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

struct all_started {};

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const unsigned workers = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 0;
  using clock = std::chrono::steady_clock;

  grove::runtime rt({.workers = workers, .process_limit = std::max<std::size_t>(n + 16, std::size_t{1} << 20)});
  std::optional<grove::scoped_process> me(std::in_place);  // this thread's mailbox, until the stop below
  const long rss_before = vm_rss_kib();
  std::atomic<std::size_t> started{0};
  const auto t0 = clock::now();
  const grove::pid main_pid = me->pid();
  grove::spawn([&started, n, main_pid] {
    for (std::size_t i = 0; i < n; ++i) {
      grove::spawn([&started, n, main_pid] {
        // relaxed: only the count matters; the last one to start tells the main thread
        if (started.fetch_add(1, std::memory_order_relaxed) + 1 == n) grove::send(main_pid, all_started{});
        grove::sleep_for(std::chrono::hours(1));
      });
    }
    grove::receive([](int) {});  // stay alive (it counts in the total below) until shut down
  });
  grove::receive([](all_started) {});
  const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
  const auto info = grove::system_info();
  const long rss_after = vm_rss_kib();
  const double bytes_per = static_cast<double>(rss_after - rss_before) * 1024.0 / static_cast<double>(n);

  fmt::print("spawned {} sleeping processes in {:.2f} s ({:.2f} µs each)\n", n, seconds, seconds * 1e6 / static_cast<double>(n));
  fmt::print("alive (runtime's count): {} = {} sleepers + spawner + this thread\n", info.process_count, n);
  fmt::print("resident memory: {:.0f} bytes per process (VmRSS +{} MB)\n", bytes_per, (rss_after - rss_before) / 1024);
  fmt::print("stack image copies so far: {}, {} of them kept as differences ({} execution stacks)\n",
             info.stack_image_copies, info.stack_image_differences, info.stack_slots);
  std::fflush(stdout);
  me.reset();  // a scoped_process alive at stop would keep the runtime's memory until destroyed
  const auto t1 = clock::now();
  grove::stop_report r = rt.stop(std::chrono::seconds(30));
  fmt::print("stopped: {} processes shut down in {:.2f} s{}\n", r.exited, std::chrono::duration<double>(clock::now() - t1).count(),
             r.clean ? "" : " (not clean)");
  return info.process_count == n + 2 ? 0 : 1;
}
