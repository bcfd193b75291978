// signal_handling.hpp: what a process does with the signals that reach it (design in signal_handling.cpp).
#pragma once

#include <cstddef>

namespace grove::internal {

struct process;

// Process context: moves arrived messages to the saved list and acts on arrived signals, in order,
// at most drain_batch nodes per call: a process flooded with signals (monitors, links, exits from many
// others) must still get to look at the messages it has, between batches. If a signal ends the
// process it stops there, marks the exit decided, and raises it (exit_protocol.hpp) when `may_raise`
// and no other exception is unwinding the stack; otherwise it returns with p->exiting set.
inline constexpr std::size_t drain_batch = 256;
struct drained {
  bool queued = false;  // a message was added to the saved list
  bool more = false;    // it stopped at the limit: there may be more in the inbox
};
drained drain_inbox(process* p, bool may_raise = true);

// Step 2 of the exit protocol (exit_protocol.cpp): acts on every queued signal without dying again
// (p is exiting, so exit signals are ignored) and frees queued messages.
void drain_for_exit(process* p) noexcept;

}  // namespace grove::internal
