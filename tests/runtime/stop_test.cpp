// Stopping a runtime with something stuck (runtime/src/runtime.cpp, "Stop"): stop returns by its
// deadline and says what it left behind; foreign threads blocked in Grove are released; stop and
// wait_until_idle refuse to run inside a process; idle means every exited process's resources are back.
#include "support/fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <thread>

#include "support/log_capture.hpp"

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};

// Waits until nothing Grove holds is in use (a left-behind process has ended on its own worker).
void wait_all_released() {
  CHECK(grove_test::wait_until([] {
    auto u = grove::resources_in_use();
    return u.processes == 0 && u.stack_images == 0 && u.arenas == 0 && u.timers == 0;
  }));
}

}  // namespace

TEST_CASE("stop returns by its deadline when a process loops without runtime calls, and names it") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  std::atomic<bool> started{false}, release{false}, ended{false};
  grove::pid looper = grove::spawn([&] {
    started = true;
    while (!release.load(std::memory_order_acquire)) {
    }
    ended = true;
  });
  REQUIRE(grove_test::wait_until([&] { return started.load(); }));
  const auto t0 = std::chrono::steady_clock::now();
  grove::stop_report r = rt.stop(300ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK_FALSE(r.clean);
  REQUIRE(r.left_behind.size() == 1);
  CHECK(r.left_behind[0] == looper);
  CHECK(r.workers_left_running == 1);
  CHECK(r.killed == 1);
  CHECK(took < 5s);  // bounded by the deadline, not by the loop (a bound in seconds, not a benchmark)
  CHECK_FALSE(ended.load());
  auto stops = logs.of(grove::log_kind::stop);
  REQUIRE(stops.size() == 1);
  CHECK(stops[0].text.find(fmt::format("{}", looper)) != std::string::npos);

  // A new runtime may start while the old one's process still runs on its old worker.
  {
    grove::runtime next({.workers = 1});
    grove::scoped_process me;
    const grove::pid self = me.pid();
    grove::spawn([self] { grove::send(self, go{}); });
    CHECK(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
  }
  release.store(true, std::memory_order_release);
  CHECK(grove_test::wait_until([&] { return ended.load(); }));
  wait_all_released();
}

TEST_CASE("stop returns by its deadline when a process blocks its worker in a syscall, and reports it") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  std::atomic<bool> started{false}, woke{false};
  grove::pid sleeper = grove::spawn([&] {
    started = true;
    char c;
    (void)!::read(pipe_fds[0], &c, 1);  // blocks the worker thread until the test writes
    woke = true;
    grove::send(grove::self(), go{});  // its next runtime call: it dies there (it was killed)
    woke = false;                      // not reached
  });
  REQUIRE(grove_test::wait_until([&] { return started.load(); }));
  grove::stop_report r = rt.stop(1s);
  CHECK_FALSE(woke.load());  // stop did not wait for the syscall
  CHECK_FALSE(r.clean);
  REQUIRE(r.left_behind.size() == 1);
  CHECK(r.left_behind[0] == sleeper);
  CHECK(logs.of(grove::log_kind::stop).size() == 1);
  REQUIRE(::write(pipe_fds[1], "x", 1) == 1);
  CHECK(grove_test::wait_until([&] { return woke.load(); }));
  wait_all_released();
  CHECK(woke.load());  // it never ran past the send
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST_CASE("stop releases foreign threads blocked in a scoped_process's receive or sleep, then reports clean") {
  grove_test::runtime_fixture rt;
  std::atomic<int> released{0};
  std::atomic<int> in_grove{0};
  auto blocked = [&](auto block) {
    return std::thread([&, block] {
      grove::scoped_process me;
      in_grove.fetch_add(1);
      try {
        block();
      } catch (const grove::error& e) {
        if (e.code() == grove::errc::not_running) released.fetch_add(1);
      }
    });
  };
  std::thread receiving = blocked([] { grove::receive([](go) {}); });
  std::thread sleeping = blocked([] { grove::sleep_for(1h); });
  std::thread waiting_long = blocked([] { grove::receive([](go) {}, grove::after(std::chrono::milliseconds::max(), [] {})); });
  REQUIRE(grove_test::wait_until([&] { return in_grove.load() == 3; }));
  grove::stop_report r = rt.stop(10s);
  CHECK(r.clean);
  CHECK(r.scoped_blocked == 0);
  CHECK(grove_test::wait_until([&] { return released.load() == 3; }));
  receiving.join();
  sleeping.join();
  waiting_long.join();
  // And a scoped process's receive after the stop throws at once instead of blocking.
}

TEST_CASE("stop, wait_until_idle and scoped_process refuse to run inside a process, at once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::runtime* runtime = &rt.get();
  const grove::pid self = me.pid();
  grove::spawn([runtime, self] {
    auto code_of = [](auto call) {
      try {
        call();
      } catch (const grove::error& e) {
        return e.code();
      }
      return std::error_code{};
    };
    grove::send(self, code_of([&] { runtime->stop(); }));
    grove::send(self, code_of([&] { runtime->wait_until_idle(1s); }));
    grove::send(self, code_of([] { grove::scoped_process nested; }));
  });
  for (int i = 0; i < 3; ++i) {
    auto code = grove::receive([](std::error_code c) { return c; }, grove::after(patience, [] { return std::error_code{}; }));
    CHECK(code == grove::errc::in_process);
  }
  CHECK(rt->is_running());  // and the runtime is unharmed
}

TEST_CASE("after wait_until_idle returns true, resources_in_use counts no exited process") {
  grove_test::runtime_fixture rt;
  const int rounds = 10;
#if defined(__SANITIZE_THREAD__)
  const int n = 2'000 * static_cast<int>(grove_test::stress_scale());  // ThreadSanitizer: ~30x slower spawns
#else
  const int n = 20'000 * static_cast<int>(grove_test::stress_scale());
#endif
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < n; ++i) {
      if (i % 16 == 0) {
        grove::spawn([] {  // some hold an arena, a saved message and a pending timer when they exit
          (void)grove::arena().allocate(64);
          grove::send(grove::self(), go{});
          grove::send_after(grove::self(), go{}, 1ms);
        });
      } else {
        grove::spawn([] {});
      }
    }
    REQUIRE(rt->wait_until_idle(patience));
    auto u = grove::resources_in_use();
    CHECK(u.processes == 0);
    CHECK(u.stack_images == 0);
    CHECK(u.arenas == 0);
    if (u.processes != 0) break;
  }
  CHECK(rt->wait_until_idle(0ms));  // idle stays idle
}
