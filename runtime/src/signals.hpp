// signals.hpp: links, monitors, exit signals and the exit protocol (the design is in signals.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>

#include "scheduler.hpp"

namespace grove::internal {

// Delivers a node (message or signal) to the process `to`, waking it if `wake`. Without `wake` (a
// signal that can wait for the process's next run) it is pushed lazily and wakes `to` only if that is
// needed to keep a node behind it visible (mailbox.hpp). Consumes n. False if `to` does not exist (n
// is destroyed; a message counts as a dead letter). A process that has exited but is still referenced
// takes it; finalize_process answers it.
bool deliver(runtime_state& rt, pid to, message_node* n, bool wake) noexcept;

// What an exited process "answers" to a node that reaches it: link → exit{noproc}, monitor →
// down{noproc}, process_info → gone, a message → a dead letter. Consumes n.
void answer_for_exited(runtime_state& rt, pid dead, message_node* n) noexcept;

// Sends an exit signal to q (caller holds a reference on q).
void send_exit_signal(runtime_state& rt, process* q, pid from, exit_reason reason, bool via_link) noexcept;

// Process context: moves arrived messages to the saved list and acts on arrived signals, in order,
// at most drain_batch nodes per call: a process flooded with signals (monitors, links, exits from many
// others) must still get to look at the messages it has, between batches. Throws exit_unwind if a
// signal ends the process.
inline constexpr std::size_t drain_batch = 256;
struct drained {
  bool queued = false;  // a message was added to the saved list
  bool more = false;    // it stopped at the limit: there may be more in the inbox
};
drained drain_inbox(process* p);

// Process context: one reduction (a send, a received message, a spawn); yields at the end of the
// slice, and then acts on signals if asked (receive.cpp).
void charge(process* p, bool act_on_signals);

// Process context: if p is exiting (it swallowed exit_unwind), throws it again — unless the stack
// is already unwinding, where a second exception would terminate the program.
void check_pending_exit(process* p);

// Ends p without unwinding its stack (it swallowed its exit_unwind): reports it on stderr, runs the
// exit protocol and switches away for good (spawn.cpp).
[[noreturn]] void abandon_process(process* p, exit_reason reason);

// Marks p as ending with `reason`, which check_pending_exit reads back if p swallows its exit_unwind.
inline void mark_exiting(process* p, const exit_reason& reason) {
  p->exiting = true;
  p->ensure_extra().reason = reason;
}

// Ends p with reason from inside it: throws exit_unwind (for a scoped process: exits it at once and
// throws grove::error(errc::noproc), since a foreign thread cannot be unwound by Grove).
[[noreturn]] void die(process* p, exit_reason reason);

// The exit protocol, run by the exiting process itself (scheduler.cpp, signals.cpp): tell links and
// monitors, drop the name, release the arena and the function. Never throws.
void exit_process(runtime_state* rt, process* p, const exit_reason& reason) noexcept;

// The worker index to use for table bookkeeping from this thread (-1 on foreign threads).
int worker_index_for(const runtime_state& rt) noexcept;

// process_info's request (introspection.cpp answers it).
struct info_request;
void answer_info(process* p, info_request& req) noexcept;
void answer_info_gone(info_request& req) noexcept;
message_node* make_info_signal(std::shared_ptr<info_request> req);

}  // namespace grove::internal
