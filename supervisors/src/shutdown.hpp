// shutdown.hpp: stopping children with OTP's shutdown protocol. Internal; see shutdown.cpp.
#pragma once

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/supervisor/child_spec.hpp>
#include <vector>

namespace grove::supervisor::internal {

// Stops `pids` (children of the calling supervisor, linked to it) with `policy`, all at once, and
// returns the reason each one exited with, in the same order. Returns when all have exited.
std::vector<exit_reason> stop_processes(const std::vector<pid>& pids, shutdown_policy policy);

// Whether a child stopped with `policy` ended the way it was asked to (OTP's rules; anything else is
// reported as a shutdown_error).
bool stopped_cleanly(const exit_reason& why, shutdown_policy policy, restart_type restart) noexcept;

// normal, shutdown, or a user reason named "shutdown" (OTP's {shutdown, Term}).
bool is_normal_or_shutdown(const exit_reason& why) noexcept;

// In a catch (...) around user code run by a process: if what was caught is the runtime's unwinding
// of this very process (it is being ended), throws it on. Otherwise returns.
void rethrow_if_exiting();

}  // namespace grove::supervisor::internal
