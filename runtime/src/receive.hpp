// receive.hpp: the scheduling points a process passes through (receive.cpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "process.hpp"

namespace grove::internal {

// Process context: switches the running process back to its worker; returns when a worker resumes
// it (maybe another one: the worker that resumes it passes itself in the transfer).
void park_current(process* p, park_reason why);

// Process context: one reduction (a send, a received message, a spawn); yields at the end of the
// slice, and then acts on signals if asked.
// Inline: the common case is three field updates, and a call costs more than they do (with
// `reductions` an atomic GCC 12 stopped inlining it: ~20 instructions a hop, bench/grove/ring under
// callgrind).
void charge_at_slice_end(process* p, bool act_on_signals);
inline void charge(process* p, bool act_on_signals) {
  p->reductions.store(p->reductions.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // owner only
  if (p->kind != process_kind::scheduled) return;
  if (p->budget > 1) {
    --p->budget;
    return;
  }
  charge_at_slice_end(p, act_on_signals);
}

// Process context: waits until the io wait slot `slot` (io.hpp) holds readiness (ready: taken), or
// the deadline (steady-clock ns; never_deadline_ns: none) passes (timed_out), or finds another
// process waiting in it (busy: one waiter per direction). Acts on signals meanwhile (messages stay
// in the mailbox), so an exit signal ends the process as in receive; the slot never names the
// process once it has returned or unwound.
enum class io_wait { ready, timed_out, busy };
io_wait wait_ready(process* p, std::atomic<std::uint64_t>& slot, std::uint64_t deadline_ns);

}  // namespace grove::internal
