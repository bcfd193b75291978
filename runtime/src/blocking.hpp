// blocking.hpp: the threads that run run_blocking's calls (design in blocking.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <grove/pid.hpp>
#include <grove/runtime.hpp>

namespace grove::internal {

// One call, on the calling process's stack for as long as the process waits for it.
struct blocking_job {
  void (*call)(void*) noexcept;
  void* ctx;
  grove::pid waiter;
  grove::runtime::state* rt;
  std::atomic<bool> done{false};  // shared: set (release) by the blocking thread when the call has returned
};

class blocking_pool {
 public:
  explicit blocking_pool(unsigned max_threads);
  blocking_pool(const blocking_pool&) = delete;
  blocking_pool& operator=(const blocking_pool&) = delete;

  // Queues j; makes a thread if none is idle and there are fewer than the maximum. Throws
  // std::system_error if no thread exists and none can be made (then j is not queued).
  void submit(grove::runtime::state& rt, blocking_job* j);
  // runtime::stop: idle threads leave, busy ones when their job returns.
  void stop() noexcept;

 private:
  void serve();

  const unsigned max_threads_;
  std::mutex lock_;
  std::condition_variable cv_;
  std::deque<blocking_job*> queue_;  // guarded by lock_
  unsigned threads_ = 0;             // guarded by lock_
  unsigned idle_ = 0;                // guarded by lock_
  bool stopping_ = false;            // guarded by lock_
};

}  // namespace grove::internal
