// timers.hpp: receive timeouts and send_after, on the workers' timer wheels (design in timers.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <grove/pid.hpp>
#include <grove/timer.hpp>

#include "scheduler.hpp"

namespace grove::detail {

// One send_after timer. Shared by the wheel (while pending) and the timer_refs. Its timer_node base
// is guarded by the wheel lock of `worker`.
struct timer_state : internal::timer_node {
  std::atomic<bool> pending{false};       // shared: true while in a wheel (set/cleared under its lock)
  std::uint16_t worker = 0;               // immutable once pending
  grove::runtime::state* rt = nullptr;    // immutable
  pid to;                                 // immutable
  message_node* message = nullptr;        // guarded by the wheel lock
  std::shared_ptr<timer_state> self;      // guarded by the wheel lock: keeps it alive while pending
  timer_state* next_fired = nullptr;      // owner: the worker firing it
};

}  // namespace grove::detail

namespace grove::internal {

// Process context: arms the process's timeout in the wheel of the worker it runs on (owner).
void arm_timeout(process* p, std::uint64_t deadline_ns);
// Removes it if armed. Owner (process context, or its exit protocol).
void disarm_timeout(process* p) noexcept;
// Worker: fires what is due in its wheel.
void fire_due_timers(worker& w);
// stop(): drops every pending send_after timer (their messages are destroyed undelivered).
void cancel_all_timers(runtime_state& rt) noexcept;

}  // namespace grove::internal
