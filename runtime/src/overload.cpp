// overload.cpp: a process that cannot keep up with its mail makes its senders wait (Pony's muting).
//
// Sends never fail, never drop and never bound a mailbox (Erlang's semantics). But when many
// processes flood one, the backlog grows without limit (memory), and the senders keep the CPU the
// receiver needs to catch up. So a sender that finds the receiver overloaded waits, after its
// message is in, until the receiver has caught up; the backlog stays within a few batches.
// bench/grove/fan_in (16 senders, 250,000 messages each, to one receiver), the builds before and
// after alternating (`for i in $(seq 9); do for b in before after; do /usr/bin/time -f %M nice -n
// -20 $b/bench/grove/fan_in --threads 2; done; done`): peak RSS 84-120 MiB -> 9-17 MiB; on 2 workers
// 5.98 -> 6.90 M messages/s (medians of 9; 5.3-9.9 and 5.7-11.5: within the noise), on 1 worker
// 10.68 -> 12.58 M/s (medians of 5; 4.3-11.9 and 11.9-13.1). What still limits 2 workers is the
// receiver's first cache line (reference count, inbox head, control word), which every push from
// the other core takes away from it (perf: state::wake 27%, process_table::acquire 24%, deliver 15%).
// The check costs a hop 11 instructions of ~1,020 (`valgrind --tool=callgrind
// build/release/bench/grove/ring --n 200000 --threads 1`: 203.6 M -> 205.8 M).
//
// ## States
// - Overloaded: set by the receiver itself when one drain of its inbox (signal_handling.cpp) takes a
//   full batch (drain_batch, 256) and finds more behind it. It is a bit in the control word
//   (ctl_overloaded), so a sender learns it from the word its wake's fetch_or just brought into its
//   cache (delivery.cpp): no extra read-modify-write and no extra cache line on the send path.
// - Caught up: the receiver clears the bit when a drain empties its inbox (whether it stops at the
//   end or at a full batch), when it starts a blocking call, and when it exits; then it wakes every
//   sender that waits for it. A process waits (receive, sleep, IO) only once a drain has found its
//   inbox empty, so a process that waits is never overloaded.
// - Muted: a sender that found the bit set records itself in the registry (runtime::state::mutes,
//   by receiver) under the shard's lock, re-reading the bit there, and parks (wait_reason::muted).
//   The receiver clears the bit before it takes the shard's lock to collect its senders, so a
//   sender either sees the bit cleared or is collected: none waits for an overload that has ended.
//   A sender woken by anything else (a message, a signal) just goes on; its stale entry costs one
//   spurious wake later, which every park tolerates (each re-checks what it waits for).
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
// What a sender can wait for unboundedly: a receiver that computes without runtime calls, which
// holds its worker the same way.
//
// ## Rejected
// - A send cost that grows with the receiver's queue (BEAM): tried on fan_in, peak RSS 121 -> 12-22
//   MiB but the rate fell from 7.26 M/s to 4.6-5.6 M/s: on 2 workers the extra reductions made the
//   senders yield to each other, all still runnable on both cores (bench/RESULTS.md).
// - Bounded mailboxes or blocking sends: change what a send means.
// - The registry in the PCB (a list head per process): the PCB has no byte to spare (256 B), and
//   overloads are rare, so a sharded lock is cheap enough.
#include "overload.hpp"

#include <grove/introspection.hpp>
#include <grove/trace.hpp>

#include "delivery.hpp"
#include "receive.hpp"
#include "scheduler.hpp"
#include "signal_handling.hpp"

namespace grove::internal {

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
  std::vector<pid> senders;
  {
    auto& s = rt->mutes.shard_for(self);
    std::lock_guard<std::mutex> g(s.lock);
    auto keep = s.muted.begin();
    for (auto it = s.muted.begin(); it != s.muted.end(); ++it) {
      if (it->first == self.bits()) {
        try {
          senders.push_back(it->second);
        } catch (...) {
          *keep++ = *it;  // out of memory: left for the next end of an overload (its wait goes on)
        }
      } else {
        *keep++ = *it;
      }
    }
    s.muted.erase(keep, s.muted.end());
  }
  const int here = worker_index_for(*rt);
  for (pid sender : senders) {
    if (process* q = rt->table.acquire(sender)) {
      rt->wake(q, trace::wake_cause::unmuted);
      rt->table.release(q, here);
    }
  }
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
  // Published for introspection while it waits (process.hpp, `activity`); relaxed: a snapshot.
  self->activity.store(static_cast<std::uint8_t>(wait_reason::muted), std::memory_order_relaxed);
  park_current(self, park_reason::wait);
  self->activity.store(0, std::memory_order_relaxed);
  drain_inbox(self, self->exits_deferred == 0);  // an exit signal that came meanwhile acts now
}

}  // namespace grove::internal
