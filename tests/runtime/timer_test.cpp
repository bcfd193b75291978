// Timers: sleep_for, send_after and its cancellation.
#include "support/fixture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {
struct tick {
  int n;
};
}  // namespace

TEST_CASE("sleep_for sleeps at least its time, leaves messages in the mailbox, and still obeys kill") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  grove::spawn([self] {
    grove::send(grove::self(), 1);  // stays in the mailbox through the sleep
    auto t0 = std::chrono::steady_clock::now();
    grove::sleep_for(100ms);
    double slept = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int kept = grove::receive([](int n) { return n; }, grove::after(0ms, [] { return -1; }));
    grove::send(self, std::pair<double, int>(slept, kept));
  });
  auto [slept, kept] = grove::receive([](std::pair<double, int> r) { return r; });
  CHECK(slept >= 0.1);
  CHECK(kept == 1);

  auto sleeper = grove::spawn_monitor([] { grove::sleep_for(std::chrono::hours(1)); });
  grove::exit(sleeper.pid, grove::exit_reason::kill());
  auto d = grove::receive([](grove::down d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.is_killed());
}

TEST_CASE("send_after delivers after the delay, and cancel_timer stops a pending one") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto t0 = std::chrono::steady_clock::now();
  grove::send_after(me.pid(), tick{1}, 50ms);
  auto cancelled = grove::send_after(me.pid(), tick{2}, 100ms);
  CHECK(grove::cancel_timer(cancelled));
  CHECK_FALSE(grove::cancel_timer(cancelled));  // once only
  CHECK(grove::receive([](tick t) { return t.n; }) == 1);
  CHECK(std::chrono::steady_clock::now() - t0 >= 50ms);
  // A later timer (sent after the cancelled one's deadline) arrives, and the cancelled one never does.
  grove::send_after(me.pid(), tick{3}, 200ms);
  CHECK(grove::receive([](tick t) { return t.n; }) == 3);
  bool stray = grove::receive([](tick) { return true; }, grove::after(0ms, [] { return false; }));
  CHECK_FALSE(stray);
}

TEST_CASE("cancelling a timer that has fired returns false, and its message is delivered once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto t = grove::send_after(me.pid(), tick{7}, 1ms);
  CHECK(grove::receive([](tick t) { return t.n; }) == 7);
  CHECK_FALSE(grove::cancel_timer(t));
  CHECK_FALSE(grove::cancel_timer(grove::timer_ref{}));
}

TEST_CASE("timers armed by processes on every worker all fire") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid self = me.pid();
  const int n = 200;
  for (int i = 0; i < n; ++i)
    grove::spawn([self, i] { grove::send_after(self, tick{i}, std::chrono::milliseconds(2 * i)); });
  int received = 0;
  for (; received < n; ++received) {
    bool got = grove::receive([](tick) { return true; }, grove::after(patience, [] { return false; }));
    if (!got) break;
  }
  CHECK(received == n);
}

TEST_CASE("a pending send_after timer is dropped at stop, and its message is freed") {
  grove_test::runtime_fixture rt;
  {
    grove::scoped_process me;
    grove::send_after(me.pid(), std::string(1000, 'x'), std::chrono::hours(1));
    CHECK(grove::resources_in_use().timers == 1);
  }
  rt.stop();
  CHECK(grove::resources_in_use().timers == 0);
}

TEST_CASE("a send_after from a foreign thread fires even when it races a worker going to sleep") {
  // The runtime is idle between rounds, so its workers are spinning, parking or asleep when the
  // timer is added; the jitter moves the send_after across that whole sequence. A worker that read
  // its wheel's next expiry, then got the new, earlier timer before it slept, must not sleep past it
  // (there is no other timer to wake it).
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const int rounds = 2000 * static_cast<int>(grove_test::stress_scale());
  int late = 0;
  for (int i = 0; i < rounds && late == 0; ++i) {
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(i % 50);
    while (std::chrono::steady_clock::now() < spin_until) {
    }
    grove::send_after(me.pid(), tick{i}, std::chrono::microseconds(i % 7 * 10));
    int got = grove::receive([](tick t) { return t.n; }, grove::after(patience, [] { return -1; }));
    if (got != i) ++late;
  }
  CHECK(late == 0);
}

namespace {

// A process arms a 10 ms receive timeout and parks; a process it spawned then blocks its worker in
// read(2) until the test writes. The timeout must fire on another worker during the read. Up to 10
// tries: the blocker is spawned into the waiter's LIFO slot and runs on its worker when the waiter
// parks, unless another worker takes it first (then the try does not count).
void check_timeout_fires_during_a_syscall(grove::pid self) {
  struct outcome {
    bool timed_out = false;
    bool syscall_over = false;
    bool same_worker = false;  // the blocker held the worker whose wheel has the timer
  };
  bool checked = false;
  for (int attempt = 0; attempt < 10 && !checked; ++attempt) {
    auto blocker = std::make_shared<grove_test::syscall_blocker>();
    grove::spawn([=] {
      const int mine = grove::process_info(grove::self())->worker;
      blocker->spawn();  // into this worker's LIFO slot: runs here when the waiter parks
      const bool timed_out = grove::receive([](tick) { return false; }, grove::after(10ms, [] { return true; }));
      grove::send(self, outcome{timed_out, blocker->over(), blocker->worker() == mine});
    });
    const outcome o = grove::receive([](outcome r) { return r; }, grove::after(patience, [] { return outcome{}; }));
    blocker->release();
    if (!o.same_worker) continue;
    checked = true;
    CHECK(o.timed_out);
    CHECK_FALSE(o.syscall_over);  // it fired while its worker was still blocked
  }
  CHECK(checked);
}

}  // namespace

TEST_CASE("a receive timeout armed on a worker that then blocks in a syscall fires on another worker, during the syscall") {
  if (grove_test::test_workers() < 2) return;  // one blocked worker is every worker: nobody can take over
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  check_timeout_fires_during_a_syscall(me.pid());
}

TEST_CASE("that timeout fires too while the other workers idle beside a process waiting on an fd") {
  // With a process waiting on an fd, idle workers do not simply sleep in the poller: one spins and
  // reaps it, another sleeps on its condition variable for at most 1 ms instead (it cedes the
  // poller), others sleep until woken (runtime/src/parking.cpp). Three workers: one blocked, the
  // other two in those roles; between them they must keep the blocked worker's timers.
  grove_test::runtime_fixture rt({.workers = 3});
  grove::scoped_process me;
  int never[2];
  REQUIRE(::pipe2(never, O_NONBLOCK | O_CLOEXEC) == 0);
  const grove::pid fd_waiter = grove::spawn([fd = never[0]] { (void)grove::io::wait_readable(fd, patience); });
  REQUIRE(grove_test::wait_until([&] {
    auto p = grove::process_summary_of(fd_waiter);
    return p && p->status == grove::process_status::waiting && p->waiting_on == grove::wait_reason::io;
  }));
  check_timeout_fires_during_a_syscall(me.pid());
  CHECK(grove::is_alive(fd_waiter));  // it waited on its fd throughout
  REQUIRE(::write(never[1], "x", 1) == 1);
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(fd_waiter); }));
  ::close(never[0]);
  ::close(never[1]);
}

TEST_CASE("a timer on a worker busy with a computing process fires at its next scheduling round, not rounds later") {
  // One worker: nobody else can fire its timers. A process computes for 5 ms between yields (each
  // scheduling round lasts that long); another sleeps 2 ms at a time and counts the computing
  // slices that passed during each sleep. Its timer is due during the first slice and fires at the
  // round after it: about two slices. The worker used to read the clock only every 16th round while
  // a timer seemed far, so a sleep outlasted up to 16 slices (80 ms for a 2 ms sleep).
  grove_test::runtime_fixture rt({.workers = 1});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove_test::computing_process busy(5ms);
  grove::spawn([slices = busy.slices(), self] {
    long most = 0;
    for (int i = 0; i < 10; ++i) {
      const long before = slices->load(std::memory_order_relaxed);  // relaxed: a count
      grove::sleep_for(2ms);
      most = std::max(most, slices->load(std::memory_order_relaxed) - before);
    }
    grove::send(self, most);
  });
  const long most = grove::receive([](long n) { return n; }, grove::after(patience, [] { return -1L; }));
  CHECK(most >= 0);
  CHECK(most <= 4);
}

TEST_CASE("a timer on a worker blocked in a syscall fires while every other worker computes, within a round or two of theirs") {
  // Two workers: one blocked in read(2), the other running a process that computes 5 ms between
  // yields, so no worker is idle and nobody sleeps in the poller to fire due wheels. The busy worker
  // must take over the blocked worker's due timer at its next scheduling round. It used to look at
  // other workers' wheels only every 16th round, so a 2 ms receive timeout waited up to 16 slices
  // (80 ms); the bound of 4 slices leaves room for a slow machine. When the blocked worker is slow to
  // reach the blocker (a loaded machine), it fires the timer itself first and the woken waiter is
  // queued behind the blocker: then the busy worker must take the waiter from its queue
  // (scheduler_test.cpp, "queued behind a worker blocked in a syscall").
  grove_test::runtime_fixture rt({.workers = 2});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  grove_test::computing_process busy(5ms);
  const auto slices = busy.slices();
  // The computing process holds a worker before the waiter comes: the waiter goes to the other one.
  REQUIRE(grove_test::wait_until([&] { return slices->load(std::memory_order_relaxed) > 0; }));
  struct outcome {
    bool timed_out = false;
    bool syscall_over = false;
    bool same_worker = false;  // the blocker held the worker whose wheel has the timer
    long slices_passed = -1;   // the computing process's slices between arming and firing
  };
  bool checked = false;
  for (int attempt = 0; attempt < 10 && !checked; ++attempt) {
    auto blocker = std::make_shared<grove_test::syscall_blocker>();
    grove::spawn([=] {
      const int mine = grove::process_info(grove::self())->worker;
      blocker->spawn();  // into this worker's LIFO slot: runs here when the waiter parks
      const long before = slices->load(std::memory_order_relaxed);  // relaxed: a count
      const bool timed_out = grove::receive([](tick) { return false; }, grove::after(2ms, [] { return true; }));
      const long passed = slices->load(std::memory_order_relaxed) - before;
      grove::send(self, outcome{timed_out, blocker->over(), blocker->worker() == mine, passed});
    });
    const outcome o = grove::receive([](outcome r) { return r; }, grove::after(patience, [] { return outcome{}; }));
    blocker->release();
    if (!o.same_worker) continue;
    checked = true;
    CHECK(o.timed_out);
    CHECK_FALSE(o.syscall_over);  // it fired while its worker was still blocked
    CHECK(o.slices_passed >= 0);
    CHECK(o.slices_passed <= 4);
  }
  CHECK(checked);
}
