// inject_queue.hpp: the shared queue of runnable processes that belong to no worker yet.
//
// Fed by foreign threads (spawn, send and timers from outside the runtime) and by workers whose local
// run queue is full; drained by every worker (every 61st scheduling round, and whenever the local
// queue is empty, as Go's global queue). Many producers and many consumers on a few queues: the case
// moodycamel's ConcurrentQueue is built for (runtime/DESIGN.md §3). The one file that includes it.
//
// Under ThreadSanitizer the queue is a mutex and a deque instead: moodycamel publishes its slots with
// standalone fences, which TSan does not model, so it reports races that are not there (seen here on
// ImplicitProducer::enqueue/dequeue). The rest of the runtime stays fully checked that way.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#include <deque>
#include <mutex>
#else
#include <concurrentqueue/concurrentqueue.h>
#endif

namespace grove::internal {

struct process;

#if !defined(__SANITIZE_THREAD__)
class inject_queue {
 public:
  void push(process* p) { queue_.enqueue(p); }
  void push_bulk(process* const* ps, std::size_t n) { queue_.enqueue_bulk(ps, n); }
  bool try_pop(process*& p) { return queue_.try_dequeue(p); }
  std::size_t try_pop_bulk(process** out, std::size_t max) { return queue_.try_dequeue_bulk(out, max); }
  std::size_t size_approx() const { return queue_.size_approx(); }

 private:
  moodycamel::ConcurrentQueue<process*> queue_;
};
#else
class inject_queue {
 public:
  void push(process* p) {
    std::lock_guard<std::mutex> g(lock_);
    queue_.push_back(p);
  }
  void push_bulk(process* const* ps, std::size_t n) {
    std::lock_guard<std::mutex> g(lock_);
    queue_.insert(queue_.end(), ps, ps + n);
  }
  bool try_pop(process*& p) { return try_pop_bulk(&p, 1) == 1; }
  std::size_t try_pop_bulk(process** out, std::size_t max) {
    std::lock_guard<std::mutex> g(lock_);
    std::size_t n = 0;
    for (; n < max && !queue_.empty(); ++n) {
      out[n] = queue_.front();
      queue_.pop_front();
    }
    return n;
  }
  std::size_t size_approx() const {
    std::lock_guard<std::mutex> g(lock_);
    return queue_.size();
  }

 private:
  mutable std::mutex lock_;
  std::deque<process*> queue_;  // guarded by lock_
};
#endif

}  // namespace grove::internal
