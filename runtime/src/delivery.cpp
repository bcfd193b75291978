// delivery.cpp: how a message or a signal reaches another process.
//
// A sender takes a reference on the target's PCB (process_table.hpp), so the PCB cannot be reused
// while it pushes; then:
//   1. if the target has exited (EXITED in its control word), it answers for the target at once
//      (answer_for_exited): a link gets exit{noproc} back, a monitor down{noproc}, a process_info
//      request "gone", a message counts as a dead letter;
//   2. otherwise it pushes the node into the target's inbox (mailbox.hpp) and wakes the target
//      (scheduler.cpp, "process states"), or pushes lazily for signals that need no wake-up.
// A target that exits between the check and the push still holds the node; when its last reference
// is dropped, finalize_process answers it as in step 1. So nothing sent is lost: every link and
// monitor request gets its answer, whatever the timing.
#include "delivery.hpp"

#include "introspection.hpp"
#include "remote.hpp"
#include "scoped_waiter.hpp"
#include "signal_nodes.hpp"

namespace grove::internal {

int worker_index_for(const runtime_state& rt) noexcept {
  worker* w = this_worker();
  return (w && &w->rt == &rt) ? static_cast<int>(w->index) : -1;
}

delivery deliver(runtime_state& rt, pid to, message_node* n, bool wake, bool answer_if_gone) noexcept {
  process* q = rt.table.acquire(to);
  if (!q) {
    if (to.is_remote()) {  // only here, off the local path (remote.cpp, "Outgoing")
      route_remote(rt, to, n);
      return delivered;
    }
    if (answer_if_gone) {
      answer_for_exited(rt, to, n);
      return not_delivered;
    }
    if (!n->type->is_signal) rt.dead_letters.fetch_add(1, std::memory_order_relaxed);  // statistics
    detail::destroy_node(n);
    return not_delivered;
  }
  delivery result = delivered;
  // acquire: after the exit's fetch_or. An exited process takes nothing more: answer for it now. (If
  // it exits just after this check, finalize_process answers instead: we hold a reference.)
  if (q->control.load(std::memory_order_acquire) & ctl_exited) {
    answer_for_exited(rt, to, n);
    result = not_delivered;
  } else if (wake) {
    const auto why = n->type->is_signal ? trace::wake_cause::signal : trace::wake_cause::message;  // n is q's after the push
    q->mail.push(n);
    rt.wake(q, why);
    // relaxed: a hint read from the line the wake's RMW just brought in; overload.cpp re-reads it
    if (q->control.load(std::memory_order_relaxed) & ctl_overloaded) result = delivered_to_overloaded;
  } else if (q->mail.push_lazily(n)) {
    rt.wake(q, trace::wake_cause::signal);  // a push behind ours may have woken q before our node was linked (mailbox.hpp)
  }
  rt.table.release(q, worker_index_for(rt));
  return result;
}

void send_exit_signal(runtime_state& rt, process* q, pid from, exit_reason reason, bool via_link) noexcept {
  message_node* n = nullptr;
  try {
    n = make_signal<exit_signal_node>(from, std::move(reason), via_link);
  } catch (...) {
    return;  // out of memory: the signal is lost
  }
  // Counted before the push, so the count is never below the signals in the inbox. relaxed: the
  // process only needs to see it eventually (at a later runtime call); the push orders the node.
  q->exit_signals.fetch_add(1, std::memory_order_relaxed);
  q->mail.push(n);
  rt.wake(q, trace::wake_cause::signal);
}

void deliver_exit_signal(runtime_state& rt, pid to, pid from, exit_reason reason, bool via_link) noexcept {
  process* q = rt.table.acquire(to);
  if (!q) {
    if (to.is_remote()) route_remote_exit(rt, to, from, reason, via_link);
    return;
  }
  // acquire: after the exit's fetch_or. An exited process ignores exit signals: nothing to answer.
  if (!(q->control.load(std::memory_order_acquire) & ctl_exited)) send_exit_signal(rt, q, from, std::move(reason), via_link);
  rt.table.release(q, worker_index_for(rt));
}

void answer_for_exited(runtime_state& rt, pid dead, message_node* n) noexcept {
  try {
    if (auto* s = signal_as<link_signal>(n)) {
      deliver_exit_signal(rt, s->from, dead, exit_reason::noproc(), true);
    } else if (auto* m = signal_as<monitor_signal>(n)) {
      deliver(rt, m->from, make_signal<down_signal>(dead, m->ref, exit_reason::noproc()), true);
    } else if (auto* i = signal_as<info_signal>(n)) {
      answer_info_gone(*i->request);
    } else if (!n->type->is_signal) {
      rt.dead_letters.fetch_add(1, std::memory_order_relaxed);  // statistics
    }
  } catch (...) {
    // Out of memory: that answer is lost.
  }
  detail::destroy_node(n);
}

void finalize_process(runtime_state& owner, process* p) noexcept {
  const pid self = p->id();
  // Its own runtime, even if another one runs now.
  while (message_node* n = p->mail.pop()) answer_for_exited(owner, self, n);
  if (p->kind == process_kind::scoped && p->waiter) {
    destroy_scoped_waiter(p->waiter);
    p->waiter = nullptr;
  }
}

}  // namespace grove::internal
