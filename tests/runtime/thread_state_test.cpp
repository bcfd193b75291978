// What code in a process may rely on about its thread (README, "Rules"): a pinned process keeps its
// worker thread, so errno and thread-locals stay its own across runtime calls; and no process may
// read through a pointer into another, parked process's stack.
#include "support/fixture.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};
struct stop_noise {};

struct errno_report {
  int wrong_errno = 0;  // reads of errno right after a failing close(-1) that did not say EBADF
  int workers_seen = 0; // distinct workers it ran on
};

// Fails a syscall and reads errno right after, then parks until the test's thread wakes it, `rounds`
// times. It reads errno through an address taken once: what GCC does when it hoists
// __errno_location() (a const function) out of a loop. A wake from a foreign thread goes through the
// shared inject queue, so an unpinned process resumes on whichever worker looks first, and then
// reads another thread's errno.
__attribute__((noinline)) errno_report errno_loop(grove::pid driver, int rounds) {
  errno_report r;
  std::vector<bool> seen(64, false);
  int* const my_errno = &errno;
  for (int i = 0; i < rounds; ++i) {
    if (::close(-1) != -1 || *my_errno != EBADF) ++r.wrong_errno;
    const int w = grove::process_info(grove::self())->worker;
    if (w >= 0 && w < 64 && !seen[static_cast<std::size_t>(w)]) {
      seen[static_cast<std::size_t>(w)] = true;
      ++r.workers_seen;
    }
    grove::send(driver, grove::self());
    grove::receive([](go) {});
  }
  return r;
}

// Keeps every worker busy resetting its errno to 0 between yields, so a stale errno address reads
// 0. Pinned, so that each writes only its own thread's errno.
std::vector<grove::pid> spawn_errno_noise(unsigned n) {
  std::vector<grove::pid> noise;
  for (unsigned i = 0; i < n; ++i)
    noise.push_back(grove::spawn(grove::spawn_options{.pinned = true}, [] {
      for (;;) {
        errno = 0;
        if (grove::receive([](stop_noise) { return true; }, grove::after(0ms, [] { return false; }))) return;
        grove::yield();
      }
    }));
  return noise;
}

}  // namespace

TEST_CASE("a pinned process stays on the worker that first ran it and reads its own errno after every park") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  auto noise = spawn_errno_noise(grove_test::test_workers());
  auto run = [self](bool pinned) {
    grove::spawn(grove::spawn_options{.pinned = pinned}, [self] { grove::send(self, errno_loop(self, 400)); });
    for (;;) {
      bool done = false;
      errno_report r{-1, -1};
      grove::receive([](grove::pid p) { grove::send(p, go{}); },  // wake it from this (foreign) thread
                     [&](errno_report got) {
                       r = got;
                       done = true;
                     },
                     grove::after(patience, [&] { done = true; }));
      if (done) return r;
    }
  };
  const errno_report pinned = run(true);
  CHECK(pinned.wrong_errno == 0);
  CHECK(pinned.workers_seen == 1);
#if !defined(__SANITIZE_THREAD__)  // an unpinned one reads another thread's errno: a data race, by design
  // The same loop unpinned, for comparison: it may migrate, and then reads a stale errno.
  const errno_report free_running = run(false);
  MESSAGE("unpinned: ran on " << free_running.workers_seen << " worker(s), " << free_running.wrong_errno
                              << " wrong errno reads of 400; pinned: 1 worker, 0 wrong");
#endif
  for (grove::pid p : noise) grove::send(p, stop_noise{});
}

TEST_CASE("pinned processes are woken, time out, are linked, killed and stopped like any other") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  // Woken by messages from other workers and from a foreign thread, and by its own timeout.
  grove::pid echo = grove::spawn(grove::spawn_options{.pinned = true}, [] {
    for (;;) {
      grove::receive([](grove::pid from) { grove::send(from, go{}); },
                     grove::after(5ms, [] {}));  // a timer on its home worker, firing again and again
    }
  });
  for (int i = 0; i < 200; ++i) {
    grove::spawn([echo, self] {
      grove::send(echo, grove::self());
      grove::receive([](go) {});
      grove::send(self, go{});
    });
  }
  for (int i = 0; i < 200; ++i) CHECK(grove::receive([](go) { return true; }, grove::after(patience, [] { return false; })));
  // A kill from outside ends it; a link carries its exit.
  auto watcher = grove::monitor(echo);
  grove::exit(echo, grove::exit_reason::kill());
  CHECK(grove::receive([](grove::down d) { return d.reason.is_killed(); }, grove::after(patience, [] { return false; })));
  (void)watcher;
  // And runtime::stop ends pinned processes too (the fixture's stop must be clean).
  for (int i = 0; i < 10; ++i) grove::spawn(grove::spawn_options{.pinned = true}, [] { grove::receive([](go) {}); });
}

// The read it shows races with the stack's new user (TSan reports exactly that) and reads memory
// that is no longer any live frame's (ASan reports that, in whichever redzone it lands).
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
TEST_CASE("a pointer into a parked process's stack reads another process's data once its stack is reused") {
  // The rule this shows (README, "Rules"): data another process may read must live in a message, the
  // heap or an arena, never in a parked process's locals. With one execution stack for all
  // processes, the parked owner's stack is copied out and the next process runs at the same
  // addresses.
  grove_test::runtime_fixture rt({.stack_slots = 1});
  grove::scoped_process me;
  const grove::pid self = me.pid();
  struct where {
    const volatile int* p;
  };
  grove::pid owner = grove::spawn([self] {
    volatile int local = 42;
    grove::send(self, where{&local});
    grove::receive([](go) {});  // parked: its stack is copied out when another process needs it
    grove::send(self, local == 42);
  });
  const volatile int* p = grove::receive([](where w) { return w.p; });
  // Another process runs on the same stack and writes over the region where `local` lived.
  grove::spawn([self] {
    volatile unsigned char scribble[32 * 1024];
    std::memset(const_cast<unsigned char*>(scribble), 0xAB, sizeof scribble);
    grove::send(self, go{});
  });
  grove::receive([](go) {});
  CHECK(*p != 42);  // what the pointer reads now belongs to whoever used the stack last
  grove::send(owner, go{});
  CHECK(grove::receive([](bool intact) { return intact; }, grove::after(patience, [] { return false; })));  // its own copy is intact
}
#endif
