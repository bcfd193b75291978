// Processes: spawn, self, exit reasons, yield, pids, the process limit, start/stop.
#include "support/fixture.hpp"

#include <array>
#include <memory>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {
struct go {};

// Tells `self` it runs, then waits in a receive for ever, swallowing every exit raised there with a
// careless catch-all: the runtime raises the exit again at the next runtime call, and in the end
// ends the process without unwinding (runtime/src/exit_protocol.cpp, "Swallowed exits").
[[noreturn]] void signal_then_swallow_every_exit(grove::pid self) {
  grove::send(self, go{});
  for (;;) {
    try {
      grove::receive([](int) {});
    } catch (...) {
    }
  }
}
}  // namespace

TEST_CASE("a spawned process runs and can reply to a scoped process") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid parent = me.pid();
  grove::spawn([parent] { grove::send(parent, grove::self()); });
  grove::pid child = grove::receive([](grove::pid p) { return p; }, grove::after(patience, [] { return grove::pid(); }));
  CHECK_FALSE(child.is_null());
  CHECK(child != parent);
}

TEST_CASE("a process whose function returns ends with reason normal") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto s = grove::spawn_monitor([] {});
  auto d = grove::receive([](grove::down d) { return d; });
  CHECK(d.ref == s.monitor);
  CHECK(d.from == s.pid);
  CHECK(d.reason.is_normal());
  CHECK_FALSE(grove::is_alive(s.pid));
}

TEST_CASE("exit(reason) ends the calling process and runs its destructors") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<int> destroyed{0};
  struct guard {
    std::atomic<int>* n;
    ~guard() { n->fetch_add(1); }
  };
  grove::spawn_monitor([&destroyed] {
    guard g{&destroyed};
    grove::exit(grove::exit_reason::user("config_missing", 42));
  });
  auto d = grove::receive([](grove::down d) { return d; });
  CHECK(d.reason.text() == "config_missing");
  REQUIRE(d.reason.payload<int>() != nullptr);
  CHECK(*d.reason.payload<int>() == 42);
  CHECK(destroyed == 1);
}

TEST_CASE("a function that returns an exit_reason ends its process with that reason, links and monitors see it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<int> destroyed{0};
  struct guard {
    std::atomic<int>* n;
    ~guard() { n->fetch_add(1); }
  };
  auto crashed = grove::spawn_monitor([&destroyed]() -> grove::exit_reason {
    guard g{&destroyed};
    return grove::exit_reason::user("crash", 7);
  });
  auto d = grove::receive([](grove::down d) { return d; });
  CHECK(d.from == crashed.pid);
  CHECK(d.reason.text() == "crash");
  REQUIRE(d.reason.payload<int>() != nullptr);
  CHECK(*d.reason.payload<int>() == 7);
  CHECK(destroyed == 1);

  auto fine = grove::spawn_monitor([]() -> grove::exit_reason { return grove::exit_reason::normal(); });
  CHECK(grove::receive([](grove::down d) { return d; }).reason.is_normal());
  CHECK_FALSE(grove::is_alive(fine.pid));

  // The returned reason is not normal, so a linked process that does not trap exits dies of it.
  auto bystander = grove::spawn_monitor([] {
    grove::spawn_link([]() -> grove::exit_reason { return grove::exit_reason("crash"); });
    grove::receive([](int) {});  // never comes: the link's exit signal ends this process first
  });
  auto d2 = grove::receive([](grove::down d) { return d; });
  CHECK(d2.from == bystander.pid);
  CHECK(d2.reason.text() == "crash");
}

TEST_CASE("a process killed while it waits unwinds its stack, so its destructors run") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  std::atomic<int> destroyed{0};
  struct guard {
    std::atomic<int>* n;
    ~guard() { n->fetch_add(1); }
  };
  auto s = grove::spawn_monitor([&destroyed, self] {
    guard g{&destroyed};
    grove::send(self, go{});
    grove::receive([](int) {});
  });
  grove::receive([](go) {});
  grove::exit(s.pid, grove::exit_reason::kill());
  auto d = grove::receive([](grove::down d) { return d; });
  CHECK(d.reason.is_killed());
  CHECK(destroyed == 1);
}

TEST_CASE("a kill cannot be swallowed by catch (...)") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  auto s = grove::spawn_monitor([self] { signal_then_swallow_every_exit(self); });
  grove::receive([](go) {});
  grove::exit(s.pid, grove::exit_reason::kill());
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.is_killed());
}

TEST_CASE("self is the null pid outside a process and the process's own pid inside") {
  grove_test::runtime_fixture rt;
  CHECK(grove::self().is_null());
  grove::scoped_process me;
  CHECK(grove::self() == me.pid());
  grove::pid self = me.pid();
  auto p = grove::spawn([self] { grove::send(self, grove::self()); });
  CHECK(grove::receive([](grove::pid q) { return q; }) == p);
}

TEST_CASE("calls that need a process fail clearly on a plain thread") {
  grove_test::runtime_fixture rt;
  CHECK_THROWS_AS(grove::receive([](int) {}), grove::error);
  CHECK_THROWS_AS(grove::link(grove::pid()), grove::error);
  CHECK_THROWS_AS(grove::yield(), grove::error);
  auto r = grove::try_spawn(grove::spawn_options{.link = true}, [] {});
  CHECK(r.error() == grove::errc::not_in_process);
}

TEST_CASE("without a runtime, spawn fails with not_running and sends are dropped") {
  auto r = grove::try_spawn(grove::spawn_options{}, [] {});
  CHECK(r.error() == grove::errc::not_running);
  CHECK_THROWS_AS(grove::spawn([] {}), grove::error);
  grove::send(grove::pid::from_parts(1, 1), 5);  // no crash
  CHECK_THROWS_AS(grove::system_info(), grove::error);
}

TEST_CASE("spawning past the process limit fails with process_limit, and the runtime keeps going") {
  grove_test::runtime_fixture rt({.process_limit = 100});
  grove::scoped_process me;  // counts as one
  std::vector<grove::pid> held;
  grove::result<grove::spawned> last = grove::errc::bad_argument;
  for (int i = 0; i < 200; ++i) {
    last = grove::try_spawn(grove::spawn_options{}, [] { grove::receive([](go) {}); });
    if (!last) break;
    held.push_back(last->pid);
  }
  CHECK(held.size() == 99);
  CHECK(last.error() == grove::errc::process_limit);
  CHECK_THROWS_AS(grove::spawn([] {}), grove::error);
  CHECK(grove::system_info().process_count == 100);
  // One exits: there is room again.
  auto ref = grove::monitor(held.back());
  grove::send(held.back(), go{});
  grove::receive([&](grove::down d) { CHECK(d.ref == ref); });
  CHECK(grove::try_spawn(grove::spawn_options{}, [] {}).has_value());
  for (auto p : held) grove::send(p, go{});
}

TEST_CASE("a pid stays dead after its table slot is reused") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  // A process spawns short-lived children until one gets the table index of an earlier, dead one
  // (any of them: free indices are cached per worker, so which one comes back depends on where the
  // children ran and exited; waiting for one particular index could take for ever).
  grove::spawn([self] {
    std::unordered_map<std::uint32_t, grove::pid> dead;  // table index -> the dead child that had it
    for (int i = 0; i < 100000; ++i) {
      auto s = grove::spawn_monitor([] { grove::receive([](go) {}); });
      if (auto it = dead.find(s.pid.index()); it != dead.end()) {
        grove::send(self, std::pair<grove::pid, grove::pid>(it->second, s.pid));
        grove::receive([](go) {});
        grove::send(s.pid, go{});
        return;
      }
      grove::send(s.pid, go{});
      grove::receive([](grove::down) {});
      dead.emplace(s.pid.index(), s.pid);
    }
    grove::send(self, std::pair<grove::pid, grove::pid>());
  });
  auto [old_pid, reused] = grove::receive([](std::pair<grove::pid, grove::pid> r) { return r; });
  REQUIRE_FALSE(reused.is_null());
  CHECK(reused != old_pid);
  CHECK(reused.index() == old_pid.index());
  CHECK(grove::is_alive(reused));
  CHECK_FALSE(grove::is_alive(old_pid));
  CHECK_FALSE(grove::process_info(old_pid).has_value());
  auto before = grove::system_info().dead_letters;
  grove::send(old_pid, go{});  // must not reach the new occupant
  CHECK(grove::system_info().dead_letters == before + 1);
  auto info = grove::process_info(reused);
  REQUIRE(info);
  CHECK(info->mailbox_length == 0);
}

TEST_CASE("pids are values: comparable, hashable and printable") {
  auto a = grove::pid::from_parts(12, 3), b = grove::pid::from_parts(12, 4), c = grove::pid::from_parts(12, 3);
  CHECK(a == c);
  CHECK(a != b);
  CHECK(a < b);
  std::unordered_set<grove::pid> set{a, b, c};
  CHECK(set.size() == 2);
  CHECK(fmt::format("{}", a) == "<0.12.3>");
  std::ostringstream os;
  os << b;
  CHECK(os.str() == "<0.12.4>");
  CHECK(grove::pid().is_null());
}

TEST_CASE("yield lets the other processes on a worker run") {
  grove_test::runtime_fixture rt({.workers = 1});
  grove::scoped_process me;
  grove::pid self = me.pid();
  std::atomic<bool> other_ran{false};
  grove::spawn([&other_ran, self] {
    while (!other_ran.load()) grove::yield();  // a CPU loop that yields
    grove::send(self, go{});
  });
  grove::spawn([&other_ran] { other_ran = true; });
  bool done = grove::receive([](go) { return true; }, grove::after(patience, [] { return false; }));
  CHECK(done);
}

TEST_CASE("a runtime starts and stops several times in one program") {
  for (int round = 0; round < 3; ++round) {
    grove_test::runtime_fixture rt;
    grove::scoped_process me;
    grove::pid self = me.pid();
    grove::spawn([self, round] { grove::send(self, round); });
    CHECK(grove::receive([](int r) { return r; }) == round);
  }
}

TEST_CASE("a second runtime cannot start while one runs") {
  grove_test::runtime_fixture rt;
  bool threw = false;
  try {
    grove::runtime second;
  } catch (const grove::error& e) {
    threw = e.code() == grove::errc::already_running;
  }
  CHECK(threw);
}

TEST_CASE("stop gives processes the shutdown signal, then kills those that ignore it at the deadline") {
  grove_test::runtime_fixture rt;
  std::atomic<int> shut_down_cleanly{0};
  {
    grove::scoped_process me;
    grove::pid self = me.pid();
    for (int i = 0; i < 10; ++i) grove::spawn([] { grove::receive([](go) {}); });
    // Trapping exits and ignoring the shutdown message: killed at the deadline.
    grove::spawn([self] {
      grove::trap_exit(true);
      grove::send(self, go{});
      for (;;) grove::receive([](grove::exit_signal) {}, [](go) {});
    });
    // Trapping, but honouring shutdown.
    grove::spawn([self, &shut_down_cleanly] {
      grove::trap_exit(true);
      grove::send(self, go{});
      grove::receive([&](grove::exit_signal e) {
        if (e.reason.is_shutdown()) shut_down_cleanly = 1;
      });
    });
    grove::receive([](go) {});
    grove::receive([](go) {});
  }
  auto report = rt.stop(500ms);
  CHECK(report.killed == 1);
  CHECK(report.exited == 11);
  CHECK(report.clean);
  CHECK(shut_down_cleanly == 1);
}

TEST_CASE("a foreign thread can spawn, send and wait for replies with a timeout") {
  grove_test::runtime_fixture rt;
  auto doubler = grove::spawn([] {
    for (;;) grove::receive([](std::pair<grove::pid, int> m) { grove::send(m.first, m.second * 2); });
  });
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      grove::scoped_process me;
      for (int i = 0; i < 100; ++i) {
        grove::send(doubler, std::pair<grove::pid, int>(me.pid(), t * 1000 + i));
        int r = grove::receive([](int v) { return v; }, grove::after(patience, [] { return -1; }));
        if (r == 2 * (t * 1000 + i)) ++correct;
      }
      // A reply that never comes: the timeout fires.
      bool timed_out = grove::receive([](int) { return false; }, grove::after(20ms, [] { return true; }));
      if (timed_out) ++correct;
    });
  for (auto& t : threads) t.join();
  CHECK(correct == 4 * 101);
}

namespace {
template <std::size_t N>
struct big_capture {
  std::array<unsigned char, N> bytes{};
  big_capture() {
    for (std::size_t i = 0; i < N; ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  }
  std::uint64_t sum() const {
    std::uint64_t s = 0;
    for (auto b : bytes) s += b;
    return s;
  }
};
}  // namespace

TEST_CASE("a process spawns a callable with a 128 KiB by-value capture: it is built in its place, not copied on the stack") {
  grove_test::runtime_fixture rt;  // 256 KiB stacks: the capture is half of the spawner's
  grove::scoped_process me;
  const grove::pid self = me.pid();
  const std::uint64_t expected = big_capture<128 * 1024>().sum();
  grove::spawn([self] {
    grove::spawn([self, big = big_capture<128 * 1024>()] { grove::send(self, big.sum()); });
  });
  CHECK(grove::receive([](std::uint64_t s) { return s; }, grove::after(patience, [] { return std::uint64_t{0}; })) == expected);
  // An lvalue is copied into the new process (and stays usable), a move-only callable is moved.
  grove::spawn([self] {
    auto keep = [self, big = big_capture<100 * 1024>()] { grove::send(self, big.sum()); };
    grove::spawn(keep);
    keep();
    auto owned = std::make_unique<int>(7);
    grove::spawn([self, owned = std::move(owned)] { grove::send(self, static_cast<std::uint64_t>(*owned)); });
  });
  std::multiset<std::uint64_t> got;
  for (int i = 0; i < 3; ++i) got.insert(grove::receive([](std::uint64_t s) { return s; }, grove::after(patience, [] { return std::uint64_t{0}; })));
  const std::uint64_t hundred = big_capture<100 * 1024>().sum();
  CHECK(got == std::multiset<std::uint64_t>{7, hundred, hundred});
}

TEST_CASE("a foreign thread spawns a callable with a 1 MiB by-value capture") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  auto big = std::make_unique<big_capture<1024 * 1024>>();  // the capture's source lives on the heap here
  const std::uint64_t expected = big->sum();
  grove::spawn([self, copy = *big] { grove::send(self, copy.sum()); });
  CHECK(grove::receive([](std::uint64_t s) { return s; }, grove::after(patience, [] { return std::uint64_t{0}; })) == expected);
}

namespace {
// Callables stored each way the runtime stores one (runtime/src/process.hpp, entry_or_timer): in the
// PCB and then at the top of the process's own stack (small and trivially copyable), or on the heap
// (one with a destructor of its own, a large one, an over-aligned one). The heap ones hold a share of
// `token` and do `body` when run.
template <class Body>
struct large_callable {
  std::shared_ptr<int> token;
  Body body;
  std::array<char, 100> padding{};
  void operator()() { body(); }
};
template <class Body>
struct alignas(16) over_aligned_callable {
  std::shared_ptr<int> token;
  Body body;
  void operator()() { body(); }
};

template <class Body>
grove::spawned spawn_holding(int kind, const std::shared_ptr<int>& token, Body body) {
  switch (kind) {
    case 0: return grove::spawn_monitor([token, body] { body(); });
    case 1: return grove::spawn_monitor(large_callable<Body>{token, body});
    default: return grove::spawn_monitor(over_aligned_callable<Body>{token, body});
  }
}

// Counts what happens to copies of itself, and sends from its destructor when a process other than
// its maker destroys it.
struct counted_callable {
  struct counts {
    std::atomic<int> copies{0}, moves{0}, destroyed{0};
  };
  counts* c;
  grove::pid maker = grove::self();
  explicit counted_callable(counts* c_) : c(c_) {}
  counted_callable(const counted_callable& o) : c(o.c), maker(o.maker) { c->copies.fetch_add(1); }
  counted_callable(counted_callable&& o) noexcept : c(o.c), maker(o.maker) { c->moves.fetch_add(1); }
  ~counted_callable() {
    c->destroyed.fetch_add(1);
    if (grove::self() != maker) grove::send(maker, go{});
  }
  void operator()() {}
};
}  // namespace

TEST_CASE("a process's callable on the heap is destroyed once, before its monitors hear of the exit") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  for (int kind = 0; kind < 3; ++kind) {
    CAPTURE(kind);
    auto token = std::make_shared<int>(kind);
    // It returns: the callable is destroyed by the exit protocol, after the body's frame is gone.
    auto s = spawn_holding(kind, token, [self] { grove::send(self, go{}); });
    grove::receive([](go) {});
    CHECK(grove::receive([](grove::down d) { return d; }).reason.is_normal());
    CHECK(token.use_count() == 1);

    // Killed while it waits, after migrating between workers (yields) and parking with its stack
    // image saved.
    s = spawn_holding(kind, token, [self] {
      for (int i = 0; i < 10; ++i) grove::yield();
      grove::send(self, go{});
      grove::receive([](int) {});
    });
    grove::receive([](go) {});
    CHECK(token.use_count() == 2);
    grove::exit(s.pid, grove::exit_reason::kill());
    CHECK(grove::receive([](grove::down d) { return d; }).reason.is_killed());
    CHECK(token.use_count() == 1);

    // It swallows its kill until the runtime ends it without unwinding: the callable is destroyed
    // all the same.
    s = spawn_holding(kind, token, [self] { signal_then_swallow_every_exit(self); });
    grove::receive([](go) {});
    grove::exit(s.pid, grove::exit_reason::kill());
    CHECK(grove::receive([](grove::down d) { return d; }).reason.is_killed());
    CHECK(token.use_count() == 1);
  }
}

TEST_CASE("a callable with code of its own is constructed once by spawn and never copied or moved after, so its destructor runs once in the process") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  counted_callable::counts c;
  {
    counted_callable f(&c);
    auto s = grove::spawn_monitor(std::move(f));  // moved once, into the process's storage
    grove::receive([](go) {});                     // its destructor's send, from the process
    CHECK(grove::receive([](grove::down d) { return d; }).from == s.pid);
  }
  CHECK(c.copies == 0);
  CHECK(c.moves == 1);
  CHECK(c.destroyed == 2);  // ours (moved from) and the process's
  CHECK(grove::receive([](go) { return true; }, grove::after(std::chrono::milliseconds(0), [] { return false; })) == false);
}

TEST_CASE("a small trivially copyable callable keeps its captures across migrations, evictions and sleeps") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  // 200 processes on the default number of stack slots: their images are copied out (whole while
  // they wait for a message, as differences while they sleep) and back, on any worker.
  const int n = 200;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t a = 0x0123456789abcdefULL * static_cast<std::uint64_t>(i + 1), b = ~a;
    auto body = [self, a, b] {
      bool intact = true;
      for (int round = 0; round < 6; ++round) {
        if (round % 2) grove::sleep_for(std::chrono::microseconds(200));
        else grove::yield();
        intact = intact && b == ~a && self != grove::self();
      }
      grove::send(self, std::make_pair(a, intact));
    };
    static_assert(sizeof body == 32 && std::is_trivially_copyable_v<decltype(body)>);  // the largest kept in the PCB
    grove::spawn(body);
  }
  int intact = 0;
  for (int i = 0; i < n; ++i) intact += grove::receive([](std::pair<std::uint64_t, bool> r) { return r.second; });
  CHECK(intact == n);
}

TEST_CASE("exception state stays with its process: one parked in a catch block or mid-unwinding; one started meanwhile has none") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  struct parks_while_unwinding {
    grove::pid self;
    ~parks_while_unwinding() {
      grove::yield();
      grove::send(self, std::uncaught_exceptions() == 1 ? std::string("unwinding ok") : std::string("unwinding lost"));
    }
  };
  const int n = 8;
  for (int i = 0; i < n; ++i) {
    grove::spawn([self, i] {
      try {
        throw std::runtime_error("caught " + std::to_string(i));
      } catch (const std::exception&) {
        // Started while this one holds a caught exception (maybe straight from it, on its worker).
        const grove::pid me2 = grove::self();
        grove::spawn([me2] { grove::send(me2, std::current_exception() == nullptr && std::uncaught_exceptions() == 0); });
        const bool fresh_ok = grove::receive([](bool b) { return b; });
        for (int k = 0; k < 5; ++k) grove::yield();
        std::string what;
        try {
          throw;
        } catch (const std::exception& e) {
          what = e.what();
        }
        grove::send(self, fresh_ok && what == "caught " + std::to_string(i) ? std::string("catch ok") : std::string("catch lost"));
      }
      try {
        parks_while_unwinding guard{self};
        throw 1;
      } catch (int) {
      }
    });
  }
  int catch_ok = 0, unwinding_ok = 0;
  for (int i = 0; i < 2 * n; ++i) {
    const std::string s = grove::receive([](std::string s) { return s; });
    catch_ok += s == "catch ok";
    unwinding_ok += s == "unwinding ok";
  }
  CHECK(catch_ok == n);
  CHECK(unwinding_ok == n);
}
