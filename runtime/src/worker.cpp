// worker.cpp: one worker thread's loop: find a process, run it until it parks, repeat; sleep when
// there is nothing to do. The protocols (where work comes from, states, parking) are described in
// scheduler.cpp; the stack slots in stack_slots.hpp.
#include <algorithm>

#include <fmt/format.h>

#include <grove/logger.hpp>

#include "delivery.hpp"
#include "scheduler.hpp"
#include "spawn.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {
constexpr std::uint32_t global_queue_interval = 61;  // Go's: check the inject queue first every 61 rounds
constexpr std::uint32_t lifo_streak_max = 3;         // tokio's cap on consecutive LIFO-slot runs
constexpr int steal_rounds = 4;                      // Go's: passes over all victims before parking
constexpr std::size_t inject_batch = 32;             // processes taken from the inject queue at once
// Busy workers look at the other workers' wheels every this many rounds and at every kernel tick
// (find_work; fire_stranded_timers), and
// fire one that is due by more than the grace: its owner is blocked or in one long computation (an
// owner that runs fires its own within a round). The grace is the ~1 ms within which a blocked
// worker's timers are taken over when no worker is idle (parking.cpp, "Timers no worker strands").
constexpr std::uint32_t steal_timers_rounds = 16;
constexpr std::uint64_t stranded_timer_grace_ns = 1'000'000;
// Busy workers reap the poller every this many rounds and at every kernel tick when nobody sleeps in
// it (parking.cpp, step 6):
// tokio's event_interval. One epoll_wait that finds nothing costs ~110 ns here
// (bench/grove/poller_probe.cpp), a round ~50-100 ns: under 2% of a busy worker's time.
constexpr std::uint32_t io_reap_rounds = 61;
// A busy worker takes the queued processes of a worker whose switch count has not moved for this
// long (scheduler.cpp, "Where work comes from", 7.). Longer than stuck_worker_ns, the idle thief's
// bar: two busy workers should not trade queues over a process that runs a few hundred µs; equal
// to the grace after which a stranded timer is taken over, so a process woken by such a timer and
// one queued behind the same stuck process wait alike.
constexpr std::uint64_t stuck_for_busy_thief_ns = stranded_timer_grace_ns;

// A process put in the LIFO slot runs next, usually within a few hundred nanoseconds (its waker
// parks and hands off to it): the switch to it first reads its saved context at the top of its
// stack, then its frames above, lines last touched when it parked, a whole round ago in a ring of
// a thousand processes. Asking for three lines from there as it is queued overlaps their misses
// with the rest of the waker's send and park. Alternating with the build before (`nice -n -20
// build/release/bench/grove/ring --threads 1`, 12 rounds, an AMD EPYC guest): median 5.18 -> 5.63 M
// hops/s in the runs where the host was slow, 7.2-7.4 -> 7.5-7.7 in those where it was fast;
// ping_pong (its partner is held, not queued) and skynet within noise. Only a started process
// has a context (a new one's fctx is a former incarnation's or null); a non-resident one's points
// into a slot another process uses (make_resident copies it in): a wasted hint, no fault.
// Ordered like any read of p's state by the worker that will run it: p's wake (an acq_rel RMW on
// its control word, or on held_) follows the release that published fctx when it parked.
[[gnu::always_inline]] inline void prefetch_saved_context(const process* p) noexcept {
  if (!p->started) return;
  const char* top = static_cast<const char*>(p->ctx.fctx);
  __builtin_prefetch(top);
  __builtin_prefetch(top + 64);
  __builtin_prefetch(top + 128);
}

// Hands each process of a stack slot's waiter list (stack_slots::release, keep_for) to `queue`.
// The list is linked through next_waiter, which queueing may reuse: the link is read first.
template <class Queue>
void queue_each(process* waiters, Queue&& queue) {
  while (waiters) {
    process* next = waiters->next_waiter;
    queue(waiters);
    waiters = next;
  }
}
}  // namespace

worker::worker(runtime_state& r, unsigned i)
    : rt(r),
      index(i),
      wheel(now_ns()),
      watch_backoff_ns_(stuck_worker_ns),
      rng_(0x9E3779B97F4A7C15ull * (i + 1)),
      seen_switches_(r.config.workers) {}

void worker::start(std::shared_ptr<runtime_state> keep) {
  rt.workers_in_loop.fetch_add(1, std::memory_order_relaxed);  // read by stop() after joining-time waits
  thread_ = std::thread([this, keep = std::move(keep)] {
    loop();
    // Out of the loop: stop() may join us now, or has detached us (runtime.cpp, stop step 6).
    left_loop_.store(true, std::memory_order_release);
    rt.workers_in_loop.fetch_sub(1, std::memory_order_acq_rel);  // acq_rel: stop's acquire load sees our last writes
    {
      std::lock_guard<std::mutex> g(rt.exits_lock);
      rt.exits_cv.notify_all();
    }
    // `keep` is released after this: a detached worker may be the last holder of the state, whose
    // destructor then runs here; nothing touches `this` after that.
  });
}

void worker::join() {
  if (thread_.joinable()) thread_.join();
}

void worker::detach() {
  if (thread_.joinable()) thread_.detach();
}

// ## Finalizing in batches
// Whoever drops a process's last reference waits, before finalizing it, for every other worker that
// is mid-send (delivery.cpp, "Sending without a reference"): a read of each other worker's send_seq,
// on a line that worker writes at every send. Done at every exit, that read took the line from a
// worker that was sending, and its next send waited to get it back: in skynet (a million exits, as
// many sends) `perf annotate` put three quarters of finalize_process on that read and a third of
// deliver on the store after it. A worker keeps the PCBs whose last reference it drops (an exit's
// life reference, mostly) in a batch of finalize_batch and finalizes them after one wait, always in
// the worker's own context, never in a process's (finalizing runs the destructors of what is left
// in the mailboxes, which may send and so park): when the batch is full (a reference dropped in a
// process's context into a full batch is finalized at once, as before batches), at the first
// scheduling round of each kernel tick, and before the worker sleeps or leaves its loop. Until then
// such a PCB is unreachable as a finalized one is (its references are 0: a send, a link or a
// monitor finds the process gone and is answered as for one) and still counted in use (stop and
// wait_until_idle wait for it; a worker finalizes its batch before it sleeps, so they never wait on
// an idle one); what reached its mailbox before the exit is answered when the batch ends. A worker
// that runs one process for long (a computation, a blocking call) holds its batch that long.
// Measured: bench/RESULTS.md, "skynet".
bool worker::defer_finalize(process* p) noexcept {
  if (this_worker() != this || finalizing_) return false;
  if (to_finalize_count_ == finalize_batch) {
    if (current != nullptr) return false;  // a process's context: this one at once (above)
    finalize_deferred();
  }
  to_finalize_[to_finalize_count_++] = p;
  return true;
}

void worker::finalize_deferred() noexcept {
  if (to_finalize_count_ == 0 || finalizing_) return;
  finalizing_ = true;  // a last reference dropped by what follows is finalized at once
  process* batch[finalize_batch];
  const unsigned n = to_finalize_count_;
  std::copy(to_finalize_, to_finalize_ + n, batch);
  to_finalize_count_ = 0;
  wait_out_senders(rt);
  for (unsigned i = 0; i < n; ++i) rt.table.finish_release(batch[i], static_cast<int>(index));
  finalizing_ = false;
}

void worker::push_local(process* p) {
  if (local.push(p)) return;
  // Full: move half of the queue and p to the inject queue (Go's runqputslow).
  process* batch[run_queue::capacity / 2 + 1];
  std::uint32_t n = local.pop_half(batch);
  batch[n++] = p;
  rt.injector.push_bulk(batch, n);
}

void worker::push_runnext(process* p) {
  prefetch_saved_context(p);
  // seq_cst: publishes the occupant to a thief that exchanges it out (release), and orders this
  // store before our read of `watchers` below against a parking worker's count-then-look (park)
  process* old = runnext.exchange(p, std::memory_order_seq_cst);
  if (old) {
    push_local(old);
    rt.notify_work();
  } else if (rt.watchers.load(std::memory_order_seq_cst) == 0 && rt.idle_count.load(std::memory_order_seq_cst) != 0) {
    // Nobody watches the LIFO slots: if our process does not block soon, p would wait for it with
    // idle workers asleep. Make sure someone looks (they watch once they see p). With no worker idle
    // nobody needs waking: the next to park counts itself idle, then looks (park). seq_cst loads:
    // the pairing in park; on x86 they are plain loads, the exchange above is the barrier.
    rt.notify_work();
  }
}

void worker::push_pinned(process* p) {
  if (this_worker() == this) {  // our own (a yield, a wake from here): straight to our FIFO
    p->next_waiter = nullptr;  // a queued process is in no slot's waiter list: the link is free
    (pinned_tail_ ? pinned_tail_->next_waiter : pinned_head_) = p;
    pinned_tail_ = p;
    return;
  }
  pinned_inbox.push(p);
  // release: the owner that reads true (acquire exchange in take_pinned) finds our push
  pinned_pending.store(true, std::memory_order_release);
  unpark();  // idempotent against a park in progress, which looks at the inbox again
}

// The next runnable pinned process: what other threads pushed joins the FIFO first, so that
// processes this worker requeues itself cannot keep them waiting (the inbox is a moodycamel queue,
// which is not fair across producers).
process* worker::take_pinned() {
  // relaxed load first: the common case (nothing pushed) costs one load, not a look at moodycamel's
  // producers; the acquire exchange pairs with push_pinned's release store
  if (pinned_pending.load(std::memory_order_relaxed) && pinned_pending.exchange(false, std::memory_order_acquire)) {
    process* batch[inject_batch];
    while (std::size_t n = pinned_inbox.try_pop_bulk(batch, inject_batch)) {
      for (std::size_t i = 0; i < n; ++i) {
        batch[i]->next_waiter = nullptr;
        (pinned_tail_ ? pinned_tail_->next_waiter : pinned_head_) = batch[i];
        pinned_tail_ = batch[i];
      }
    }
  }
  process* p = pinned_head_;
  if (p) {
    pinned_head_ = p->next_waiter;
    if (!pinned_head_) pinned_tail_ = nullptr;
    p->next_waiter = nullptr;
  }
  return p;
}

void worker::push_gathered(process* p) {
  {
    std::lock_guard<std::mutex> g(gathered_lock);
    p->next_waiter = nullptr;  // a queued process is in no slot's waiter list: the link is free
    (gathered_tail ? gathered_tail->next_waiter : gathered_head) = p;
    gathered_tail = p;
    gathered_any.store(true, std::memory_order_seq_cst);  // seq_cst: park's look-again, and the watch pairing below
  }
  if (this_worker() != this) unpark();  // idempotent against a park in progress, which looks again
  // If we are stuck in one process from now on, only a watcher takes p (steal_from_others): with
  // idle workers and none watching, wake one, which watches (start_watch counts gathered lists as
  // LIFO slots). The pairing is push_runnext's: our store above, then this load; a watcher counts
  // itself, then looks. seq_cst loads: that pairing.
  if (rt.watchers.load(std::memory_order_seq_cst) == 0 && rt.idle_count.load(std::memory_order_seq_cst) != 0) rt.notify_work();
}

process* worker::take_gathered_from(worker& w) {
  if (!w.gathered_any.load(std::memory_order_relaxed)) return nullptr;  // a hint: the lock decides
  process* p;
  {
    std::lock_guard<std::mutex> g(w.gathered_lock);
    p = w.gathered_head;
    if (!p) return nullptr;
    w.gathered_head = p->next_waiter;
    if (!w.gathered_head) {
      w.gathered_tail = nullptr;
      w.gathered_any.store(false, std::memory_order_seq_cst);  // seq_cst: as in push_gathered
    }
  }
  p->next_waiter = nullptr;
  // A thief's take (w stuck in one process) ends the gathering, or the process would go back to w's
  // list after its run.
  if (&w != this) p->leave_gathering();
  return p;
}

void worker::requeue(process* p) {
  if (!rt.send_home(p)) push_local(p);
}

void worker::requeue_waiters(process* waiters) {
  queue_each(waiters, [this](process* w) { requeue(w); });
}

process* worker::take_local() {
  process* p = nullptr;
  if (lifo_streak_ < lifo_streak_max) {
    p = runnext.exchange(nullptr, std::memory_order_acq_rel);  // acq_rel: see push_runnext
    if (p) {
      ++lifo_streak_;
      return p;
    }
  }
  lifo_streak_ = 0;
  if ((p = local.pop())) return p;
  return runnext.exchange(nullptr, std::memory_order_acq_rel);  // the queue is empty: the cap does not matter
}

// How long worker v's switch count has stood still, as far as we have watched it: moved (a count we
// had not seen: we start watching it now), still for less than stuck_after_ns, or stuck.
worker::stillness worker::watch_switches(unsigned v, std::uint64_t now, std::uint64_t stuck_after_ns) {
  const std::uint64_t sw = rt.workers[v]->switches.load(std::memory_order_relaxed);  // a heuristic: any recent value will do
  sighting& seen = seen_switches_[v];
  if (seen.count != sw) {
    seen = {sw, now};
    return stillness::moved;
  }
  return now - seen.since < stuck_after_ns ? stillness::still : stillness::stuck;
}

// What a thief took from worker v: batch[0] to run, the rest into our queue, counted and traced.
process* worker::keep_stolen(process* const* batch, std::uint32_t got, unsigned v) {
  steals.fetch_add(got, std::memory_order_relaxed);  // statistics
  if (tracing(event_kind::steal, batch[0])) [[unlikely]]
    record(event_kind::steal, 0, got, batch[0]->id().bits(), v);
  for (std::uint32_t i = 1; i < got; ++i) push_local(batch[i]);  // ours may be full: push_local overflows
  return batch[0];
}

process* worker::steal_from_others() {
  const unsigned n = static_cast<unsigned>(rt.workers.size());
  if (n < 2) return nullptr;
  process* batch[run_queue::capacity / 2];
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  unsigned start = static_cast<unsigned>(rng_ % n);
  for (unsigned k = 0; k < n; ++k) {
    unsigned v = (start + k) % n;
    if (v == index) continue;
    worker& victim = *rt.workers[v];
    if (std::uint32_t got = victim.local.steal_half(batch)) return keep_stolen(batch, got, v);
    // Its LIFO slot and the senders gathered there only if the victim is stuck in one process
    // (scheduler.cpp, "Where work comes from"): its switch count has not moved for stuck_worker_ns
    // since we first saw that count. relaxed: hints; the exchange and the lock decide
    if (victim.runnext.load(std::memory_order_relaxed) == nullptr && !victim.gathered_any.load(std::memory_order_relaxed) &&
        victim.held_.p.load(std::memory_order_relaxed) == nullptr)
      continue;
    switch (watch_switches(v, now_ns(), stuck_worker_ns)) {
      case stillness::moved: continue;
      case stillness::still:
        suspect_ = true;  // maybe stuck: if we park, look again soon (park's watch)
        continue;
      case stillness::stuck: break;
    }
    if (process* p = victim.runnext.exchange(nullptr, std::memory_order_acq_rel))  // acq_rel: see push_runnext
      return keep_stolen(&p, 1, v);
    if (process* p = take_gathered_from(victim)) return keep_stolen(&p, 1, v);  // no longer gathered there
    if (process* p = take_held_from_stuck(victim)) return p;
  }
  return nullptr;
}

// Once a kernel tick, from a busy worker (find_work): the processes queued on a worker stuck in one
// process (blocked in a syscall, or computing without runtime calls) for stuck_for_busy_thief_ns.
// Idle workers steal them anyway (steal_from_others); with every other worker busy nobody did, and
// a process made runnable on a worker blocked in read(2) waited for the read to end
// (tests/runtime/scheduler_test.cpp, "queued behind a worker blocked in a syscall"). Half of its
// local queue, else its LIFO slot. The clock is read only when some other worker has queued work.
process* worker::take_from_stuck_worker() {
  const unsigned n = static_cast<unsigned>(rt.workers.size());
  std::uint64_t now = 0;
  for (unsigned v = 0; v < n; ++v) {
    if (v == index) continue;
    worker& victim = *rt.workers[v];
    // relaxed: hints; steal_half and the exchange decide
    if (victim.local.size() == 0 && victim.runnext.load(std::memory_order_relaxed) == nullptr &&
        !victim.gathered_any.load(std::memory_order_relaxed) && victim.held_.p.load(std::memory_order_relaxed) == nullptr)
      continue;
    if (now == 0) now = now_ns();
    if (watch_switches(v, now, stuck_for_busy_thief_ns) != stillness::stuck) continue;
    process* batch[run_queue::capacity / 2];
    std::uint32_t got = victim.local.steal_half(batch);
    if (got == 0) {
      batch[0] = victim.runnext.exchange(nullptr, std::memory_order_acq_rel);  // acq_rel: see push_runnext
      if (batch[0] == nullptr) batch[0] = take_gathered_from(victim);  // no longer gathered there
      if (batch[0] == nullptr) {
        if (process* p = take_held_from_stuck(victim)) return p;
        continue;
      }
      got = 1;
    }
    return keep_stolen(batch, got, v);
  }
  return nullptr;
}

process* worker::find_work() {
  ++tick_;
  const std::uint64_t coarse = coarse_now_ns();  // ~6 ns (clock.hpp); its cost: advance_timers
  advance_timers(coarse);
  // Each kernel tick (4 ms at HZ=250) as well as every Nth round: a round lasts as long as the
  // process it ran, so counting rounds alone left IO ready for a busy worker, and a process woken
  // from a foreign thread, waiting 61 rounds of 5 ms (tests/runtime/net_test.cpp, "at the next
  // round of a worker"; scheduler_test.cpp, "woken from a foreign thread").
  const bool new_tick = coarse != last_coarse_;
  last_coarse_ = coarse;
  if (new_tick) finalize_deferred();
  if (new_tick || tick_ % steal_timers_rounds == 0) fire_stranded_timers();
  if (new_tick || tick_ % io_reap_rounds == 0) reap_io();
  process* p = nullptr;
  if ((new_tick || tick_ % global_queue_interval == 0) && rt.injector.try_pop(p)) return p;
  if (new_tick && (p = take_from_stuck_worker())) return p;
  // Pinned processes (scheduler.cpp, "Pinned") and gathered ones (overload.cpp, "Senders gather
  // where their receiver runs"): every other round first, so that neither they nor the local queue
  // wait for the other to run out. relaxed: a hint, take_pinned decides
  const bool pinned_work = pinned_head_ != nullptr || pinned_pending.load(std::memory_order_relaxed);
  // The two take turns at going first, so that a pinned process that keeps yielding cannot starve
  // them.
  auto take_homed = [&]() -> process* {
    process* q = nullptr;
    if ((tick_ & 2) == 0) {
      if ((pinned_work && (q = take_pinned())) || (q = take_gathered_from(*this))) return q;
    } else {
      if ((q = take_gathered_from(*this)) || (pinned_work && (q = take_pinned()))) return q;
    }
    return nullptr;
  };
  const bool homed_work = pinned_work || gathered_any.load(std::memory_order_relaxed);  // relaxed: a hint, as pinned_work
  if (homed_work && (tick_ & 1) == 0 && (p = take_homed())) return p;
  if ((p = take_local())) return p;
  if (homed_work && (p = take_homed())) return p;
  process* batch[inject_batch];
  if (std::size_t n = rt.injector.try_pop_bulk(batch, inject_batch)) {
    for (std::size_t i = 1; i < n; ++i) push_local(batch[i]);
    if (n > 1) rt.notify_work();
    return batch[0];
  }
  // Search: at most half of the busy workers at once (Go's rule).
  if (!searching_) {
    unsigned busy = static_cast<unsigned>(rt.workers.size()) - rt.idle_count.load(std::memory_order_relaxed);
    if (2 * rt.searching.load(std::memory_order_relaxed) >= busy) return nullptr;  // a hint; park() re-checks
    rt.searching.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: read by notify_work after its fence
    searching_ = true;
  }
  for (int round = 0; round < steal_rounds; ++round) {
    if ((p = steal_from_others())) return p;
    if (rt.injector.try_pop(p)) return p;
  }
  return nullptr;
}

void worker::loop() {
  set_this_worker(this);
  thread_stack = adopt_thread(sched_ctx);
  thread_eh = thread_eh_globals();
  void* signal_stack = stack_slots::prepare_signal_stack();
  for (;;) {
    process* p = find_work();
    if (!p) {
      finalize_deferred();  // before it leaves or sleeps: nothing it dropped waits on it
      if (may_leave()) {
        // A searcher that leaves stops counting, or producers would skip waking the workers left.
        if (searching_) rt.searching.fetch_sub(1, std::memory_order_seq_cst);  // seq_cst: as everywhere on searching
        searching_ = false;
        break;
      }
      park();
      continue;
    }
    watch_backoff_ns_ = stuck_worker_ns;
    if (idle_since_ns_ != 0) end_idle_spell();
    if (searching_) {
      searching_ = false;
      // Found work while searching: if we were the last searcher, wake another (ramp-up).
      if (rt.searching.fetch_sub(1, std::memory_order_seq_cst) == 1) rt.notify_work();
    }
    run(p);
  }
  stack_slots::release_signal_stack(signal_stack);
  set_this_worker(nullptr);
}

// After stop's workers_stop: every worker leaves once it finds no work, except worker 0 while
// processes are in run_blocking: it ends them when their calls return (runtime.cpp, stop step 6).
bool worker::may_leave() const noexcept {
  if (!rt.workers_stop.load(std::memory_order_acquire)) return false;  // pairs with stop()'s release
  // seq_cst: against run_blocking's increment, so a call made as we leave is seen or sees us gone
  // (it is then ended by whatever worker is left, or left behind with the runtime's memory)
  return index != 0 || rt.offloaded.load(std::memory_order_seq_cst) == 0;
}

void worker::run(process* p) {
  handoff_streak_ = 0;
  holding_missed_ = false;
  if (!begin_run(p)) return;
  start_counting(p);
  const eh_globals mine = *thread_eh;  // the loop's exception state, kept while processes run (context.hpp)
  transfer t = switch_to(sched_ctx, p->ctx, rt.slots.bounds(p), this);
  *thread_eh = mine;
  p = current;  // the process that switched back: p, or one that p (or its successors) handed off to
  current = nullptr;
  end_run(p);
  finish_park(p, t.fctx);
  finish_held();  // the one that handed off to p, if any: nothing is held while the loop looks for work
}

// p is NOTIFIED (queued). Makes it this worker's current process, ready to be switched to; false if
// it cannot run now: its stack slot is busy (it waits there, still NOTIFIED) or its stack cannot be
// made resident (it is queued again).
bool worker::begin_run(process* p) {
  if (!rt.slots.acquire(p, index)) return false;
  std::uint32_t s = p->control.load(std::memory_order_relaxed);
  // acq_rel: acquire sees everything done before p was woken; NOTIFIED → RUNNING
  while (!p->control.compare_exchange_weak(s, (s & ~ctl_notified) | ctl_running, std::memory_order_acq_rel,
                                           std::memory_order_relaxed)) {
  }
  try {
    rt.slots.make_resident(p, index);
  } catch (const std::bad_alloc&) {
    // The resident process's stack cannot be saved, so p cannot run on this slot now. Put p back at
    // the end of the queue and let others run (and free memory); it is tried again later. Reported
    // once per runtime.
    requeue_waiters(rt.slots.release(p));
    std::uint32_t s2 = p->control.load(std::memory_order_relaxed);
    // acq_rel: RUNNING → NOTIFIED, as after a yield
    while (!p->control.compare_exchange_weak(s2, (s2 & ~ctl_running) | ctl_notified, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
    requeue(p);
    rt.notify_work();
    if (!rt.out_of_memory_reported.exchange(true, std::memory_order_relaxed))  // once per runtime
      log(log_event{log_level::error, log_kind::out_of_memory, p->id(), {}, {},
                    fmt::format("grove: out of memory saving a parked process's stack: {} waits until memory is freed", p->id())});
    return false;
  }
  prepare_run(p);
  return true;
}

// p holds its slot, is RUNNING and resident: it becomes this worker's current process.
void worker::prepare_run(process* p) {
  current = p;
  p->worker = static_cast<std::uint16_t>(index);
  p->budget = rt.config.reductions_per_slice;
  // A gathered process stays gathered while one of its last two runs took part in a flood
  // (overload.cpp, "Senders gather where their receiver runs"). The bits of others are left as they
  // are: stale ones keep a process gathered a run or two longer at most. relaxed: process.hpp, `home`
  if (is_gathered(p->home.load(std::memory_order_relaxed))) [[unlikely]] {
    if (!p->flooded_this_run && !p->flooded_last_run) p->leave_gathering();
    p->flooded_last_run = p->flooded_this_run;
    p->flooded_this_run = false;
  }
  if (!p->started) {
    if (p->pinned) p->home.store(static_cast<std::uint16_t>(index), std::memory_order_relaxed);  // scheduler.cpp, "Pinned"
    const std::size_t reserve = entry_reserve(*p->entry.unstarted.ops);  // the callable's place (process.hpp)
    p->ctx.fctx = make_context(static_cast<char*>(rt.slots.stack_top(p)) - reserve, rt.slots.stack_bytes() - reserve, &process_main);
    p->started = true;
    create_fiber(p->ctx);
  }
  p->parked = park_reason::none;
  count_owned(switches);  // statistics (also the stuck-worker heuristic)
  if (tracing(event_kind::run_begin, p)) [[unlikely]]
    record(event_kind::run_begin, 0, local.size(), p->id().bits());
}

// Once p is the one that will run next (not in begin_run: a hand-off prepares the next process
// while the parking one's run is still to be counted by end_run).
void worker::start_counting(process* p) {
  run_reductions_before_ = p->reductions.load(std::memory_order_relaxed);  // its owner is this thread now
  run_received_before_ = p->saved.received();
}

void worker::end_run(process* p) {
  count_owned(reductions, p->reductions.load(std::memory_order_relaxed) - run_reductions_before_);
  count_owned(messages_received, static_cast<std::uint32_t>(p->saved.received() - run_received_before_));  // wraps: mod 2^32
  if (tracing(event_kind::run_end, p)) [[unlikely]]
    record(event_kind::run_end,
           static_cast<std::uint8_t>(static_cast<unsigned>(p->parked) | (p->activity.load(std::memory_order_relaxed) & 0xF) << 4), 0,
           p->id().bits());
}

// p has switched out (to the loop, or to a process it handed off to) and its context is `fctx`.
void worker::finish_park(process* p, void* fctx) {
  if (p->parked != park_reason::exit) save_context(p, fctx);
  after_park(p);
}

void worker::save_context(process* p, void* fctx) noexcept {
  p->ctx.fctx = fctx;
  // Published for introspection (process.hpp, `stack_units`); relaxed: a snapshot.
  const auto live = static_cast<std::size_t>(rt.slots.top_of(p->slot) - static_cast<char*>(fctx));
  p->stack_units.store(static_cast<std::uint16_t>(std::min<std::size_t>((live + stack_unit_bytes - 1) / stack_unit_bytes, 0xFFFF)),
                       std::memory_order_relaxed);
}

// ## Parking straight into the next process (the direct hand-off)
// A process that parks to wait (a receive, a sleep) while the LIFO slot holds the process it has
// just woken switches straight to that process instead of to the worker's loop, which would only
// take it from the slot and switch to it: one context switch and one pass through the loop fewer
// per message hop (Go's runnext intends the same). The woken process is made ready exactly as the
// loop makes it (begin_run: its slot, RUNNING, resident), then the parking one's run ends here and
// its park is finished by the process it switched to, first thing after the switch (arrived), on
// this worker: its context saved, its slot released, RUNNING cleared, and queued again if a wake
// came meanwhile, as the loop does after a switch back (finish_park). Bounds: at most
// handoff_streak_max hand-offs before the loop runs a process again (so its timers, IO, inject
// queue and local queue are looked at as often as every few microseconds of ping-pong), each one
// counted as a LIFO run (lifo_streak_), and none while any tracing is on (the trace shows the
// loop's run events). A process that cannot run at once (its slot held by another, or by the
// parking one: they share it) goes where the loop would put it, and the parking one goes to the
// loop. The loop's run() takes whichever process switches back (`current`), not the one it
// switched to. Measured: bench/RESULTS.md, "The message path".
namespace {
constexpr std::uint32_t handoff_streak_max = 16;
}

process* worker::take_handoff() {
  if (handoff_streak_ >= handoff_streak_max) return nullptr;
  if (trace_mask.load(std::memory_order_relaxed) != 0) return nullptr;  // relaxed: a switch (tracer.hpp)
  process* parking = current;
  if (process* h = take_held()) {
    if (begin_run_held(h)) {
      current = parking;  // until the switch (hand_off), as below
      ++handoff_streak_;
      ++lifo_streak_;
      return h;
    }
    after_park(h);  // not woken: its park is finished as the loop would have (a wake since is queued there)
    holding_missed_ = true;  // no more holding until the loop's turn
  }
  if (runnext.load(std::memory_order_relaxed) == nullptr) return nullptr;  // a hint: the exchange decides
  process* q = runnext.exchange(nullptr, std::memory_order_acq_rel);  // acq_rel: as take_local
  if (!q) return nullptr;
  const bool ready = begin_run(q);
  current = parking;  // until the switch (hand_off): a stack overflow until then is still the parking one's
  if (!ready) return nullptr;
  ++handoff_streak_;
  ++lifo_streak_;
  return q;
}

// ## Holding the one that handed off
// A process that parks by a hand-off is not finished at once (its slot released, RUNNING cleared):
// its worker keeps it in held_, still RUNNING and holding its stack slot, with HELD set in its
// control word, until the next process that parks on this worker looks at it. If a wake came
// meanwhile from this worker (NOTIFIED set), that one switches straight back to it: clearing
// NOTIFIED and HELD is all it takes to run it again, its slot held and its stack resident all
// along. Otherwise its park is finished then (after_park), as the loop would have, and a wake that
// raced with that finds it queued as ever. In a ping-pong pair each hop so drops the LIFO slot's
// two exchanges, the stack slot's acquire and release, and RUNNING's set and clear, six
// read-modify-writes of ~11, for three (the exchange of held_, HELD set, NOTIFIED and HELD
// cleared). Alternating with the build before (`nice -n -20 build/release/bench/grove/ping_pong
// [--threads 1]`, 3 rounds, an Intel Xeon KVM guest): 3.17-3.73 -> 4.09-4.30 M round trips/s on 1
// and 2 workers (4.33-4.39 holding without HELD, below); ring unchanged (a hop there wakes the next
// process, never the held one). bench/RESULTS.md, "ping_pong: holding the one that handed off".
// A wake from anywhere else must not wait for this worker's current process to park (it may
// compute for long; before holding, such a wake queued the process where others take it): the
// first wake of a held process sees HELD (set after held_, so held_ names it) and, unless the
// waker's own worker holds it, takes it from its holder with a CAS on held_ and queues it itself
// (wake_held). One woken before HELD was set is not held (hold looks at NOTIFIED in the same RMW).
// Bounds: held_ is finished whenever the loop runs (run() ends with it), so a process is held only
// through hand-offs, at most handoff_streak_max in a row; a thief takes held_ from a stuck worker as
// it takes its LIFO slot (take_from_stuck_worker, steal_from_others), so that processes bound to
// the held one's stack slot do not wait for the computation; on one worker they wait, as anything
// queued there does. process_summary_of reports a held process from HELD (introspection.cpp).
// Rejected: claiming a held process through its control word alone (no exchange of held_): a thief
// holding a stale pointer could then clear RUNNING on a later process in the same PCB; holding
// without HELD (a wake from another worker or thread then waited for this worker's current process
// to park or for a thief, 0.2-10 ms, where it had run at once: found by a review).
//
// ## Holding only where it pays
// Holding pays when the one handed to wakes the holder back (a call and its reply, ping-pong); in
// a chain (a ring, a pipeline: each hop wakes the next process) the held one is not woken before
// the next park, which then finishes it as arrived() would have at once, after two RMWs more (HELD
// set, held_ exchanged). So once a park finds its held process not woken, the worker holds nobody
// until its loop runs a process again (at most handoff_streak_max hand-offs later): at most one
// miss a streak. Alternating with the build before (`nice -n -20 build/release/bench/grove/ring
// [--threads 1]`, 10 rounds, an AMD EPYC guest, runs where the host was fast): ring 7.0-7.6 ->
// 7.9-8.6 M hops/s on 1 worker, 7.8-8.7 -> 8.4-9.2 on 2; ping_pong and skynet within noise (6
// rounds). Rejected: holding always (the above); deciding per process (a bit in the PCB read and
// written at every hop, for a pattern that is the worker's current traffic, not a process's).

// h was held (take_held gave it): if woken since it parked, it is made this worker's current
// process, as begin_run would (no slot to take, no image to copy, RUNNING already set).
bool worker::begin_run_held(process* h) {
  if (!(h->control.load(std::memory_order_relaxed) & ctl_notified)) return false;  // relaxed: the RMW below decides
  // acq_rel: acquire sees what the waker did before its wake (its message), as begin_run's CAS.
  // Only its holder clears NOTIFIED while RUNNING is set, so the bit is still ours to clear.
  h->control.fetch_and(~(ctl_notified | ctl_held), std::memory_order_acq_rel);
  prepare_run(h);
  return true;
}

// p has handed off and switched out with context fctx: held here until the next park looks at it.
void worker::hold(process* p, void* fctx) {
  if (holding_missed_) return finish_park(p, fctx);  // not in this streak: see "Holding only where it pays"
  save_context(p, fctx);
  // release: its context and stack with it, to the exchange that takes it. Before HELD is set:
  // a waker that sees HELD finds it here (or gone, taken by whoever finishes it).
  held_.p.store(p, std::memory_order_release);
  // acq_rel: a wake after this sees HELD (one total order on the word); one before left NOTIFIED
  if (p->control.fetch_or(ctl_held, std::memory_order_acq_rel) & ctl_notified) {
    // Woken since its last look, by a waker that saw it RUNNING and left it to this worker, whose
    // current process may compute for long: not held, queued where others may take it.
    if (process* h = take_held()) after_park(h);
  }
}

void worker::wake_held(runtime_state& rt, process* p) {
  worker* self = this_worker();
  if (self && &self->rt != &rt) self = nullptr;
  // relaxed: only this thread stores its own held_ (a thief only empties it)
  if (self && self->held_.p.load(std::memory_order_relaxed) == p) return;  // its next park resumes it
  for (auto& w : rt.workers) {
    if (w.get() == self) continue;
    process* expected = p;
    // relaxed load: a hint; the CAS decides (acq_rel: as take_held's exchange)
    if (w->held_.p.load(std::memory_order_relaxed) != p ||
        !w->held_.p.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel, std::memory_order_relaxed))
      continue;
    // Ours to finish, as after_park would: its slot, then RUNNING and HELD; NOTIFIED is our wake's.
    queue_each(rt.slots.release(p), [&rt](process* w) { rt.schedule(w); });
    p->control.fetch_and(~(ctl_running | ctl_held), std::memory_order_acq_rel);  // acq_rel: as in after_park
    rt.schedule(p);
    return;
  }
  // Not held anywhere now: whoever took it clears RUNNING and finds our NOTIFIED.
}

process* worker::take_held() noexcept {
  if (held_.p.load(std::memory_order_relaxed) == nullptr) return nullptr;  // a hint: the exchange decides
  return held_.p.exchange(nullptr, std::memory_order_acq_rel);  // acq_rel: against a thief's exchange
}

// As after_park, except that one woken while held runs next here, from the LIFO slot, where its
// wake would have put it had it not been held (on the local queue, with notify_work as after_park
// does, an idle worker stole it every handoff_streak_max hops and split a ping-pong pair across
// the cores: 2-worker ping_pong no faster than before holding).
void worker::finish_held() {
  if (process* h = take_held()) after_park(h, woken_goes::lifo_slot);
}

// victim is stuck in one process: its held one, if any, has its park finished here (on our queue
// if a wake came); what that queued, or null.
process* worker::take_held_from_stuck(worker& victim) {
  process* h = victim.take_held();
  if (!h) return nullptr;
  after_park(h);
  return take_local();
}

void worker::arrived(transfer t) {
  auto* now_on = static_cast<worker*>(t.data);
  if (process* from = now_on->handoff_from_) {
    now_on->handoff_from_ = nullptr;
    now_on->hold(from, t.fctx);
  } else {
    now_on->sched_ctx.fctx = t.fctx;  // the loop's context, to switch back to next time
  }
}

void worker::after_park(process* p, woken_goes woken) {
  if (p->parked == park_reason::exit) {
    rt.slots.forget(p, index);
    process* waiters = rt.slots.release(p);
    p->slot = no_slot;
    p->started = false;
    destroy_fiber(p->ctx);
    requeue_waiters(waiters);
    rt.table.release(p, static_cast<int>(index));  // the life reference
    return;
  }
  if (p->parked == park_reason::offload) {
    // Its stack is in use by a blocking thread (blocking.cpp): keep the slot; waiters that never
    // ran go elsewhere.
    requeue_waiters(rt.slots.keep_for(p));
  } else {
    requeue_waiters(rt.slots.release(p));
  }
  if (p->parked == park_reason::yield) {
    std::uint32_t s = p->control.load(std::memory_order_relaxed);
    // acq_rel: RUNNING → NOTIFIED; publishes p's state to the next worker
    while (!p->control.compare_exchange_weak(s, (s & ~ctl_running) | ctl_notified, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
    if (rt.send_home(p)) return;  // only its home may take it (push_pinned and push_gathered wake it)
    if (!local.push(p)) push_local(p);
    rt.notify_work();
    return;
  }
  // Waiting: clear RUNNING (and HELD, if it was held); if a wake came while it ran, it is ours to
  // queue (scheduler.cpp).
  std::uint32_t old = p->control.fetch_and(~(ctl_running | ctl_held), std::memory_order_acq_rel);  // acq_rel: see scheduler.cpp
  if (!(old & ctl_notified)) return;
  if (woken == woken_goes::lifo_slot) {
    if (!rt.send_home(p)) push_runnext(p);
    return;
  }
  requeue(p);
  rt.notify_work();
}

void worker::fire_stranded_timers() {
  std::uint64_t earliest = ~0ull;
  for (auto& w : rt.workers)  // relaxed: hints; fire_due_timers is exact under the wheel's lock
    if (w.get() != this) earliest = std::min(earliest, w->next_expiry_ns.load(std::memory_order_relaxed));
  if (earliest == ~0ull) return;  // nothing pending elsewhere: not even the clock is read
  const std::uint64_t now = now_ns();
  if (earliest + stranded_timer_grace_ns > now) return;
  for (auto& w : rt.workers)
    if (w.get() != this && w->next_expiry_ns.load(std::memory_order_relaxed) + stranded_timer_grace_ns <= now)
      fire_due_timers(*w);
}

void worker::advance_timers(std::uint64_t coarse_now) {
  // A hint (relaxed); the wheel is exact under its lock. Reading the clock is not free here (~17%
  // of bench/grove/spawn's CPU when done every round, perf): the exact clock is read only when the
  // coarse one (a quarter of the cost, clock.hpp; read every round by find_work) says the next
  // expiry may have come. Cost against reading no clock on most
  // rounds: +0.9% instructions on `valgrind --tool=callgrind build/release/bench/grove/spawn --n
  // 200000` (every sleeper's timer pending), spawn 1M's time within noise. Rejected: reading the
  // clock every Nth round (16 was used): a round lasts as long as the process it ran, so a worker
  // whose process computes 5 ms between yields fired a 2 ms sleep 17 slices late
  // (tests/runtime/timer_test.cpp, "fires at its next scheduling round").
  std::uint64_t next = next_expiry_ns.load(std::memory_order_relaxed);
  if (next == ~0ull) return;
  if (next > coarse_now + coarse_lag_ns_) return;
  if (next > now_ns()) return;
  fire_due_timers(*this);
}

}  // namespace grove::internal
