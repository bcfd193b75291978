// inject_queue.hpp: the shared queue of runnable processes that belong to no worker yet.
//
// Fed by foreign threads (spawn, send and timers from outside the runtime) and by workers whose local
// run queue is full; drained by every worker (every 61st scheduling round, and whenever the local
// queue is empty, as Go's global queue). Many producers and many consumers on a few queues: the case
// moodycamel's ConcurrentQueue is built for (DESIGN-NOTES §3). The one file that includes it.
#pragma once

#include <cstddef>

#include <concurrentqueue/concurrentqueue.h>

namespace grove::internal {

struct process;

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

}  // namespace grove::internal
