// delivery.cpp: how a message or a signal reaches another process.
//
// A sender makes sure the target's PCB cannot be finalized and reused while it pushes (below); then:
//   1. if the target has exited (EXITED in its control word), it answers for the target at once
//      (answer_for_exited): a link gets exit{noproc} back, a monitor down{noproc}, a process_info
//      request "gone", a message counts as a dead letter;
//   2. otherwise it pushes the node into the target's inbox (mailbox.hpp) and wakes the target
//      (scheduler.cpp, "process states"), or pushes lazily for signals that need no wake-up.
// A target that exits between the check and the push still holds the node; when its last reference
// is dropped, finalize_process answers it as in step 1. So nothing sent is lost: every link and
// monitor request gets its answer, whatever the timing.
//
// ## Sending without a reference
// A thread that is not one of the runtime's workers takes a reference on the target
// (process_table.hpp) and drops it after the push. A worker does not: those are two read-modify-
// writes on the target's first cache line, and when the target runs on another core, or its senders
// run on both, that line then moves between the cores up to four times a message instead of once.
// Instead the worker marks itself as sending (worker::send_seq odd), and whoever drops a process's
// last reference waits, before finalize_process drains its inbox, until no worker is in a send it
// began before that drop:
//   sender:   send_seq = odd; fence; load refs; if 0 (or another pid, or EXITED): slow path below;
//             else push and wake; send_seq = even (release).
//   releaser: refs 1 -> 0 (fetch_sub); fence; for each other worker: if its send_seq is odd, wait
//             until it changes (acquire); then finalize.
// The two fences make it Dekker's pattern: either the sender reads refs == 0 and leaves the PCB
// alone, or the releaser sees it sending and waits for it to finish; the acquire of the changed
// send_seq then orders the sender's push before the drain. A send is a few dozen instructions that
// never park, so the wait is short; it happens only when a process's last reference goes while a
// worker is mid-send. The read of the other workers' send_seq (one line each) is made once per
// batch of PCBs whose last reference a worker dropped (worker.cpp, "Finalizing in batches"), once
// per PCB for a reference dropped elsewhere.
// Measured (`nice -n -20 build/release/bench/grove/fan_in --threads 2`, 16 senders to one receiver,
// alternating): 11.9-12.4 M messages/s with the references, 18.2-19.5 M without (bench/RESULTS.md,
// "fan_in: sending without a reference").
// Rejected: epochs with a per-worker list of PCBs waiting to be finalized whatever their number
// (finalization then waits for the worker's next quiescent point; the batches of worker.cpp are
// that, bounded by 32 PCBs and a kernel tick, and resources_in_use and dead letters lag that
// much behind an exit); tagging each message with its target's
// pid so that a reused PCB's new process drops stale ones (a link request to a process exiting then
// could wait for its noproc answer until the slot happened to be reused); an asymmetric fence (no
// fence in the sender, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) in the releaser, as some
// hazard-pointer libraries do): the sender's store and fence cost 8.6 ns, about 5% of a ring hop
// (`perf annotate` of deliver), while one membarrier took 9.6-15.3 us with another worker busy on a
// 2-vCPU KVM guest (an interrupt to each CPU), ~380 ns an exit even once per batch of 32, and
// skynet's 1.1 M exits take ~0.33 s in all (`build/release/bench/grove/membarrier_probe`).
#include "delivery.hpp"

#include "introspection.hpp"
#include "remote.hpp"
#include "scoped_waiter.hpp"
#include "signal_nodes.hpp"

#include <thread>

namespace grove::internal {

int worker_index_for(const runtime_state& rt) noexcept {
  worker* w = this_worker();
  return (w && &w->rt == &rt) ? static_cast<int>(w->index) : -1;
}

namespace {

// Step 2 of the file comment, for a target the caller keeps from being finalized. Runs no user
// code and sends nothing else, so a worker's send section (below) never nests.
delivery push_and_wake(runtime_state& rt, process* q, message_node* n, bool wake) noexcept {
  if (wake) {
    const auto why = n->type->is_signal ? trace::wake_cause::signal : trace::wake_cause::message;  // n is q's after the push
    q->mail.push(n);
    rt.wake(q, why);
    // relaxed: a hint read from the line the wake's RMW just brought in; overload.cpp re-reads it
    return (q->control.load(std::memory_order_relaxed) & ctl_overloaded) ? delivered_to_overloaded : delivered;
  }
  if (q->mail.push_lazily(n)) rt.wake(q, trace::wake_cause::signal);  // a push behind ours may have woken q before our node was linked (mailbox.hpp)
  return delivered;
}

}  // namespace

delivery deliver(runtime_state& rt, pid to, message_node* n, bool wake, bool answer_if_gone) noexcept {
  worker* w = this_worker();
  if (w && &w->rt != &rt) w = nullptr;  // another runtime's worker sends as a foreign thread does
  if (w) {
    if (process* q = rt.table.pcb_at(to)) {  // a worker of this runtime, a local pid: no reference
      // relaxed: only this thread writes send_seq; the fence below orders the odd value before our load
      const std::uint32_t seq = w->send_seq.load(std::memory_order_relaxed);
      w->send_seq.store(seq + 1, std::memory_order_relaxed);
      parking_fence(rt);  // the sender's fence of the file comment
      // acquire: pairs with allocate()'s release of refs, so the pid read next is this incarnation's.
      // An exited target goes to the slow path, which answers for it outside this section.
      const bool alive = q->refs.load(std::memory_order_acquire) != 0 &&
                         q->pid_bits.load(std::memory_order_relaxed) == to.bits() &&
                         !(q->control.load(std::memory_order_acquire) & ctl_exited);  // acquire: as below
      delivery result = not_delivered;
      if (alive) result = push_and_wake(rt, q, n, wake);
      // release: a releaser that waits for this change then sees our push (file comment)
      w->send_seq.store(seq + 2, std::memory_order_release);
      if (alive) return result;
    }
  }
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
  delivery result = not_delivered;
  // acquire: after the exit's fetch_or. An exited process takes nothing more: answer for it now. (If
  // it exits just after this check, finalize_process answers instead: we hold a reference.)
  if (q->control.load(std::memory_order_acquire) & ctl_exited) {
    answer_for_exited(rt, to, n);
  } else {
    result = push_and_wake(rt, q, n, wake);
  }
  rt.table.release(q, w ? static_cast<int>(w->index) : -1);
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

void wait_out_senders(runtime_state& rt) noexcept {
  parking_fence(rt);  // the releaser's fence of the file comment (its refs 1 -> 0 came before)
  const worker* self = this_worker();
  for (const auto& w : rt.workers) {
    if (w.get() == self) continue;  // this thread drops the reference: it is not mid-send
    // acquire: the sender's release of its even value orders its push before our drain
    const std::uint32_t seq = w->send_seq.load(std::memory_order_acquire);
    if (!(seq & 1)) continue;
    for (unsigned spins = 0; w->send_seq.load(std::memory_order_acquire) == seq; ++spins) {
      if (spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();  // its thread may have been preempted mid-send
      }
    }
  }
}

void finalize_process(runtime_state& owner, process* p) noexcept {
  wait_out_senders(owner);
  finalize_waited_out(owner, p);
}

void finalize_waited_out(runtime_state& owner, process* p) noexcept {
  const pid self = p->id();
  // Its own runtime, even if another one runs now.
  while (message_node* n = p->mail.pop()) answer_for_exited(owner, self, n);
  if (p->kind == process_kind::scoped && p->waiter) {
    destroy_scoped_waiter(p->waiter);
    p->waiter = nullptr;
  }
}

}  // namespace grove::internal
