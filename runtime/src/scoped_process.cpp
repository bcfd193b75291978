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
  std::unique_lock<std::mutex> g(p->waiter->lock);
  // acquire: pairs with the waker's fetch_or, so its message push is visible once we see NOTIFIED
  while (!(p->control.load(std::memory_order_acquire) & ctl_notified)) {
    if (deadline_ns == 0) {
      p->waiter->cv.wait(g);
    } else {
      auto when = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
      if (p->waiter->cv.wait_until(g, when) == std::cv_status::timeout) break;
    }
  }
  p->control.fetch_and(~ctl_notified, std::memory_order_acq_rel);  // acq_rel: consume the wake in order
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

scoped_process::scoped_process() {
  runtime_state* rt = current_runtime();
  if (!rt || rt->current_phase.load(std::memory_order_acquire) != runtime_state::phase::running)
    throw error(errc::not_running);
  if (this_worker() != nullptr) throw error(errc::bad_argument, "scoped_process: not inside a Grove process or worker");
  if (scoped_process_of_thread() != nullptr) throw error(errc::bad_argument, "scoped_process: this thread has one already");
  process* p = rt->table.allocate(-1, process_kind::scoped);
  if (!p) throw error(errc::process_limit);
  try {
    p->waiter = new scoped_waiter();
  } catch (...) {
    rt->process_exited(p, false);
    rt->table.release(p, -1);
    throw;
  }
  p->control.fetch_and(~ctl_notified, std::memory_order_acq_rel);  // no wake pending yet
  rt->scoped_live.fetch_add(1, std::memory_order_relaxed);          // statistics for stop()
  runtime_ = rt->shared_from_this();
  process_ = p;
  pid_ = p->id();
  set_scoped_process(p);
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
  set_scoped_process(nullptr);
  rt->table.release(p, -1);  // the life reference
}

void scoped_process::exit_with(exit_reason reason) { reason_ = std::move(reason); }

}  // namespace grove
