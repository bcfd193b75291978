// exit_protocol.hpp: how a process ends (design in exit_protocol.cpp).
#pragma once

#include <grove/exit_reason.hpp>

#include "scheduler.hpp"

namespace grove::internal {

// Marks p as ending with `reason` (an exit is decided; exit_protocol.cpp, "decided exits").
inline void mark_exiting(process* p, const exit_reason& reason) {
  p->exiting = true;
  p->activity.store(exiting_activity, std::memory_order_relaxed);  // published for introspection
  p->ensure_extra().reason = reason;
  end_overload_if_any(p);  // its destructors may wait for a sender that waits for it (overload.cpp)
}

// Throws p's decided exit: exit_unwind for a scheduled process; for a scoped process (a foreign
// thread Grove cannot unwind) it runs the exit protocol at once and throws grove::error(errc::noproc).
[[noreturn]] void raise_exit(process* p);

// mark_exiting, then raise_exit.
[[noreturn]] void die(process* p, exit_reason reason);

// Process context, first thing in every runtime call: acts on exit signals that arrived while the
// process ran without calling the runtime, and raises again an exit the process swallowed
// (exit_protocol.cpp, "busy processes" and "swallowed exits"). One relaxed load and a branch when
// there is nothing to do. `blocking`: the call may park (receive, sleep, yield), so it raises the
// exit even inside a catch block that is handling it.
void act_on_exit(process* p, bool blocking);
inline void before_runtime_call(process* p, bool blocking) {
  // relaxed: a signal still being pushed is seen at a later call; the drain's acquire loads order
  // the signal's contents
  if (p->exit_signals.load(std::memory_order_relaxed) != 0 || p->exiting) [[unlikely]] act_on_exit(p, blocking);
}

// The exit protocol, run by the exiting process itself (exit_protocol.cpp): tell links and monitors,
// drop the name, release the arena and the function. Never throws. rt is null for a scoped process
// whose runtime has stopped.
void exit_process(runtime_state* rt, process* p, const exit_reason& reason) noexcept;

// A scheduled process's last act, on its own stack, when its function has returned `returned` (or
// an exception or exit_unwind ended it with that reason): settles the reason (a decided exit, or an
// exit signal that arrived while it ran, wins), runs the exit protocol, and switches to the worker
// running it for good. The stack is abandoned, so nothing on it may own memory by then.
[[noreturn]] void finish_process(process* p, exit_reason returned);

}  // namespace grove::internal
