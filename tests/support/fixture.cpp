#include "support/fixture.hpp"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include <unistd.h>

namespace grove_test {

// Samples system_info() every 100 ms from its own thread. If processes are queued (the inject queue
// or a worker's run queue) and the workers' total context-switch count has not moved for
// stall_limit, no worker is taking queued work although there is some: it prints the snapshot once
// and reports the stall. A worker held by one long process does not count (its switches stop, but
// the other workers steal its queue and switch); the tests have no process that computes for
// seconds without a runtime call. Reading the counters wakes nothing, so the watch cannot hide a
// lost wake-up.
class stall_watch {
 public:
  static constexpr std::chrono::seconds stall_limit{10};

  stall_watch() : thread_([this] { run(); }) {}
  ~stall_watch() {
    {
      std::lock_guard<std::mutex> g(lock_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  bool stalled() const {
    std::lock_guard<std::mutex> g(lock_);
    return stalled_;
  }

 private:
  void run() {
    std::uint64_t last_switches = ~0ull;
    auto unchanged_since = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> g(lock_);
    // A periodic sample with an exit signal, not a sleep that orders anything.
    while (!cv_.wait_for(g, std::chrono::milliseconds(100), [this] { return done_; })) {
      grove::system_details s;
      try {
        s = grove::system_info();
      } catch (const grove::error&) {
        continue;  // stopped: the fixture ends the watch before stopping, but a test may stop earlier
      }
      std::size_t queued = s.global_queue_length;
      for (auto& w : s.workers) queued += w.run_queue_length;
      const auto now = std::chrono::steady_clock::now();
      if (queued == 0 || s.context_switches != last_switches) {
        last_switches = s.context_switches;
        unchanged_since = now;
        continue;
      }
      if (now - unchanged_since < stall_limit || stalled_) continue;
      stalled_ = true;
      std::string text = "grove_test: STALL: processes queued but no context switch for 10 s:";
      text += " inject queue " + std::to_string(s.global_queue_length);
      for (std::size_t i = 0; i < s.workers.size(); ++i)
        text += "; worker " + std::to_string(i) + " queue " + std::to_string(s.workers[i].run_queue_length) +
                " switches " + std::to_string(s.workers[i].context_switches) + " parks " +
                std::to_string(s.workers[i].parks);
      std::fprintf(stderr, "%s\n", text.c_str());
    }
  }

  mutable std::mutex lock_;
  std::condition_variable cv_;
  bool done_ = false;     // guarded by lock_
  bool stalled_ = false;  // guarded by lock_
  std::thread thread_;
};

unsigned test_workers() {
  const char* s = std::getenv("GROVE_TEST_WORKERS");
  int n = s ? std::atoi(s) : 2;
  return n > 0 ? static_cast<unsigned>(n) : 2u;
}

unsigned stress_scale() {
  const char* s = std::getenv("GROVE_STRESS_SCALE");
  int n = s ? std::atoi(s) : 1;
  return n > 0 ? static_cast<unsigned>(n) : 1u;
}

runtime_fixture::runtime_fixture(grove::runtime_config config) {
  if (config.workers == 0) config.workers = test_workers();
  rt_.emplace(config);
  watch_ = std::make_unique<stall_watch>();
}

void runtime_fixture::end_watch() {
  if (!watch_) return;
  CHECK_MESSAGE(!watch_->stalled(), "queued processes were not run for 10 s (a lost wake-up)");
  watch_.reset();
}

grove::stop_report runtime_fixture::stop(std::chrono::milliseconds deadline) {
  end_watch();
  stopped_ = true;
  return rt_->stop(deadline);
}

runtime_fixture::~runtime_fixture() {
  end_watch();
  if (!stopped_) {
    grove::stop_report r = rt_->stop(std::chrono::seconds(10));
    CHECK(r.clean);
  }
  rt_.reset();
  grove::resource_usage u = grove::resources_in_use();
  CHECK_MESSAGE(u.processes == 0, "process control blocks leaked");
  CHECK_MESSAGE(u.stack_images == 0, "stack images leaked");
  CHECK_MESSAGE(u.arenas == 0, "arenas leaked");
  CHECK_MESSAGE(u.timers == 0, "timers leaked");
  CHECK_MESSAGE(u.messages == 0, "message nodes leaked");
}

struct computing_process::state {
  std::atomic<bool> stop{false};
  std::atomic<long> slices{0};
};

computing_process::computing_process(std::chrono::microseconds stretch) : state_(std::make_shared<state>()) {
  pid_ = grove::spawn([s = state_, stretch] {
    while (!s->stop.load(std::memory_order_acquire)) {  // acquire: pairs with the destructor's release (a flag)
      const auto until = std::chrono::steady_clock::now() + stretch;
      while (std::chrono::steady_clock::now() < until) {
      }
      grove::yield();
      s->slices.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count, nothing is read through it
    }
  });
}

computing_process::~computing_process() {
  state_->stop.store(true, std::memory_order_release);
  CHECK(wait_until([&] { return !grove::is_alive(pid_); }));
}

std::shared_ptr<const std::atomic<long>> computing_process::slices() const {
  return std::shared_ptr<const std::atomic<long>>(state_, &state_->slices);
}

struct syscall_blocker::state {
  int fds[2] = {-1, -1};
  bool released = false;                    // the test's side only
  std::atomic<int> worker{-1};
  std::atomic<bool> over{false};
  ~state() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
};

syscall_blocker::syscall_blocker() : state_(std::make_shared<state>()) { REQUIRE(::pipe(state_->fds) == 0); }

syscall_blocker::~syscall_blocker() {
  if (!state_->released && ::write(state_->fds[1], "x", 1) == 1) (void)wait_until([&] { return over(); });
}

grove::pid syscall_blocker::spawn() const {
  return grove::spawn([s = state_] {
    s->worker.store(grove::process_info(grove::self())->worker);  // seq_cst: read from other workers, plainly
    char c;
    (void)!::read(s->fds[0], &c, 1);  // holds this worker until release() writes
    s->over.store(true, std::memory_order_release);  // release: a flag the test polls
  });
}

void syscall_blocker::release() {
  if (state_->released) return;
  state_->released = true;
  REQUIRE(::write(state_->fds[1], "x", 1) == 1);
  CHECK(wait_until([&] { return over(); }));  // the blocked worker is free again
}

int syscall_blocker::worker() const { return state_->worker.load(); }  // seq_cst: as the store

bool syscall_blocker::over() const { return state_->over.load(std::memory_order_acquire); }  // acquire: the flag

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    // Polling a predicate with a deadline, not sleeping to synchronise; inside a Grove process it
    // yields to the other processes (a thread yield would keep its worker from them).
    if (!grove::self().is_null()) {
      grove::yield();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace grove_test
