// grove/link.hpp: links, monitors and exit signals, with Erlang's rules.
//
// A link is two-way: when either process exits, the other gets an exit signal with the reason. A
// process that does not trap exits dies of any reason but `normal` (with the same reason); one that
// traps exits receives the signal as an exit_signal message instead. `kill` sent directly with
// exit(pid, kill) cannot be trapped (the target dies `killed`); a `kill` that arrives through a link is
// an ordinary reason. A monitor is one-way and independent per call: the watcher gets one `down`
// message when the target exits, or at once with `noproc` if the target is already dead.
//
// All of these are signals: they travel in the target's mailbox queue, so from one sender to one
// receiver messages and signals arrive in the order sent. Each process changes only its own link and
// monitor sets; the other side learns through a signal (no process ever locks another).
// Call these from a process (or a scoped_process); they throw grove::error(errc::not_in_process) elsewhere.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// Names one monitor. Unique within a runtime's life.
struct monitor_ref {
  std::uint64_t id = 0;  // 0: no monitor
  grove::pid target;     // the monitored process
  explicit operator bool() const noexcept { return id != 0; }
  friend bool operator==(const monitor_ref&, const monitor_ref&) noexcept = default;
};

inline std::ostream& operator<<(std::ostream& os, const monitor_ref& r) { return os << "#Ref<" << r.id << '>'; }

// The message a trapping process receives for an exit signal: who sent it and why.
struct exit_signal {
  grove::pid from;
  exit_reason reason;
};

// The node name of a Grove runtime that is not part of a cluster, as Erlang's node() on a
// non-distributed node.
inline constexpr std::string_view local_node_name = "nonode@nohost";

// The message a watcher receives when a monitored process exits (or did not exist: reason noproc).
// For a monitor by registered name, the monitored item is {name, node} as in OTP's
// {'DOWN', Ref, process, {Name, Node}, Reason}: `name` and `node` are set, and `from` is the process
// that held the name when the monitor was made (null if nobody did). For a monitor by pid both are empty.
struct down {
  monitor_ref ref;
  grove::pid from;
  exit_reason reason;
  std::string name;
  std::string node;
};

// Links the calling process and `other` (a no-op if linked already, or if other is the caller).
// If `other` does not exist: a trapping caller receives exit_signal{other, noproc}; otherwise link
// throws grove::error(errc::noproc).
void link(pid other);
// Removes the link; afterwards no exit signal from that link reaches the caller, even one in flight.
void unlink(pid other);
// Starts monitoring `target`; see the file comment.
monitor_ref monitor(pid target);
// Starts monitoring the process registered as `name` (OTP's monitor(process, Name)): the name is
// looked up now and the monitor is on that process, whatever the name names later. Its down message
// names {name, node} (see down). If nobody holds the name, the down comes at once with noproc.
// Throws grove::error(errc::bad_argument) for an empty name.
monitor_ref monitor(std::string_view name);
// Starts monitoring the process registered as `name` on `node` (OTP's monitor(process, {Name, Node})).
// On this node (node is this node's name, or local_node_name), as monitor(name). On another node,
// through the distribution layer (grove/remote.hpp): the down names {name, node} and a null pid;
// its reason is noproc if nobody holds the name there, noconnection if the node cannot be reached or
// its connection goes. Throws grove::error(errc::bad_argument) for an empty name or node.
monitor_ref monitor(std::string_view name, std::string_view node);
// Stops the monitor. With flush, also removes its down message if one is already in the mailbox.
// Returns false if `ref` is not an active monitor of the caller (unknown, or already fired).
bool demonitor(const monitor_ref& ref, bool flush = false);
// Sets whether the caller traps exits; returns the previous setting. Exit signals that have arrived
// but that the caller has not acted on yet (it was computing) are handled by the new setting: a
// process that calls trap_exit(true) first thing traps every exit signal sent to it, however early.
bool trap_exit(bool on);
// Sends an exit signal to `target` from the caller (from a foreign thread: from the null pid). A no-op
// for a dead target. exit(self(), normal) ends the caller with reason normal, as in Erlang.
void exit(pid target, exit_reason reason);

}  // namespace grove

template <>
struct fmt::formatter<grove::monitor_ref> : fmt::formatter<fmt::string_view> {
  template <class Ctx>
  auto format(const grove::monitor_ref& r, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), "#Ref<{}>", r.id);
  }
};

GROVE_PUBLIC_END
