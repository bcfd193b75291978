// top_target: the program tests/top/check_top.sh attaches tools/top to. Every worker is held by a
// spinner that never reaches a runtime call, a registered process "hoarder" holds 50 messages
// no receive has matched, a supervisor "orders" has restarted its child twice, and a pool "db" of
// 2 workers has one leased, and a registered process "cache" holds 2 MiB in its arena. It prints "ready" once all of that holds (checked through
// process_summary_of), then runs until its stdin closes. Workers: GROVE_TEST_WORKERS (default 2);
// the socket: GROVE_TOP_SOCKET.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include <memory_resource>

#include <grove/arena.hpp>
#include <grove/grove.hpp>
#include <grove/services/pool.hpp>
#include <grove/supervisor.hpp>

namespace {
struct go {};
struct stop {};
struct crash {};

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
  grove::pid cache = grove::spawn([] {
    grove::register_name("cache", grove::self());
    std::pmr::vector<char> data(2 << 20, 'x', &grove::arena());
    grove::receive([](stop) {});
  });
  if (!eventually([&] {
        auto s = grove::process_summary_of(cache);
        return s && s->arena_bytes >= (2u << 20) && s->status == grove::process_status::waiting;
      }))
    return 6;
  namespace sup = grove::supervisor;
  sup::flags f{.intensity = 10};
  f.name = "orders";
  f.logger = sup::logger{};  // quiet
  const grove::pid orders = sup::start_link(f, {sup::worker("w", [] {
                                              grove::receive([](crash) {});
                                              throw std::runtime_error("crash");
                                            })});
  for (int i = 0; i < 2; ++i) {
    auto kids = sup::which_children(orders);
    if (!kids) return 4;
    const grove::pid old = (*kids)[0].pid;
    grove::send(old, crash{});
    if (!eventually([&] {
          auto now = sup::which_children(orders);
          return now && !(*now)[0].pid.is_null() && (*now)[0].pid != old;
        }))
      return 4;
  }
  auto db = grove::services::pool::start_link({.size = 2, .max_waiting = 4, .name = "db"});
  if (!db) return 5;
  auto lease = db->checkout(grove::services::deadline::after(std::chrono::seconds(20)));
  if (!lease) return 5;
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
  grove::send(cache, stop{});
  return 0;
}
