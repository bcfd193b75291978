// receive.cpp: sending, selective receive, sleeping and yielding — the calls a process makes.
//
// receive (detail::receive_node) in steps:
//   1. scan the saved list, oldest first, asking the caller's matcher about each message; the first
//      accepted one is unlinked and returned;
//   2. otherwise pull what arrived in the inbox (drain_inbox: messages are appended to the saved list,
//      signals are acted on) and scan only the new part: a receive that parks many times never
//      rescans what it has already rejected. At most drain_batch nodes at a time, each batch followed
//      by a scan: a process that others flood with signals still finds its messages (a batch of
//      signals alone costs a reduction, so the flooded process also yields its worker in time);
//   3. nothing new: poll (timeout 0) or past the deadline → return "timeout"; otherwise arm the
//      timeout once and park until woken by a send, a signal or the timer; then go to 2.
// The timeout is measured from the call; the process itself compares the clock with the deadline, so
// it never returns early, and the timer only wakes it.
// Every send and every received message costs one reduction; at the end of a slice the process
// yields (scheduler.cpp, "Fairness"). After a yield from a send the process acts on its signals, so a
// process that only sends can still be killed.
#include <thread>

#include <grove/errc.hpp>
#include <grove/introspection.hpp>
#include <grove/message.hpp>
#include <grove/process.hpp>

#include "receive.hpp"

#include "delivery.hpp"
#include "io.hpp"
#include "overload.hpp"
#include "exit_protocol.hpp"
#include "remote.hpp"
#include "scheduler.hpp"
#include "scoped_waiter.hpp"
#include "signal_handling.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {

// A process that parks inside a catch block, or in a destructor during unwinding, keeps its
// exception state in this frame (context.hpp). Rare, so out of line: park_current's own frame, in
// the stack image of every parked process, has no room for it.
[[gnu::noinline]] void park_keeping_exception_state(process* p, park_reason why, eh_globals* live) {
  const eh_globals mine = *live;
  *live = eh_globals{};
  park_current(p, why);
  *current_runtime()->workers[p->worker]->thread_eh = mine;  // p->worker: the worker resuming us
}

}  // namespace

void park_current(process* p, park_reason why) {
  worker& w = *current_runtime()->workers[p->worker];  // p->worker: set by the worker running us
  if (w.thread_eh->caught_exceptions || w.thread_eh->uncaught_exceptions) [[unlikely]]
    return park_keeping_exception_state(p, why, w.thread_eh);
  p->parked = why;
  // A wait may switch straight to the process it woke (worker.cpp, "Parking straight into the next
  // process"); else to the worker's loop. Whoever resumes us later passes their worker (arrived).
  process* next = why == park_reason::wait ? w.take_handoff() : nullptr;
  transfer t;
  if (next) {
    w.hand_off(p, next);
    t = switch_to(p->ctx, next->ctx, w.rt.slots.bounds(next), &w);
  } else {
    t = switch_to(p->ctx, w.sched_ctx, w.thread_stack, nullptr);
  }
  *static_cast<worker*>(t.data)->thread_eh = eh_globals{};  // we had none; the worker resuming us may not be `w`
  worker::arrived(t);  // `w` may be another worker's by now: arrived reads the one in t
}

// After a yield from a send or a spawn, act on signals, so a process that only sends or spawns can
// still be killed.
void charge_at_slice_end(process* p, bool act_on_signals) {
  park_current(p, park_reason::yield);
  if (act_on_signals) drain_inbox(p, p->exits_deferred == 0);  // a deferred exit is raised later (exit_deferral)
}

namespace {

[[gnu::always_inline]] inline void wait_for_wake(process* p, std::uint64_t deadline_ns, wait_reason why) {
  // Published for introspection while it waits (process.hpp, `activity`); relaxed: a snapshot.
  p->activity.store(static_cast<std::uint8_t>(why), std::memory_order_relaxed);
  if (p->kind == process_kind::scoped) {
    try {
      wait_scoped(p, deadline_ns);
    } catch (...) {  // the runtime is stopping
      p->activity.store(0, std::memory_order_relaxed);
      throw;
    }
  } else {
    end_overload_if_any(p);  // one that waits cannot keep its senders waiting (overload.cpp)
    if (deadline_ns && !p->timer_armed) arm_timeout(p, deadline_ns);
    park_current(p, park_reason::wait);  // does not throw: signals act after it returns
  }
  p->activity.store(0, std::memory_order_relaxed);
}

struct disarm_on_return {
  process* p;
  ~disarm_on_return() {
    if (p->timer_armed) disarm_timeout(p);
  }
};

// Step 2 of a receive: pulls in one batch of the inbox if anything may be there. True if it took
// something (messages to scan, or a batch with more behind it). A batch of signals alone is still
// work done for them, so it costs a reduction and the slice can end here (fairness).
[[gnu::always_inline]] inline bool take_in_mail(process* p) {
  if (!p->mail.maybe_nonempty()) return false;
  const drained d = drain_inbox(p);
  if (!d.queued && d.more) charge(p, false);
  return d.queued || d.more;
}

}  // namespace

io_wait wait_ready(process* p, std::atomic<std::uint64_t>& slot, std::uint64_t deadline_ns) {
  before_runtime_call(p, true);
  const bool forever = deadline_ns == never_deadline_ns;  // arms no timer
  const std::uint64_t me = p->id().bits();
  // io.cpp's protocol: take a readiness the poller left, else put our pid in the slot.
  std::uint64_t cur = 0;
  // acq_rel (all slot operations): what the poller saw happens-before our retry of the syscall
  if (!slot.compare_exchange_strong(cur, me, std::memory_order_acq_rel, std::memory_order_acquire)) {
    if (cur == io_readiness && slot.compare_exchange_strong(cur, 0, std::memory_order_acq_rel)) return io_wait::ready;
    if (cur == 0) return io_wait::ready;  // the readiness was taken meanwhile: retrying is harmless
    return io_wait::busy;                 // another process waits in this direction: one at a time
  }
  runtime_state& rt = *current_runtime();  // a process runs inside its runtime
  rt.io_waiters.fetch_add(1, std::memory_order_relaxed);  // a hint for busy workers (parking.cpp, step 6)
  struct leave_slot {  // on every way out, unwinding included: the slot no longer names us
    std::atomic<std::uint64_t>& slot;
    std::uint64_t me;
    process* p;
    runtime_state& rt;
    ~leave_slot() {
      std::uint64_t expected = me;
      slot.compare_exchange_strong(expected, 0, std::memory_order_acq_rel);  // fails if the poller made it ready
      if (p->timer_armed) disarm_timeout(p);
      rt.io_waiters.fetch_sub(1, std::memory_order_relaxed);  // a hint, as above
    }
  } guard{slot, me, p, rt};
  for (;;) {
    if (slot.load(std::memory_order_acquire) == io_readiness) {
      slot.exchange(0, std::memory_order_acq_rel);  // ours: we left our pid there, the poller replaced it
      return io_wait::ready;
    }
    if (p->mail.maybe_nonempty()) {
      // Signals act (an exit signal ends the process here); messages wait in the saved list.
      while (drain_inbox(p).more) {
      }
      continue;
    }
    if (!forever && now_ns() >= deadline_ns) {
      std::uint64_t expected = me;
      if (slot.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return io_wait::timed_out;
      slot.exchange(0, std::memory_order_acq_rel);  // the poller made it ready just now: take it
      return io_wait::ready;
    }
    wait_for_wake(p, forever ? 0 : deadline_ns, wait_reason::io);
  }
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

namespace detail {

void send_node(pid to, message_node* n) {
  runtime_state* rt = current_runtime();
  if (!rt) {
    destroy_node(n);
    return;
  }
  process* self = current_process();
  if (self) {
    try {
      before_runtime_call(self, false);  // a send after a kill has arrived is never delivered
    } catch (...) {
      destroy_node(n);
      throw;
    }
  }
  if (tracing(event_kind::send, self)) [[unlikely]]  // before the push: the receive cannot come first
    record(event_kind::send, 0, 0, self ? self->id().bits() : 0, to.bits(), reinterpret_cast<std::uintptr_t>(n),
           reinterpret_cast<std::uintptr_t>(n->type));
  const delivery d = deliver(*rt, to, n, true);  // a dead target counts a dead letter there
  if (self) {
    count_send(*rt, self);
    charge(self, true);
    if (d == delivered_to_overloaded) [[unlikely]]
      wait_for_overloaded(self, to);  // it cannot keep up: wait until it does (overload.cpp)
    if (to.is_remote()) [[unlikely]]
      wait_after_remote_send(*rt, to);  // a node busy past its limit holds the sender (remote.cpp)
  }
}

bool send_node_to_name(std::string_view name, message_node* n) {
  runtime_state* rt = current_runtime();
  pid to = rt ? rt->names.find(name) : pid();
  if (to.is_null()) {
    destroy_node(n);
    return false;
  }
  send_node(to, n);
  return true;
}

matched receive_node(match_fn match, void* matcher, std::int64_t timeout_ns) {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, true);
  const std::uint64_t deadline = deadline_after_ns(timeout_ns);
  const bool forever = deadline == never_deadline_ns;  // arms no timer
  disarm_on_return disarm{p};
  message_node* prev = nullptr;  // the last message this call has rejected (scan cursor)
  message_node* cur = p->saved.head();
  std::uint32_t passed = 0;      // messages passed over (for the trace)
  for (;;) {
    for (; cur; prev = cur, cur = saved_list::next_of(cur), ++passed) {
      int h = match(matcher, cur);
      if (h >= 0) {
        message_node* n = p->saved.remove_after(prev);
        if (tracing(event_kind::receive, p)) [[unlikely]]
          record(event_kind::receive, 0, passed, p->id().bits(), p->saved.size(), reinterpret_cast<std::uintptr_t>(n),
                 reinterpret_cast<std::uintptr_t>(n->type));
        charge(p, false);
        return {n, h};
      }
    }
    if (take_in_mail(p)) {
      cur = prev ? saved_list::next_of(prev) : p->saved.head();
      continue;
    }
    if (!forever && (timeout_ns == 0 || now_ns() >= deadline)) {
      if (timeout_ns > 0 && tracing(event_kind::receive_timeout, p)) [[unlikely]]
        record(event_kind::receive_timeout, static_cast<std::uint8_t>(wait_reason::receive), 0, p->id().bits());
      return {nullptr, -1};
    }
    wait_for_wake(p, forever ? 0 : deadline, wait_reason::receive);
  }
}

}  // namespace detail

exit_deferral::exit_deferral() noexcept {
  if (process* p = current_process()) ++p->exits_deferred;
}
exit_deferral::~exit_deferral() {
  if (process* p = current_process()) --p->exits_deferred;
}

pid self() noexcept {
  process* p = current_process();
  return p ? p->id() : pid();
}

void yield() {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, true);
  if (p->kind == process_kind::scoped) {
    std::this_thread::yield();
    return;
  }
  park_current(p, park_reason::yield);
  drain_inbox(p);
}

exit_unwind detail::begin_exit(exit_reason reason) {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  if (p->kind == process_kind::scoped)
    throw error(errc::bad_argument, "grove::exit(reason) ends a Grove process; a scoped_process ends when destroyed");
  // An exit signal that arrived while the process computed came first, and wins (exit_protocol.cpp).
  // relaxed: as in before_runtime_call.
  while (!p->exiting && p->exit_signals.load(std::memory_order_relaxed) != 0 && drain_inbox(p, false).more) {
  }
  const bool self = !p->exiting;
  if (self) mark_exiting(p, reason);
  process_extra& ex = p->ensure_extra();
  if (ex.exit_raises < 255) ++ex.exit_raises;
  return exit_unwind{ex.reason, self};
}

bool is_alive(pid id) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) return false;
  process* q = rt->table.acquire(id);
  if (!q) return false;
  bool alive = (q->control.load(std::memory_order_acquire) & ctl_exited) == 0;  // acquire: after its exit's fetch_or
  rt->table.release(q, worker_index_for(*rt));
  return alive;
}

// A receive that matches nothing, written on its own: a parked sleeper's stack image holds this
// frame instead of receive_node's, 64 bytes less on each of a million sleepers (its locals are a
// third of receive_node's; bench/grove/spawn's bytes_per_process re-measures it).
void detail::sleep_ns(std::int64_t timeout_ns) {
  if (timeout_ns <= 0) {
    yield();
    return;
  }
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, true);
  const std::uint64_t deadline = deadline_after_ns(timeout_ns);
  const bool forever = deadline == never_deadline_ns;  // arms no timer
  disarm_on_return disarm{p};
  for (;;) {
    // Signals act here (an exit signal ends the sleep by unwinding); messages wait in the saved list.
    if (take_in_mail(p)) continue;
    if (!forever && now_ns() >= deadline) {
      if (tracing(event_kind::receive_timeout, p)) [[unlikely]]
        record(event_kind::receive_timeout, static_cast<std::uint8_t>(wait_reason::sleep), 0, p->id().bits());
      return;
    }
    wait_for_wake(p, forever ? 0 : deadline, wait_reason::sleep);
  }
}

}  // namespace grove
