// fixture.hpp: what every runtime test stands on.
//
//   TEST_CASE("...") {
//     grove_test::runtime_fixture rt;   // a runtime with GROVE_TEST_WORKERS workers (1, 2 or 4)
//     ...
//   }                                   // stops it and checks that nothing leaked
//
// Tests never sleep to synchronise: they wait for a predicate with wait_until (deadline in seconds)
// or receive with a timeout in seconds, and assert behaviour, never speed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>

#include <doctest/doctest.h>

#include <grove/grove.hpp>

namespace grove_test {

// Workers for this run (GROVE_TEST_WORKERS, default 2).
unsigned test_workers();
// A multiplier for stress sizes (GROVE_STRESS_SCALE, default 1; bench/ uses large values).
unsigned stress_scale();

class stall_watch;

// Starts a runtime; on destruction stops it and checks that every process, stack image, arena,
// timer and message node was released. While it runs, a watchdog (stall_watch, fixture.cpp) fails the test if
// runnable processes sit in the run queues while no worker resumes any process for 10 s: the
// signature of a lost wake-up, which otherwise shows only as a timeout somewhere else.
class runtime_fixture {
 public:
  explicit runtime_fixture(grove::runtime_config config = {});
  ~runtime_fixture();
  grove::runtime& get() { return *rt_; }
  grove::runtime* operator->() { return &*rt_; }
  // Stops now (the destructor then only checks).
  grove::stop_report stop(std::chrono::milliseconds deadline = std::chrono::seconds(10));

 private:
  void end_watch();

  std::optional<grove::runtime> rt_;
  std::unique_ptr<stall_watch> watch_;
  bool stopped_ = false;
};

// Polls `pred` until true or the timeout (seconds) passes; returns its last value. From a thread or
// from inside a process (which then yields between polls).
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A generous timeout for receives in tests: long enough never to fire on a loaded CI machine.
inline constexpr std::chrono::seconds patience{20};

// Receives one T (fails the test after `patience`).
template <class T>
T receive_one() {
  auto got = grove::receive([](T v) { return std::optional<T>(std::move(v)); },
                            grove::after(patience, [] { return std::optional<T>(); }));
  REQUIRE_MESSAGE(got.has_value(), "no message of the expected type");
  return std::move(*got);
}

// A process that computes for `stretch` at a time (spinning on the clock, no runtime call) and
// yields between stretches, so that each scheduling round of the worker running it lasts about
// `stretch`: the busy worker of a test. It counts the stretches done so far: a process on the same
// worker reads how many rounds passed while it waited (through slices(), a handle it may keep even
// if the test ends before it). The destructor stops the process and waits until it has exited.
class computing_process {
 public:
  explicit computing_process(std::chrono::microseconds stretch);
  ~computing_process();
  computing_process(const computing_process&) = delete;
  computing_process& operator=(const computing_process&) = delete;
  std::shared_ptr<const std::atomic<long>> slices() const;
  grove::pid pid() const { return pid_; }

 private:
  struct state;
  std::shared_ptr<state> state_;  // shared with the process, which may outlive a failed test
  grove::pid pid_;
};

// A worker held in a system call: spawn() (called from inside a process) spawns a process that
// records its worker and then blocks in read(2) on a pipe, holding that worker until release() (or
// the destructor) writes to the pipe; release() waits until the read has ended. A process spawned
// so goes to the spawner's LIFO slot, so it usually holds the spawner's worker once the spawner
// parks (callers check worker()). Processes that call spawn() hold it by a shared_ptr; the
// blocking process shares only its state, so either may outlive a failed test.
class syscall_blocker {
 public:
  syscall_blocker();
  ~syscall_blocker();  // releases it if the test has not
  syscall_blocker(const syscall_blocker&) = delete;
  syscall_blocker& operator=(const syscall_blocker&) = delete;
  grove::pid spawn() const;
  void release();
  int worker() const;  // where it blocks; -1 before it runs
  bool over() const;   // the read has ended

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace grove_test
