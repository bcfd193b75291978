// scoped_waiter.hpp: how a scoped process's thread blocks and is woken (scoped_process.cpp).
#pragma once

#include <cstdint>

#include <grove/runtime.hpp>

namespace grove::internal {

struct process;
struct scoped_waiter;

// Any thread: wakes the scoped process's thread if it is blocked in wait_scoped.
void wake_scoped(process* p) noexcept;
// Blocks the scoped process's own thread until woken or until deadline_ns (0: none) passes.
void wait_scoped(process* p, std::uint64_t deadline_ns);
// When the PCB's last reference is dropped.
void destroy_scoped_waiter(scoped_waiter* w) noexcept;
// runtime::stop, once the phase is no longer running: wakes every blocked scoped process, whose
// wait then throws errc::not_running.
void release_scoped_waiters(grove::runtime::state& rt) noexcept;

}  // namespace grove::internal
