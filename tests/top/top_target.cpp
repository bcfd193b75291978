// top_target: the program tests/top/check_top.sh attaches tools/top to. Every worker is held by a
// spinner that never reaches a runtime call, and a registered process "hoarder" holds 50 messages
// no receive has matched. It prints "ready" once all of that holds (checked through
// process_summary_of), then runs until its stdin closes. Workers: GROVE_TEST_WORKERS (default 2);
// the socket: GROVE_TOP_SOCKET.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <grove/grove.hpp>

namespace {
struct go {};
struct stop {};

// Polls `pred` for up to 20 s (a helper program's setup, not a test's synchronisation).
template <class F>
bool eventually(F pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}
}  // namespace

int main() {
  const char* w = std::getenv("GROVE_TEST_WORKERS");
  const unsigned workers = w ? static_cast<unsigned>(std::atoi(w)) : 2;
  grove::runtime rt({.workers = workers});
  grove::scoped_process me;
  grove::pid hoarder = grove::spawn([] {
    grove::register_name("hoarder", grove::self());
    grove::receive([](go) {});    // takes in the 50 ints sent before go, and keeps them
    grove::receive([](stop) {});
  });
  for (int i = 0; i < 50; ++i) grove::send(hoarder, i);
  grove::send(hoarder, go{});
  if (!eventually([&] {
        auto s = grove::process_summary_of(hoarder);
        return s && s->mailbox_length == 50 && s->status == grove::process_status::waiting;
      }))
    return 2;
  std::atomic<bool> done{false};
  std::vector<grove::pid> spinners;
  for (unsigned i = 0; i < workers; ++i)
    spinners.push_back(grove::spawn([&done] {
      while (!done.load(std::memory_order_relaxed)) {
      }
    }));
  for (grove::pid p : spinners)
    if (!eventually([&] {
          auto s = grove::process_summary_of(p);
          return s && s->status == grove::process_status::running;
        }))
      return 3;
  std::printf("ready\n");
  std::fflush(stdout);
  for (int c; (c = std::getchar()) != EOF;) {
  }
  done = true;
  grove::send(hoarder, stop{});
  return 0;
}
