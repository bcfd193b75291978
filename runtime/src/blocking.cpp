// blocking.cpp: run_blocking's threads (grove/blocking.hpp).
//
// A process calls run_blocking: it puts a job (on its own stack: the call, its context, its pid) in
// the pool's queue and parks with park_reason::offload, which makes its worker keep its execution
// stack slot held for it (stack_slots::keep_for) instead of releasing it: the stack stays resident
// and nobody else runs on it, so the blocking thread may use the caller's locals. A blocking thread
// takes the job, runs it, sets `done` (release) and wakes the process through the process table.
// The process resumes (its acquire of the kept slot succeeds at once), sees `done` (acquire), and
// only then acts on signals: an exit signal that came meanwhile ends it now, when nothing uses its
// stack any more. Wake-ups before `done` (a message, a signal) park it again.
//
// Threads are made as jobs need them, up to runtime_config::blocking_threads; an idle one waits for
// the next job. Each holds a reference on the runtime's state (as workers do), so a thread still in
// a job when the runtime stops keeps the state alive until its job returns; stop() tells idle ones
// to leave. Rejected: a thread per call (thread creation costs ~20-50 µs and is unbounded); running
// the job on a worker thread marked blocked (the worker's queues would need handing over at every
// call, Go's handoff; the pool keeps workers out of it).
#include "blocking.hpp"

#include <grove/blocking.hpp>
#include <grove/errc.hpp>
#include <grove/introspection.hpp>

#include "exit_protocol.hpp"
#include "receive.hpp"
#include "scheduler.hpp"

namespace grove::internal {

blocking_pool::blocking_pool(unsigned max_threads) : max_threads_(max_threads ? max_threads : 1) {}

void blocking_pool::submit(runtime_state& rt, blocking_job* j) {
  std::unique_lock<std::mutex> g(lock_);
  queue_.push_back(j);
  if (idle_ > 0) {
    cv_.notify_one();
    return;
  }
  if (threads_ >= max_threads_) return;  // the next thread to finish a job takes it
  ++threads_;
  g.unlock();
  try {
    std::thread([this, keep = rt.shared_from_this()] { serve(); }).detach();
  } catch (...) {
    std::lock_guard<std::mutex> g2(lock_);
    --threads_;
    if (threads_ == 0) {  // no thread will ever take it: refuse it
      queue_.erase(std::find(queue_.begin(), queue_.end(), j));
      throw;
    }
  }
}

void blocking_pool::serve() {
  std::unique_lock<std::mutex> g(lock_);
  for (;;) {
    while (queue_.empty() && !stopping_) {
      ++idle_;
      cv_.wait(g);
      --idle_;
    }
    if (queue_.empty()) break;  // stopping, and nothing left to run
    blocking_job* j = queue_.front();
    queue_.pop_front();
    g.unlock();
    j->call(j->ctx);
    runtime_state& rt = *j->rt;
    const pid waiter = j->waiter;
    j->done.store(true, std::memory_order_release);  // pairs with the waiter's acquire; j may be gone after this
    if (process* q = rt.table.acquire(waiter)) {
      rt.wake(q, trace::wake_cause::blocking_call);
      rt.table.release(q, -1);
    }
    g.lock();
  }
  --threads_;
}

void blocking_pool::stop() noexcept {
  std::lock_guard<std::mutex> g(lock_);
  stopping_ = true;
  cv_.notify_all();
}

}  // namespace grove::internal

namespace grove::detail {

using namespace grove::internal;

void run_blocking_erased(void (*call)(void*) noexcept, void* ctx) {
  process* p = current_process();
  runtime_state* rt = current_runtime();
  if (!p || p->kind == process_kind::scoped || !rt) {  // a foreign thread may block itself
    call(ctx);
    return;
  }
  before_runtime_call(p, true);
  blocking_job job{call, ctx, p->id(), rt};
  rt->offloaded.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: see worker::may_leave
  try {
    rt->blocking.submit(*rt, &job);
  } catch (...) {
    rt->offloaded.fetch_sub(1, std::memory_order_seq_cst);
    throw;
  }
  // The job uses this stack until `done`: park until then, whatever else wakes us.
  end_overload_if_any(p);  // it drains nothing meanwhile: its senders wait no more (overload.cpp)
  // Nor runs where a flood gathered it: the call's end can come after that worker has left at stop()
  // (only worker 0 waits for blocking calls, runtime.cpp).
  p->leave_gathering();
  p->activity.store(static_cast<std::uint8_t>(wait_reason::blocking_call), std::memory_order_relaxed);  // published: a snapshot
  while (!job.done.load(std::memory_order_acquire)) park_current(p, park_reason::offload);  // pairs with serve's release
  p->activity.store(0, std::memory_order_relaxed);
  rt->offloaded.fetch_sub(1, std::memory_order_seq_cst);  // before the signals act: this process may end below
  before_runtime_call(p, true);  // an exit signal that came meanwhile acts now
}

}  // namespace grove::detail
