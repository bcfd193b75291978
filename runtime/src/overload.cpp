// overload.cpp: a process that cannot keep up with its mail makes its senders wait (Pony's muting).
//
// Sends never fail, never drop and never bound a mailbox (Erlang's semantics). But when many
// processes flood one, the backlog grows without limit (memory), and the senders keep the CPU the
// receiver needs to catch up. So a sender that finds the receiver overloaded waits, after its
// message is in, until the receiver has caught up; the backlog stays within a few batches
// while the senders are processes.
// bench/grove/fan_in (16 senders, 250,000 messages each, to one receiver), the builds before and
// after alternating (`for i in $(seq 9); do for b in before after; do /usr/bin/time -f %M nice -n
// -20 $b/bench/grove/fan_in --threads 2; done; done`): peak RSS 84-120 MiB -> 9-17 MiB; on 2 workers
// 5.98 -> 6.90 M messages/s (medians of 9; 5.3-9.9 and 5.7-11.5: within the noise), on 1 worker
// 10.68 -> 12.58 M/s (medians of 5; 4.3-11.9 and 11.9-13.1). What limits 2 workers is the
// receiver's first cache line (inbox head, control word), which senders on both cores take in
// turns; a worker's send no longer takes a reference there (delivery.cpp), which took fan_in on 2
// workers from 11.6 to 16.1 M/s (medians of 5, bench/RESULTS.md, "fan_in: sending without a reference").
// The checks cost a hop 20 instructions of ~1,020 (`valgrind --tool=callgrind
// build/release/bench/grove/ring --n 200000 --threads 1`: 203.6 M -> 207.7 M).
//
// ## States
// - Overloaded: set by the receiver itself when one drain of its inbox (signal_handling.cpp) takes a
//   full batch (drain_batch, 256) and finds more behind it. It is a bit in the control word
//   (ctl_overloaded), so a sender learns it from the word its wake's fetch_or just brought into its
//   cache (delivery.cpp): no extra read-modify-write and no extra cache line on the send path.
// - Caught up: the receiver clears the bit when a drain empties its inbox (whether it stops at the
//   end or at a full batch), before it waits (receive, sleep, IO) or starts a blocking call, and
//   once its exit is decided (its destructors may wait for a sender that waits for it); then it
//   wakes, under the shard's lock, every sender that waits for it. So a process that waits is never
//   overloaded.
// - Muted: a sender that found the bit set records itself in the registry (runtime::state::mutes,
//   by receiver) under the shard's lock, re-reading the bit there, and parks (wait_reason::muted).
//   The receiver clears the bit before it takes the shard's lock to collect its senders, so a
//   sender either sees the bit cleared or is collected: none waits for an overload that has ended.
//   A sender woken by anything else (a message, a signal) goes on, and takes its entry out: the
//   registry holds at most one entry per waiting sender. A wait lasts at most 10 ms at a time
//   (longest_mute_ns): senders that never wait (a scoped_process's thread, timers, the distribution
//   reader, overloaded processes) can keep a receiver's inbox from ever emptying, and every sender
//   must still make progress then.
//
// ## When a sender waits (and why no wait can deadlock)
// Only a scheduled process waits (not a scoped_process's thread, a timer or a foreign thread), only
// after a local send, never to itself, and never while it is itself overloaded or exiting. The bit
// changes only while its owner runs, and a muted sender is parked with the bit clear, so a muted
// process is never overloaded: a sender waits only for a process that is not waiting for anyone.
// That process runs (or is runnable) until it waits, exits or empties its inbox, each of which ends
// the overload. Two processes flooding each other therefore never both wait (the test
// "two processes that flood each other both finish", tests/runtime/overload_test.cpp), and a
// receiver that waits in a selective receive for a message from a muted sender frees it first.
// Beware (README, "Rules for code that runs in a process"): a send may now park for a while, so code
// that holds a std::mutex across a send can hold it while it waits, and a process killed while it
// waits raises its exit from the send (as at any park).
//
// ## Senders gather where their receiver runs
// What still limited a flood on two workers was where its processes ran: senders on both cores
// take turns at the receiver's inbox head, and an idle worker steals the receiver whenever it
// yields (16 senders, 4 M messages: ~700 yields, ~1,400 steals a run; one worker alone runs the
// same flood twice as fast). So the receiver, when it frees waiting senders, gathers them on its
// worker (process::home, gathered_flag | worker) and itself with them: made runnable (a wake, a
// yield) a gathered process goes to that worker's gathered list (worker::push_gathered, a FIFO
// under a mutex, touched about once per slice), which the owner serves as it serves pinned
// processes, and which a thief takes from only when the owner is stuck in one process
// (steal_from_others, take_from_stuck_worker: the LIFO slot's rule), so a worker that blocks in a
// system call does not strand them (tests/runtime/overload_test.cpp, "senders freed by a receiver
// whose worker then blocks"); a push that finds idle workers and none watching wakes one, which
// watches the list as it watches a LIFO slot (parking.cpp). The owner serves its pinned processes
// and its gathered list in turns, so a pinned process that keeps yielding does not starve a flood
// gathered there (the test "a pinned process that keeps yielding"). A process that goes into a
// blocking call leaves its gathering (blocking.cpp): the call's end can come after its worker has
// left at stop(). A process stays gathered while one of its last two runs took part in
// the flood (waited muted, or freed senders; a sender alternates runs that fill the inbox with runs
// that wait), and is free again after two runs without: a process that once flooded and then
// computes is not kept on one core. The other worker is left idle by a flood, as Go's run of the
// same benchmark is one core's; the price is paid by senders that compute between sends, which share
// the receiver's core while the flood lasts (they cannot go faster than it takes their mail anyway).
// A sender feeding two flooded receivers goes where the last one that freed it runs.
// bench/grove/fan_in (`for i in 1 2 3 4 5; do for b in before after; do nice -n -20
// $b/bench/grove/fan_in --threads 2; done; done`, 2026-12-07): 3.5-5.4 -> 17.8-21.3 M messages/s
// (Go's peer in the same hour, `tools/bench fan_in --impl go --runs 3 --nice -20`: 11.9 M; one
// Grove worker: 22.2 M). Gathering the senders alone, the receiver free: 9.7-13.3 M/s.
// Rejected: ending the gathering at the first run without a mute (a sender's runs alternate, so it
// ended at once: no change); keeping it until the process waits for something else (a process that
// once flooded and then computes and yields would stay on one core for ever); keeping at home only
// the yields of a receiver that is overloaded (it has caught up when it yields: ~650 of its yields a
// run still went to the local queue and were stolen).
//
// ## Rejected
// - A send cost that grows with the receiver's queue (BEAM): tried on fan_in, peak RSS 121 -> 12-22
//   MiB but the rate fell from 7.26 M/s to 4.6-5.6 M/s: on 2 workers the extra reductions made the
//   senders yield to each other, all still runnable on both cores (bench/RESULTS.md).
// - Bounded mailboxes or blocking sends: change what a send means.
// - The registry in the PCB (a list head per process): the PCB has no byte to spare (192 B), and
//   overloads are rare, so a sharded lock is cheap enough.
#include "overload.hpp"

#include <grove/introspection.hpp>
#include <grove/trace.hpp>

#include <algorithm>

#include "clock.hpp"
#include "delivery.hpp"
#include "receive.hpp"
#include "scheduler.hpp"
#include "signal_handling.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {
// The longest a sender waits at a time: some senders never wait (a scoped_process's thread, timers,
// the distribution reader, overloaded processes), and they can keep a receiver's inbox from ever
// emptying; a bounded wait keeps every sender making progress.
constexpr std::int64_t longest_mute_ns = 10'000'000;

// "Senders gather where their receiver runs": p runs on worker `here` (the caller's) from now on,
// unless it is pinned or `here` is no worker. relaxed: process.hpp, `home`.
void gather(process* p, int here) noexcept {
  if (here >= 0 && !is_pinned_home(p->home.load(std::memory_order_relaxed)))
    p->home.store(static_cast<std::uint16_t>(gathered_flag | static_cast<unsigned>(here)), std::memory_order_relaxed);
}
}  // namespace

void begin_overload(process* p) noexcept {
  if (p->overloaded || p->kind != process_kind::scheduled || p->exiting) return;
  p->overloaded = true;
  // release: nothing to publish but the bit; senders read it after their own RMW on this word.
  p->control.fetch_or(ctl_overloaded, std::memory_order_release);
}

void end_overload(process* p) noexcept {
  if (!p->overloaded) return;
  p->overloaded = false;
  runtime_state* rt = current_runtime();
  // acq_rel: before the shard's lock below, so that a sender locking after us reads the bit clear.
  p->control.fetch_and(~ctl_overloaded, std::memory_order_acq_rel);
  if (!rt) return;
  const pid self = p->id();
  const int here = worker_index_for(*rt);
  auto& s = rt->mutes.shard_for(self);
  std::lock_guard<std::mutex> g(s.lock);
  // Woken in place, under the lock (a wake takes no shard lock): nothing to allocate, so none is
  // left behind when memory runs out.
  auto waiting = std::partition(s.muted.begin(), s.muted.end(), [&](const auto& e) { return e.first != self.bits(); });
  for (auto it = waiting; it != s.muted.end(); ++it) {
    if (process* q = rt->table.acquire(it->second)) {
      gather(q, here);
      rt->wake(q, trace::wake_cause::unmuted);
      rt->table.release(q, here);
    }
  }
  if (waiting != s.muted.end()) {
    gather(p, here);  // and the receiver with them
    p->flooded_this_run = true;
  }
  s.muted.erase(waiting, s.muted.end());
}

void wait_for_overloaded(process* self, pid to) {
  if (self->kind != process_kind::scheduled || self->overloaded || self->exiting || self->in_exit_protocol ||
      to == self->id() || to.is_remote())
    return;
  runtime_state* rt = current_runtime();
  process* q = rt->table.acquire(to);
  if (!q) return;
  bool waits = false;
  {
    auto& s = rt->mutes.shard_for(to);
    std::lock_guard<std::mutex> g(s.lock);
    // acquire: after the receiver's clear (its fetch_and precedes its lock of this shard).
    const std::uint32_t c = q->control.load(std::memory_order_acquire);
    if ((c & ctl_overloaded) && !(c & ctl_exited)) {
      try {
        s.muted.emplace_back(to.bits(), self->id());
        waits = true;
      } catch (...) {
        // out of memory: the sender goes on without waiting
      }
    }
  }
  rt->table.release(q, worker_index_for(*rt));
  if (!waits) return;
  self->flooded_this_run = true;
  // Published for introspection while it waits (process.hpp, `activity`); relaxed: a snapshot.
  self->activity.store(static_cast<std::uint8_t>(wait_reason::muted), std::memory_order_relaxed);
  const bool had_timer = self->timer_armed;  // not in a receive (send_node is not called from one)
  if (!had_timer) arm_timeout(self, deadline_after_ns(longest_mute_ns));
  park_current(self, park_reason::wait);
  if (!had_timer && self->timer_armed) disarm_timeout(self);
  self->activity.store(0, std::memory_order_relaxed);
  {
    // Woken by anything else (mail, a signal, the bound): its entry goes, so the registry holds at
    // most one entry per waiting sender.
    auto& s = rt->mutes.shard_for(to);
    std::lock_guard<std::mutex> g(s.lock);
    auto it = std::find(s.muted.begin(), s.muted.end(), std::make_pair(to.bits(), self->id()));
    if (it != s.muted.end()) s.muted.erase(it);
  }
  drain_inbox(self, self->exits_deferred == 0);  // an exit signal that came meanwhile acts now
}

}  // namespace grove::internal
