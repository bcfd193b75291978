// delivery.hpp: putting messages and signals into another process's mailbox (design in delivery.cpp).
#pragma once

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>

#include "scheduler.hpp"

namespace grove::internal {

// Delivers a node (message or signal) to the process `to`, waking it if `wake`. Without `wake` (a
// signal that can wait for the process's next run) it is pushed lazily and wakes `to` only if that is
// needed to keep a node behind it visible (mailbox.hpp). Consumes n. False if `to` does not exist (n
// is destroyed, or with `answer_if_gone` answered as answer_for_exited answers; a message counts as a
// dead letter) or has exited (answer_for_exited answers n). A remote `to` is routed to the
// distribution layer (remote.cpp): true. Any thread.
// What it did (true when delivered): after a push with wake it also tells whether `to` is
// overloaded (overload.cpp), for the sender to wait.
enum delivery : unsigned { not_delivered = 0, delivered = 1, delivered_to_overloaded = 3 };
delivery deliver(runtime_state& rt, pid to, message_node* n, bool wake, bool answer_if_gone = false) noexcept;

// Sends an exit signal to q (the caller holds a reference on q), counting it in q->exit_signals
// first (exit_protocol.cpp, "busy processes"). Any thread.
void send_exit_signal(runtime_state& rt, process* q, pid from, exit_reason reason, bool via_link) noexcept;
// The same to a pid: a no-op if `to` does not exist or has exited; routed if `to` is remote.
void deliver_exit_signal(runtime_state& rt, pid to, pid from, exit_reason reason, bool via_link) noexcept;

// What an exited process "answers" to a node that reaches it: link → exit{noproc}, monitor →
// down{noproc}, process_info → gone, a message → a dead letter. Consumes n.
void answer_for_exited(runtime_state& rt, pid dead, message_node* n) noexcept;

// Runs when a PCB's last reference is dropped (process_table.cpp): empties its mailbox, answering
// the signals that arrived after the process exited.
void finalize_process(runtime_state& rt, process* p) noexcept;
// The same in two halves, for a worker that finalizes several PCBs at once (worker.cpp,
// "Finalizing in batches"): one wait for the workers mid-send, after every last reference of the
// batch was dropped, then each PCB.
void wait_out_senders(runtime_state& rt) noexcept;
void finalize_waited_out(runtime_state& rt, process* p) noexcept;

// The worker index to use for table bookkeeping from this thread (-1 on foreign threads).
int worker_index_for(const runtime_state& rt) noexcept;

}  // namespace grove::internal
