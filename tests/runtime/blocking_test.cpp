// run_blocking (grove/blocking.hpp): a call that blocks runs off the workers, so every worker's
// process may block at once and the rest of the runtime keeps running; the caller's locals stay
// valid by reference while other processes reuse the execution stacks; results and exceptions come
// back; signals that arrive meanwhile act when the call returns; the pool is bounded; stop() with a
// call stuck names it and returns. The blocking calls here are reads from pipes the test controls,
// so each one ends exactly when the test lets it.
#include "support/fixture.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};
struct finished {
  int value;
};

// A pipe whose read end blocks: each byte written releases one blocked read.
class gate {
 public:
  gate() { REQUIRE(::pipe(fds_) == 0); }
  ~gate() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  // Blocks the calling thread until a byte comes; returns it.
  char pass() const {
    char b = 0;
    REQUIRE(::read(fds_[0], &b, 1) == 1);
    return b;
  }
  void open(std::size_t n = 1, char b = 'x') const {
    const std::string bytes(n, b);
    REQUIRE(::write(fds_[1], bytes.data(), n) == static_cast<ssize_t>(n));
  }

 private:
  int fds_[2];
};

}  // namespace

TEST_CASE("run_blocking returns fn's value, rethrows what it throws, and works on the caller's locals") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove::spawn([self] {
    std::vector<int> local{1, 2, 3};
    const int sum = grove::run_blocking([&] {
      local.push_back(4);  // the caller's vector, by reference
      return local[0] + local[1] + local[2] + local[3];
    });
    std::string what;
    try {
      grove::run_blocking([]() -> int { throw std::runtime_error("disk on fire"); });
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    int& ref = grove::run_blocking([&]() -> int& { return local[1]; });
    ref = 20;
    grove::run_blocking([] {});  // void
    grove::send(self, finished{sum * 1000 + static_cast<int>(local.size()) * 100 + local[1] + (what == "disk on fire")});
  });
  CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return -1; })) == 10 * 1000 + 400 + 21);
}

TEST_CASE("while every worker's process is blocked in run_blocking, other processes run and timers fire") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  gate g;
  const unsigned blocked = 2 * grove_test::test_workers();
  std::atomic<unsigned> inside{0};
  for (unsigned i = 0; i < blocked; ++i)
    grove::spawn([&, self] {
      const char b = grove::run_blocking([&] {
        ++inside;
        return g.pass();
      });
      grove::send(self, finished{b});
    });
  REQUIRE(grove_test::wait_until([&] { return inside.load() == blocked; }));
  // The runtime is still all there: a process that sleeps, and a round trip through two others.
  grove::spawn([self] {
    grove::sleep_for(20ms);
    grove::send(self, go{});
  });
  CHECK(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
  const grove::pid echo = grove::spawn([] { grove::receive([](grove::pid from) { grove::send(from, finished{-7}); }); });
  grove::send(echo, self);
  CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return 0; })) == -7);
  g.open(blocked, 'k');
  for (unsigned i = 0; i < blocked; ++i)
    CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return 0; })) == 'k');
}

TEST_CASE("the caller's stack stays intact while other processes reuse the execution stacks") {
  // Few execution stacks and many processes: parked stacks are copied out and their slots reused,
  // except the one whose stack a blocking call is using.
  grove_test::runtime_fixture rt({.stack_slots = 2 * grove_test::test_workers() + 1});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  gate g;
  std::atomic<bool> inside{false};
  grove::spawn([&, self] {
    std::array<std::uint64_t, 2048> mine;  // 16 KiB on the caller's stack, written by the blocking thread
    grove::run_blocking([&] {
      inside = true;
      g.pass();
      for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = i * 0x9E3779B97F4A7C15ull;
    });
    bool ok = true;
    for (std::size_t i = 0; i < mine.size(); ++i) ok = ok && mine[i] == i * 0x9E3779B97F4A7C15ull;
    grove::send(self, finished{ok ? 1 : 0});
  });
  REQUIRE(grove_test::wait_until([&] { return inside.load(); }));
  // 200 processes, each with its own pattern on its stack, parking and resuming on the few slots.
  constexpr int others = 200;
  for (int k = 0; k < others; ++k)
    grove::spawn([self, k] {
      std::array<std::uint64_t, 1024> theirs;
      for (std::size_t i = 0; i < theirs.size(); ++i) theirs[i] = i ^ static_cast<std::uint64_t>(k);
      for (int round = 0; round < 3; ++round) grove::sleep_for(1ms);
      bool ok = true;
      for (std::size_t i = 0; i < theirs.size(); ++i) ok = ok && theirs[i] == (i ^ static_cast<std::uint64_t>(k));
      grove::send(self, finished{ok ? 2 : 0});
    });
  int good_others = 0;
  for (int k = 0; k < others; ++k)
    good_others += grove::receive([](finished f) { return f.value == 2; }, grove::after(patience, [] { return false; }));
  CHECK(good_others == others);
  g.open();  // now the blocking thread writes the caller's array
  CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return -1; })) == 1);
}

TEST_CASE("processes spawned while a blocking call keeps its stack slot run on the other slots") {
  // One slot per worker, plus one: the whole share of the caller's worker is the slot its blocking
  // call keeps. New processes must not be bound to that slot to wait for the call (here the call
  // ends only after all of them have run, so waiting for it is a deadlock).
  const unsigned workers = grove_test::test_workers();
  grove_test::runtime_fixture rt({.stack_slots = workers + 1});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  gate g;
  std::atomic<bool> inside{false};
  grove::spawn([&, self] {
    grove::run_blocking([&] {
      inside = true;
      g.pass();
    });
    grove::send(self, finished{1});
  });
  REQUIRE(grove_test::wait_until([&] { return inside.load(); }));
  constexpr int others = 100;
  for (int k = 0; k < others; ++k)
    grove::spawn([self] {
      grove::sleep_for(1ms);  // parks and resumes on its slot
      grove::send(self, finished{2});
    });
  int ran = 0;
  while (ran < others && grove::receive([](finished f) { return f.value == 2; }, grove::after(patience, [] { return false; })))
    ++ran;
  CHECK(ran == others);
  g.open();
  CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return -1; })) == 1);
}

TEST_CASE("a kill that arrives during run_blocking acts when fn returns; messages wait in the mailbox") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  gate g;
  std::atomic<bool> inside{false}, returned{false}, went_on{false};
  // One that is killed, one that gets a message meanwhile.
  auto victim = grove::spawn_monitor([&] {
    grove::run_blocking([&] {
      inside = true;
      g.pass();
      returned = true;
    });
    went_on = true;  // never: the kill acts first
  });
  REQUIRE(grove_test::wait_until([&] { return inside.load(); }));
  grove::exit(victim.pid, grove::exit_reason::kill());
  CHECK(grove::is_alive(victim.pid));  // fn still runs on the caller's stack: the caller cannot end yet
  g.open();
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.is_killed());
  CHECK(returned.load());
  CHECK_FALSE(went_on.load());

  inside = false;
  const grove::pid reader = grove::spawn([&, self] {
    grove::run_blocking([&] {
      inside = true;
      g.pass();
    });
    grove::receive([&](int n) { grove::send(self, finished{n}); }, grove::after(0ms, [&] { grove::send(self, finished{-1}); }));
  });
  REQUIRE(grove_test::wait_until([&] { return inside.load(); }));
  grove::send(reader, 42);
  g.open();
  CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return 0; })) == 42);
}

TEST_CASE("blocking_threads bounds the calls that run at once; the others wait their turn and all complete") {
  grove_test::runtime_fixture rt({.blocking_threads = 2});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  gate g;
  std::atomic<int> running{0}, most{0};
  constexpr int calls = 6;
  for (int i = 0; i < calls; ++i)
    grove::spawn([&, self, i] {
      grove::run_blocking([&] {
        const int now = ++running;
        for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        g.pass();
        --running;
      });
      grove::send(self, finished{i});
    });
  REQUIRE(grove_test::wait_until([&] { return running.load() == 2; }));
  g.open(calls);
  int done = 0;
  for (int i = 0; i < calls; ++i) done += grove::receive([](finished) { return 1; }, grove::after(patience, [] { return 0; }));
  CHECK(done == calls);
  CHECK(most.load() == 2);
}

TEST_CASE("run_blocking on a foreign thread runs fn right there") {
  grove_test::runtime_fixture rt;
  const auto here = std::this_thread::get_id();
  CHECK(grove::run_blocking([] { return std::this_thread::get_id(); }) == here);
  grove::scoped_process me;
  CHECK(grove::run_blocking([] { return std::this_thread::get_id(); }) == here);
}

TEST_CASE("stop with a call stuck in run_blocking returns by its deadline and names the caller") {
  gate g;
  std::atomic<bool> inside{false}, returned{false};
  grove::pid caller;
  {
    grove_test::runtime_fixture rt;
    caller = grove::spawn([&] {
      grove::run_blocking([&] {
        inside = true;
        g.pass();
        returned = true;
      });
    });
    REQUIRE(grove_test::wait_until([&] { return inside.load(); }));
    const auto t0 = std::chrono::steady_clock::now();
    grove::stop_report r = rt.stop(300ms);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK_FALSE(r.clean);
    REQUIRE(r.left_behind.size() == 1);
    CHECK(r.left_behind[0] == caller);
    CHECK(r.workers_left_running == 1);  // worker 0, asleep until the call returns
    g.open();  // the call returns after the runtime has stopped: the caller unwinds on a worker kept for it
    CHECK(grove_test::wait_until([&] { return returned.load(); }));
    CHECK(grove_test::wait_until([] {  // and everything it held is released (the fixture checks the rest)
      auto u = grove::resources_in_use();
      return u.processes == 0 && u.stack_images == 0 && u.arenas == 0 && u.messages == 0;
    }));
  }
  // A new runtime starts and works while the old one's blocking thread may still be finishing.
  grove_test::runtime_fixture next;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove::spawn([self] { grove::send(self, grove::run_blocking([] { return finished{5}; })); });
  CHECK(grove::receive([](finished f) { return f.value; }, grove::after(patience, [] { return 0; })) == 5);
}
