// exit_protocol.hpp: how a process ends (design in exit_protocol.cpp).
#pragma once

#include <grove/exit_reason.hpp>

#include "scheduler.hpp"

namespace grove::internal {

// Marks p as ending with `reason`, which check_pending_exit reads back if p swallows its exit_unwind.
inline void mark_exiting(process* p, const exit_reason& reason) {
  p->exiting = true;
  p->ensure_extra().reason = reason;
}

// Ends p with reason from inside it: throws exit_unwind (for a scoped process: exits it at once and
// throws grove::error(errc::noproc), since a foreign thread cannot be unwound by Grove).
[[noreturn]] void die(process* p, exit_reason reason);

// Process context: if p is exiting (it swallowed exit_unwind), throws it again — unless the stack
// is already unwinding, where a second exception would terminate the program.
void check_pending_exit(process* p);

// The exit protocol, run by the exiting process itself (exit_protocol.cpp): tell links and monitors,
// drop the name, release the arena and the function. Never throws. rt is null for a scoped process
// whose runtime has stopped.
void exit_process(runtime_state* rt, process* p, const exit_reason& reason) noexcept;

// A scheduled process's last act, on its own stack: the exit protocol, then the final switch to the
// worker running it. The stack is abandoned, so nothing on it may own memory by then.
[[noreturn]] void finish_process(process* p, exit_reason reason);

// Ends p without unwinding its stack (it swallowed its exit_unwind): reports it on stderr, runs the
// exit protocol and switches away for good.
[[noreturn]] void abandon_process(process* p, exit_reason reason);

}  // namespace grove::internal
