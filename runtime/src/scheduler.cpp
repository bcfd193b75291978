// scheduler.cpp: how Grove runs processes on worker threads. The map of the runtime starts here.
//
// ## Concepts
// - A *process* (process.hpp) is a C++ callable with its own execution context, a mailbox and a
//   pid. It runs until it blocks (receive, sleep), yields, uses up its time slice, or exits.
// - A *worker* (worker.cpp) is one OS thread, one per core by default, that runs processes one at a
//   time. Each worker has a local run queue (run_queue.hpp, 256 entries), a LIFO slot (`runnext`)
//   and a timer wheel (timer_wheel.hpp).
// - A *stack slot* (stack_slots.hpp) is one of a few execution stacks shared by all workers. A
//   process runs on the slot it was bound to at first run; parked processes keep only a copy of their
//   live stack (a few hundred bytes). That is what makes a sleeping process cost ~0.5 KB instead of a
//   4 KiB stack page, and it is also how started processes migrate: slots sit at fixed addresses
//   every worker can use, so any worker can resume any process (stack_slots.hpp has the protocol).
//
// ## Where work comes from (worker::find_work)
// 1. Every 61st round and at the first round of each kernel tick (4 ms: a round lasts as long as its
//    process), one process from the shared inject queue first, so it cannot starve (Go's rule).
// 2. The LIFO slot: a process woken by a message from the process running here, or spawned by it,
//    runs next, on the same core, while the sender's data is in cache; after 3 LIFO runs in a row
//    the local queue goes first (tokio's cap), so a ping-pong pair cannot starve the queue. When the
//    waker then parks to wait, it switches straight to the slot's process without passing through
//    the loop, up to 16 times in a row (worker.cpp, "Parking straight into the next process"), and
//    the worker holds the parked one as it was, RUNNING in its slot, so that if the next park finds
//    it woken it switches straight back (worker.cpp, "Holding the one that handed off"). A spawn
//    or wake that finds the slot taken moves the old occupant to the local queue, where other
//    workers can steal it (so a spawn loop still spreads out). Spawning into the slot, as tokio and
//    Go do, keeps "spawn a process, wait for it" on one core. Rejected: spawning into the local
//    queue, where the idle worker steals every child and the pair bounces between cores:
//    bench/grove/restarts --n 1000 (a supervisor restarting a crashing child, 2 workers, medians of
//    9 runs, twice) ran 214-215 K restarts/s with the slot, 137-147 K with the local queue.
// 3. The local queue (FIFO).
// 4. The inject queue: foreign threads' spawns and sends, and overflow from full local queues.
// 5. Expired timers of this worker's wheel (checked every round against a cached next expiry; with
//    no timer pending not even the clock is read).
// 6. Stealing: half of a random victim's local queue. A victim's LIFO slot is taken only if that
//    worker has not switched processes for 200 µs (it is stuck in one long process): stealing it
//    earlier would split ping-pong pairs across cores, which costs ~5× here (cross-core round trips
//    are ~480 ns on these VMs, runtime/DESIGN.md §2). For the same reason an idle worker does not count
//    other workers' LIFO slots as work when deciding whether to sleep. Instead a parked worker
//    watches them (worker::park): while a slot is occupied, or another worker is busy, it sleeps at
//    most 0.2 ms at first, backing off to 5 ms while it finds nothing, and looks again; a pusher that
//    fills an empty slot while nobody watches wakes someone. So a process left in the slot of a
//    worker that computes for a long time without a runtime call is taken by an idle worker within
//    ~0.4 ms (up to ~5 ms after a quiet spell) instead of waiting for the computation to end, and a
//    ping-pong pair's idle neighbour wakes ~200 times a second, not 5,000.
// 7. A worker stuck in one process (blocked in a syscall, or computing without runtime calls) for
//    1 ms: at the first round of each kernel tick, a busy worker takes half of its local queue (else
//    its LIFO slot), as an idle one would, so the processes queued behind the stuck one wait a tick
//    or two, not for the syscall to end, when no worker is idle (Go's sysmon retakes a P from a
//    thread in a syscall for the same reason). Once a tick and only when some other worker has
//    queued work: the scan reads each worker's queue length, and the clock when one has work.
//
// ## Process states (the control word) and the "already queued" bit
// Three bits (process.hpp): NOTIFIED (queued: in a run queue or a slot's waiters), RUNNING (a worker
// runs it), EXITED. All changes are atomic read-modify-writes (acq_rel), so they form one total order:
//   - wake (any thread): old = fetch_or(NOTIFIED). Only if old had none of the three bits does the
//     waker enqueue the process; so a process is never queued twice (tokio's NOTIFIED bit).
//   - a worker takes a queued process: NOTIFIED → RUNNING (CAS).
//   - it parks (receive found nothing): the worker clears RUNNING after the switch (after a hand-off,
//     when the next park on that worker, the loop or a thief finishes the held one: worker.cpp,
//     "Holding the one that handed off"); if NOTIFIED was set meanwhile (a message arrived between
//     the process's last look and the switch), the worker queues it again, or runs it at once if it
//     was held. The sender pushed its message before its fetch_or, so the process sees it.
//   - it yields: RUNNING → NOTIFIED, and back to the queue's tail.
//   - new processes are born NOTIFIED (process_table.cpp), so a wake that races with the spawn is a no-op.
// No lost wake-up: the process's "mailbox empty" check and the sender's push are ordered by the
// RMWs on the same word (the release of the sender's fetch_or, the acquire of the worker's).
//
// ## Parking idle workers
// parking.cpp: Go's spinning rules (at most half the busy workers search; an idle worker spins
// 20 µs, then sleeps), the store/load pairing that loses no wake-up, the one poller where an idle
// worker waits for timers and IO, and who fires the timers of a worker that is blocked or busy.
// Pushing into the LIFO slot wakes nobody while an idle worker watches (6. above): usually the
// current process is about to block and the worker runs the occupant next; if it does not block,
// the watcher takes the occupant. With idle workers but no watcher, the push wakes one.
//
// ## Pinned processes (spawn_options::pinned)
// A pinned process runs only on its home, the worker that first runs it (before that it is an
// ordinary process: it may be stolen). It records that worker in process::home at its first run,
// before it can park; a waker reads it after its wake's RMW on the control word, which follows the
// worker's release of RUNNING, so it sees it. Once started it is never in a local queue, a LIFO slot
// or the inject queue, which thieves take from. Made runnable on its home (a yield, a wake, a
// requeue there) it joins the home's owner-only FIFO; made runnable elsewhere it goes to the home's
// pinned_inbox (a multi-producer queue) and the waker unparks the home (one mutex and a notify;
// idempotent against a park in progress, which looks at the inbox again). The home moves the inbox
// into the FIFO before it takes from it, so its own requeues cannot starve other threads' wakes (the
// inbox alone is not fair across producers: a pinned process woken from a foreign thread waited
// behind a yielding one for ever, tests/runtime/thread_state_test.cpp). It takes from the FIFO first
// on every other scheduling round and after its local queue on the others, so neither starves the
// other. While its home is busy in a long process a pinned process waits: the price of never migrating.
//
// ## Fairness
// Each process gets `reductions_per_slice` (default 4,000, BEAM's figure) sends, received messages
// and spawns per slice; a process that uses them up yields to the back of the queue. CPU-bound code
// calls grove::yield(). Grove does not preempt: a process that computes for a long time without a
// runtime call holds its worker (its queue is stolen by the others, its LIFO slot too, see above).
//
// ## Overload
// A process that cannot keep up with its mail (one drain of its inbox takes a full batch and leaves
// more) makes its senders wait after their sends until it catches up: overload.cpp. The bit is in
// the control word (ctl_overloaded), which the sender's wake has just read. While the flood lasts the
// receiver and the senders it frees are gathered on its worker (process::home with gathered_flag):
// they go to that worker's gathered list, which it serves as it serves pinned processes (every other
// round first), and which a thief takes from only when that worker is stuck, as its LIFO slot.
//
// ## Thread-local state
// A process may resume on another worker after any park. GCC hoists thread-local addresses (and
// __errno_location, pthread_self) across calls, so runtime code in process context never keeps a
// worker pointer or TLS address across a park: this_worker() is an out-of-line call that reads TLS
// afresh, and a resumed process learns its worker from the context switch itself (worker.cpp). The
// C++ exception globals travel with the process (context.cpp).
//
// ## Shutdown
// runtime.cpp: runtime::stop in numbered steps, bounded by its deadline.
//
// ## Rejected alternatives
// - A stack per process: see stack_slots.hpp (memory, spawn time, guard pages).
// - A moodycamel queue per mailbox: 616+ bytes each (mailbox.hpp).
// - A single global run queue: contention on every wake; no cache locality for ping-pong.
// - Waking a worker for every message: a futex wake costs ~1 µs here, more than the message.
// - Preemption by signals (Go): unsafe for arbitrary C++ code (locks, allocators, non-reentrant
//   libraries); reductions plus yield() are the contract, as in every C++ fiber library.
#include "scheduler.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include <grove/errc.hpp>

#include "delivery.hpp"
#include "scoped_waiter.hpp"
#include "timers.hpp"

namespace grove {

using namespace grove::internal;

runtime::state::state(const runtime_config& cfg)
    : config(cfg),
      table(*this, cfg.process_limit, cfg.workers),
      slots(cfg.stack_slots, cfg.stack_bytes, cfg.workers),
      names(table),
      blocking(cfg.blocking_threads) {
  for (unsigned i = 0; i < cfg.workers; ++i) workers.push_back(std::make_unique<worker>(*this, i));
}

runtime::state::~state() = default;

namespace {

// The wake event: p's pid, its waker (the process running here, if any) and why.
[[gnu::noinline]] void record_wake(process* p, trace::wake_cause why) noexcept {
  const process* by = current_process();
  record(trace::event_kind::wake, static_cast<std::uint8_t>(why), 0, p->id().bits(), by ? by->id().bits() : 0);
}

// The wake of a held process while wakes may be traced: out of line, as below.
[[gnu::noinline]] void record_wake_if_traced(process* p, trace::wake_cause why) noexcept {
  if (traced_process_event(trace::event_kind::wake, p)) record_wake(p, why);
}

// The wake of a scheduled process while wakes may be traced: past the mask, all out of line, so
// that the untraced wake stays a frameless tail call of schedule() (callgrind: 14 instructions a
// wake; 25 with tracing()'s process check inline).
[[gnu::noinline]] void maybe_record_wake_and_schedule(runtime::state& rt, process* p, trace::wake_cause why) {
  record_wake_if_traced(p, why);  // before it can run (and exit) elsewhere
  rt.schedule(p);
}

// A scoped process's wake (its thread waits on a condition variable), out of line as the above.
[[gnu::noinline]] void record_wake_if_traced_and_wake_scoped(process* p, trace::wake_cause why) noexcept {
  if (tracing(trace::event_kind::wake, p)) [[unlikely]]
    record_wake(p, why);
  wake_scoped(p);
}

}  // namespace

void runtime::state::wake(process* p, trace::wake_cause why) noexcept {
  // acq_rel: the release publishes what the waker did before (a pushed message) to whoever runs p;
  // the acquire orders us after the worker's RUNNING → idle transition (see the file comment).
  std::uint32_t old = p->control.fetch_or(ctl_notified, std::memory_order_acq_rel);
  if (p->kind == process_kind::scoped) {  // kind is immutable once the pid is known
    if (!(old & (ctl_notified | ctl_exited))) return record_wake_if_traced_and_wake_scoped(p, why);
    return;
  }
  if (old & (ctl_notified | ctl_running | ctl_exited)) {
    // The first wake of a held process (worker.cpp, "Holding the one that handed off"): parked,
    // so its wake is recorded as any parked one's
    if ((old & (ctl_held | ctl_notified | ctl_exited)) == ctl_held) {
      if (trace_mask.load(std::memory_order_relaxed) & trace::bit(trace::event_kind::wake)) [[unlikely]]  // relaxed: a switch
        record_wake_if_traced(p, why);
      worker::wake_held(*this, p);
    }
    return;
  }
  if (trace_mask.load(std::memory_order_relaxed) & trace::bit(trace::event_kind::wake)) [[unlikely]]  // relaxed: a switch (tracer.hpp)
    return maybe_record_wake_and_schedule(*this, p, why);
  schedule(p);
}

void runtime::state::schedule(process* p) {
  if (send_home(p)) return;
  worker* w = this_worker();
  if (w && &w->rt == this) {
    if (w->current != nullptr) {
      w->push_runnext(p);  // in process context: the woken or spawned process runs next, here
    } else {
      w->push_local(p);
      if (!w->queued_from_own_poll()) notify_work();  // from its own poller: it runs it (parking.cpp)
    }
    return;
  }
  injector.push(p);
  notify_work();
}

bool runtime::state::send_home(process* p) {
  const std::uint16_t home = p->home.load(std::memory_order_relaxed);  // relaxed: process.hpp
  if (home == no_home) return false;
  if (is_gathered(home)) {
    workers[home & ~gathered_flag]->push_gathered(p);  // a sender of a flooded receiver (overload.cpp)
  } else {
    workers[home]->push_pinned(p);  // pinned, started: only its home may run it (file comment, "Pinned")
  }
  return true;
}

void runtime::state::process_exited(process* p) noexcept {
  if (p->kind == process_kind::scoped) scoped_live.fetch_sub(1, std::memory_order_relaxed);  // statistics for stop()
  table.mark_exited(worker_index_for(*this));
}

void runtime::state::scheduled_released() noexcept {
  // Only the last scheduled PCB to come back wakes a waiting stop() or wait_until_idle(): a million
  // exits must not mean a million futex wakes. (The waiter also re-checks on a short timeout, so a
  // race here only delays it.)
  // The waiters first: summing the counts reads every worker's line (process_table.hpp).
  if (idle_waiters.load(std::memory_order_acquire) != 0 && table.scheduled_in_use() == 0) {  // pairs with the waiter's increment
    std::lock_guard<std::mutex> g(exits_lock);
    exits_cv.notify_all();
  }
}

}  // namespace grove
