// scoped_process.cpp: a foreign thread as a process (grove/scoped_process.hpp).
//
// A scoped process is a PCB like any other (same table, mailbox, links and monitors), whose
// "parking" blocks its thread on a condition variable instead of switching stacks. Its control word
// uses only NOTIFIED, meaning "a wake is pending": a waker sets it and then signals the condition
// variable under its mutex; the waiting thread checks it under the same mutex, so no wake-up is lost.
// The waiter lives until the PCB's last reference is dropped, since a waker holds a reference while
// it signals.
#include <grove/errc.hpp>
#include <grove/scoped_process.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "exit_protocol.hpp"
#include "scheduler.hpp"
#include "scoped_waiter.hpp"
#include "signal_handling.hpp"

namespace grove::internal {

struct scoped_waiter {
  std::mutex lock;
  std::condition_variable cv;
};

void wake_scoped(process* p) noexcept {
  std::lock_guard<std::mutex> g(p->waiter->lock);
  p->waiter->cv.notify_one();
}

void destroy_scoped_waiter(scoped_waiter* w) noexcept { delete w; }

void wait_scoped(process* p, std::uint64_t deadline_ns) {
  runtime_state& rt = *current_runtime();  // the scoped process's own (runtime.cpp, current_runtime)
  auto stopping = [&] { return rt.current_phase.load(std::memory_order_acquire) != runtime_state::phase::running; };
  auto fail_stopping = [] { throw error(errc::not_running, "the runtime is stopping: a scoped_process cannot wait any more"); };
  if (stopping()) fail_stopping();
  struct counted {  // stop waits until no scoped process is blocked (runtime.cpp, stop step 2)
    runtime_state& rt;
    explicit counted(runtime_state& r) : rt(r) { rt.scoped_blocked.fetch_add(1, std::memory_order_seq_cst); }
    ~counted() {
      rt.scoped_blocked.fetch_sub(1, std::memory_order_seq_cst);
      std::lock_guard<std::mutex> g(rt.exits_lock);
      rt.exits_cv.notify_all();
    }
  } count(rt);
  std::unique_lock<std::mutex> g(p->waiter->lock);
  // acquire: pairs with the waker's fetch_or, so its message push is visible once we see NOTIFIED.
  // stop() sets the phase, then wakes every scoped process under its waiter lock: seq_cst on both
  // sides (our count, its phase store) so that either it sees us counted or we see it stopping.
  while (!(p->control.load(std::memory_order_acquire) & ctl_notified)) {
    if (stopping()) fail_stopping();
    if (deadline_ns == 0) {
      p->waiter->cv.wait(g);
    } else if (p->waiter->cv.wait_until(g, steady_time(deadline_ns)) == std::cv_status::timeout) {
      break;
    }
  }
  p->control.fetch_and(~ctl_notified, std::memory_order_acq_rel);  // acq_rel: consume the wake in order
}

void release_scoped_waiters(runtime_state& rt) noexcept {
  rt.table.visit_live([&](process* q) {
    if (q->kind == process_kind::scoped && q->waiter) {
      std::lock_guard<std::mutex> g(q->waiter->lock);  // orders us with its check of the phase
      q->waiter->cv.notify_all();
    }
  });
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

scoped_process::scoped_process() {
  runtime_state* rt = current_runtime();
  if (!rt || rt->current_phase.load(std::memory_order_acquire) != runtime_state::phase::running)
    throw error(errc::not_running);
  if (this_worker() != nullptr)
    throw error(errc::in_process, "scoped_process: a Grove process (or worker thread) is a process already");
  if (scoped_process_of_thread() != nullptr) throw error(errc::bad_argument, "scoped_process: this thread has one already");
  process* p = rt->table.allocate(-1, process_kind::scoped);
  if (!p) throw error(errc::process_limit);
  rt->scoped_live.fetch_add(1, std::memory_order_relaxed);  // statistics for stop()
  try {
    p->waiter = new scoped_waiter();
  } catch (...) {
    rt->process_exited(p);
    rt->table.release(p, -1);
    throw;
  }
  p->control.fetch_and(~ctl_notified, std::memory_order_acq_rel);  // no wake pending yet
  runtime_ = rt->shared_from_this();
  process_ = p;
  pid_ = p->id();
  set_scoped_process(p, rt);
}

scoped_process::~scoped_process() {
  auto* p = static_cast<process*>(process_);
  auto* rt = static_cast<runtime_state*>(runtime_.get());
  if (!(p->control.load(std::memory_order_acquire) & ctl_exited)) {  // acquire: after raise_exit's protocol
    // An exit signal that arrived while the thread was elsewhere came first, and wins (exit_protocol.cpp).
    while (!p->exiting && p->exit_signals.load(std::memory_order_relaxed) != 0 && drain_inbox(p, false).more) {
    }
    exit_process(rt, p, p->exiting && p->extra ? p->extra->reason : reason_);
  }
  set_scoped_process(nullptr, nullptr);
  rt->table.release(p, -1);  // the life reference
}

void scoped_process::exit_with(exit_reason reason) { reason_ = std::move(reason); }

}  // namespace grove
