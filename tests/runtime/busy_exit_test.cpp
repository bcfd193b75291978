// Exit signals that reach a busy process (one that computes without calling the runtime), and exits
// that a process swallows: OTP's rule is that a pending exit signal takes effect no later than the
// process's end, and an exit cannot be refused (runtime/src/exit_protocol.cpp).
//
// The busy process spins on an atomic flag the test sets once the signal has been sent: it is
// computing, with no runtime call, when the signal arrives, and it reaches its end (or its next
// runtime call) only afterwards.
#include "support/fixture.hpp"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/log_capture.hpp"

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct started {};
struct parked {};

// Busy-waits (no runtime call) until `release` is set.
void compute_until(const std::atomic<bool>& release) {
  while (!release.load(std::memory_order_acquire)) {
  }
}

grove::down wait_down(const grove::monitor_ref& ref) {
  return grove::receive(grove::when([&](const grove::down& d) { return d.ref == ref; }, [](grove::down d) { return d; }),
                        grove::after(patience, [] {
                          FAIL("no down message");
                          return grove::down{};
                        }));
}

// Spawns `body` monitored; it announces itself, then `body(release)` runs. Returns once it has
// announced itself (so it is past its first runtime call and computing).
template <class F>
grove::spawned spawn_busy(std::atomic<bool>& release, F body) {
  const grove::pid me = grove::self();
  auto s = grove::spawn_monitor([me, &release, body]() mutable -> grove::exit_reason { return body(me, release); });
  grove::receive([](started) {});
  return s;
}

}  // namespace

TEST_CASE("a kill that reaches a computing process takes effect at its end, however the function ends") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // The ways a process can end: return, return of an exit_reason, an exception, grove::exit.
  std::vector<std::pair<const char*, std::function<grove::exit_reason()>>> endings = {
      {"return", [] { return grove::exit_reason::normal(); }},
      {"return exit_reason", [] { return grove::exit_reason("done"); }},
      {"throw", []() -> grove::exit_reason { throw std::runtime_error("late"); }},
      {"grove::exit(normal)", []() -> grove::exit_reason { grove::exit(grove::exit_reason::normal()); }},
      {"grove::exit(reason)", []() -> grove::exit_reason { grove::exit(grove::exit_reason("mine")); }},
  };
  for (auto& [name, ending] : endings) {
    CAPTURE(name);
    std::atomic<bool> release{false};
    auto s = spawn_busy(release, [end = ending](grove::pid me, std::atomic<bool>& r) {
      grove::send(me, started{});
      compute_until(r);
      return end();
    });
    grove::exit(s.pid, grove::exit_reason::kill());
    release.store(true, std::memory_order_release);
    CHECK(wait_down(s.monitor).reason.is_killed());
  }
}

TEST_CASE("an exit signal to a computing process that does not trap exits gives it the signal's reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<bool> release{false};
  auto s = spawn_busy(release, [](grove::pid me, std::atomic<bool>& r) {
    grove::send(me, started{});
    compute_until(r);
    return grove::exit_reason::normal();
  });
  grove::exit(s.pid, grove::exit_reason("stop_now"));
  release.store(true, std::memory_order_release);
  CHECK(wait_down(s.monitor).reason.text() == "stop_now");
}

TEST_CASE("a computing process that traps exits receives the signal as a message and lives on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<bool> release{false};
  const grove::pid self = me.pid();
  auto s = grove::spawn_monitor([self, &release] {
    grove::trap_exit(true);
    grove::send(self, started{});
    compute_until(release);
    auto e = grove::receive([](grove::exit_signal e) { return e; });
    grove::send(self, e.reason.to_string());
  });
  grove::receive([](started) {});
  grove::exit(s.pid, grove::exit_reason("stop_now"));
  release.store(true, std::memory_order_release);
  CHECK(grove::receive([](std::string r) { return r; }, grove::after(patience, [] { return std::string(); })) == "stop_now");
  CHECK(wait_down(s.monitor).reason.is_normal());
}

TEST_CASE("a linked crash that reaches a computing process ends it with that reason, and the chain goes on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<bool> release{false};
  const grove::pid self = me.pid();
  struct busy_is {
    grove::pid pid;
  };
  // outer is linked to busy, which computes; a process on another thread links to busy and crashes
  // meanwhile (a scoped process, so that this works with one worker, which busy holds).
  auto outer = grove::spawn_monitor([self, &release] {
    grove::spawn_link([self, &release] {
      grove::send(self, busy_is{grove::self()});
      compute_until(release);
      // returns normally: without the rule, busy would end normal and outer would live on
    });
    grove::receive([](parked) {});
  });
  const grove::pid busy = grove::receive([](busy_is b) { return b.pid; });
  auto busy_mon = grove::monitor(busy);
  std::thread([busy] {
    grove::scoped_process crasher;
    grove::link(busy);
    crasher.exit_with(grove::exit_reason("boom"));
  }).join();
  release.store(true, std::memory_order_release);
  CHECK(wait_down(busy_mon).reason.text() == "boom");
  CHECK(wait_down(outer.monitor).reason.text() == "boom");
}

TEST_CASE("no message sent after an untrappable kill has arrived is delivered") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // More than it can send before the kill arrives even if the test thread is held up between `go`
  // and the kill (20,000 take a few milliseconds: one preemption there would let them all out).
  constexpr int sends = 1'000'000;
  std::atomic<bool> kill_sent{false};
  const grove::pid self = me.pid();
  std::atomic<bool> go{false};
  // It traps exits: a kill sent directly is untrappable all the same.
  auto s = grove::try_spawn(grove::spawn_options{.monitor = true, .trap_exit = true}, [&] {
    grove::send(self, started{});
    compute_until(go);
    for (int i = 0; i < sends; ++i) grove::send(self, kill_sent.load(std::memory_order_acquire));
  }).value();
  grove::receive([](started) {});
  go.store(true, std::memory_order_release);
  grove::exit(s.pid, grove::exit_reason::kill());
  kill_sent.store(true, std::memory_order_release);  // every send that reads true comes after the kill arrived
  CHECK(wait_down(s.monitor).reason.is_killed());
  int before = 0, after_kill = 0;
  while (grove::receive([&](bool late) { (late ? after_kill : before)++; return true; }, grove::after(0ms, [] { return false; }))) {
  }
  CHECK(after_kill == 0);
  CHECK(before < sends);
}

TEST_CASE("a computing process that was killed neither spawns nor links at its next call") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<bool> release{false};
  std::atomic<bool> spawned_child{false};
  auto s = spawn_busy(release, [&spawned_child](grove::pid me, std::atomic<bool>& r) {
    grove::send(me, started{});
    compute_until(r);
    grove::spawn([&spawned_child] { spawned_child = true; });
    return grove::exit_reason("not reached");
  });
  const std::uint64_t spawned_before = grove::system_info().spawned;
  grove::exit(s.pid, grove::exit_reason::kill());
  release.store(true, std::memory_order_release);
  CHECK(wait_down(s.monitor).reason.is_killed());
  CHECK(grove::system_info().spawned == spawned_before);
  CHECK_FALSE(spawned_child.load());
}

TEST_CASE("a process that swallows its kill has it raised again at its next runtime call, so outer destructors run") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::mutex held;
  std::atomic<int> destroyed{0};
  struct guard {
    std::atomic<int>& n;
    ~guard() { n.fetch_add(1); }
  };
  const grove::pid self = me.pid();
  auto s = grove::spawn_monitor([&, self] {
    std::lock_guard<std::mutex> lock(held);  // the outer frame owns a lock
    guard g{destroyed};
    std::vector<char> big(1 << 20);  // and memory
    try {
      grove::send(self, parked{});
      grove::receive([](started) {});
    } catch (...) {
      // a careless catch-all that swallows the kill
    }
    grove::receive([](started) {});  // the next runtime call raises it again
    grove::send(self, std::string("the swallowed kill was not raised again"));
  });
  grove::receive([](parked) {});
  grove::exit(s.pid, grove::exit_reason::kill());
  CHECK(wait_down(s.monitor).reason.is_killed());
  CHECK(destroyed.load() == 1);
  CHECK(held.try_lock());
  held.unlock();
  CHECK_FALSE(grove::receive([](std::string) { return true; }, grove::after(0ms, [] { return false; })));
}

TEST_CASE("a process that swallows its exit every time is still ended, and reported once") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  auto s = grove::spawn_monitor([self] {
    grove::send(self, parked{});
    for (;;) {
      try {
        grove::receive([](started) {});
      } catch (...) {
      }
    }
  });
  grove::receive([](parked) {});
  grove::exit(s.pid, grove::exit_reason::kill());
  CHECK(wait_down(s.monitor).reason.is_killed());
  auto swallowed = logs.of(grove::log_kind::exit_swallowed);
  REQUIRE(swallowed.size() == 1);
  CHECK(swallowed[0].process == s.pid);
  CHECK(swallowed[0].reason.is_killed());
}

TEST_CASE("fifty processes that swallow a kill leave no lock held and run every destructor") {
  grove_test::log_capture logs;  // 50 reports, kept off stderr
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  constexpr int n = 50;
  std::vector<std::mutex> locks(n);
  std::atomic<int> destroyed{0};
  std::atomic<int> ready{0};
  std::vector<grove::spawned> procs;
  for (int i = 0; i < n; ++i) {
    procs.push_back(grove::spawn_monitor([&, i] {
      std::unique_lock<std::mutex> lock(locks[static_cast<std::size_t>(i)]);
      std::vector<char> buffer(1 << 20);  // what leaked when the rest of the stack was never unwound
      struct counted {
        std::atomic<int>& n;
        ~counted() { n.fetch_add(1); }
      } c{destroyed};
      ready.fetch_add(1);
      try {
        grove::receive([](started) {});
      } catch (...) {
      }
      grove::receive([](started) {});
    }));
  }
  CHECK(grove_test::wait_until([&] { return ready.load() == n; }));
  for (auto& p : procs) grove::exit(p.pid, grove::exit_reason::kill());
  for (auto& p : procs) CHECK(wait_down(p.monitor).reason.is_killed());
  CHECK(destroyed.load() == n);
  for (auto& m : locks) {
    CHECK(m.try_lock());
    m.unlock();
  }
}

TEST_CASE("in an exit_deferral a killed process's sends still go out, blocking calls still raise, and the exit follows the scope") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct handed_back {
    int n;
  };
  // A hand-over in a destructor that runs on a normal scope exit: without the deferral its send
  // would raise in a noexcept destructor and end the program.
  struct give_back_on_exit {
    grove::pid to;
    ~give_back_on_exit() {
      grove::exit_deferral defer;
      grove::send(to, handed_back{1});
      grove::send(to, handed_back{2});
    }
  };
  std::atomic<bool> release{false};
  std::atomic<bool> after_scope{false};
  auto s = spawn_busy(release, [&after_scope](grove::pid me, std::atomic<bool>& r) {
    {
      give_back_on_exit g{me};
      grove::send(me, started{});
      compute_until(r);
    }
    grove::send(me, handed_back{3});  // the deferral has ended: the exit is raised here, not sent
    after_scope = true;
    return grove::exit_reason::normal();
  });
  grove::exit(s.pid, grove::exit_reason::kill());
  release.store(true, std::memory_order_release);
  CHECK(wait_down(s.monitor).reason.is_killed());
  CHECK(grove::receive([](handed_back h) { return h.n; }, grove::after(patience, [] { return 0; })) == 1);
  CHECK(grove::receive([](handed_back h) { return h.n; }, grove::after(patience, [] { return 0; })) == 2);
  CHECK(grove::receive([](handed_back h) { return h.n; }, grove::after(0ms, [] { return 0; })) == 0);
  CHECK_FALSE(after_scope.load());

  // A blocking call in a deferral still raises: a deferral never makes a process unkillable.
  std::atomic<bool> release2{false};
  auto b = spawn_busy(release2, [](grove::pid me, std::atomic<bool>& r) {
    grove::exit_deferral defer;
    grove::send(me, started{});
    compute_until(r);
    grove::receive([](parked) {});  // never comes
    return grove::exit_reason("not killed");
  });
  grove::exit(b.pid, grove::exit_reason::kill());
  release2.store(true, std::memory_order_release);
  CHECK(wait_down(b.monitor).reason.is_killed());
}
