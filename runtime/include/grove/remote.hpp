// grove/remote.hpp: processes of other nodes. The node table that remote pids name their node by,
// and the seam between the runtime and a distribution layer (grove::dist, or one of your own): the
// runtime hands it everything addressed to a remote pid, and it hands the runtime everything a
// remote process sends here.
//
// What crosses the seam, and what the runtime does with it, keeps OTP's rules for local processes:
// a remote pid can be linked, monitored, sent to and sent exit signals like a local one; each
// process still changes only its own link set and monitor maps. The runtime keeps no per-node state
// of its own: the router (the distribution layer) keeps what it needs to answer for a node that goes
// away (noconnection to every link and monitor over it).
//
// Applications use grove::dist (grove/dist/node.hpp); this header is for the layer itself and for
// tests that stand in for one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <grove/detail/message_node.hpp>
#include <grove/exit_reason.hpp>
#include <grove/message.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::remote {

// ---- The node table ----
// Node names (Erlang's node atoms, "name@host") by slot, process-wide, as Erlang's atom table: a slot
// once given names that node for the program's life, so a remote pid stays valid across
// connections and runtimes. Slot 0 is never given (it marks local pids). Thread-safe.

// The slot of `name`, given on first use. Throws grove::error(errc::bad_argument) for an empty name
// or one longer than 255 bytes (Erlang's atom limit), errc::process_limit once 65,535 names are taken.
std::uint32_t node_slot(std::string_view name);
// The name in `slot`; empty for 0 or a slot never given.
std::string node_name(std::uint32_t slot);

// This runtime's node name: the distribution layer's while one is installed, else
// grove::local_node_name ("nonode@nohost"). Throws grove::error(errc::not_running) without a runtime.
std::string this_node();
// This runtime's creation while a distribution layer is installed, else 0.
std::uint32_t this_creation();

// The pid that stands for "the process registered as a name on `node`" in a monitor by remote name
// (grove::monitor(name, node)): remote, creation 0 (which no distributed node has), ID and serial 0.
inline pid name_target(std::uint32_t node) noexcept { return pid::remote(node, 0, 0, 0); }
inline bool is_name_target(pid p) noexcept { return p.is_remote() && p.creation() == 0 && p.bits() == 0; }

// ---- Outgoing: what the runtime asks of the distribution layer ----
// The runtime calls these for anything addressed to a remote pid, from the thread of whoever sends
// it (a process, a foreign thread, a process in its exit protocol). They must not block or throw,
// and must keep the order of what one sender sends to one receiver (OTP's only ordering guarantee).
// Each names the sender `from` (the null pid for a foreign thread).
// Whether the calling thread may wait at a send_gate now: a process (or scoped_process) that is not
// exiting (unwinding, or in its exit protocol: a gate opened by a message could never open for it)
// and not deferring exits (grove::exit_deferral promises that its sends do not raise). A router
// asks before it hands out a gate.
bool sender_may_wait() noexcept;

// What a process that sent to a busy node waits on (router::busy).
class send_gate {
 public:
  virtual ~send_gate() = default;
  // Process context; returns once the process may go on. May park; an exit signal that kills the
  // process meanwhile ends the wait by unwinding (grove::exit_unwind), as in receive.
  virtual void wait() = 0;
};

class router {
 public:
  virtual ~router() = default;
  // After a process has sent a message to `to` (send, to a name, to an alias): a gate it must wait
  // at before it goes on, or null (OTP's busy_dist_port: a sender to a node whose output queue is
  // past its limit is suspended until the queue drains). The runtime waits outside any router call,
  // so the router may be removed meanwhile. Asked only when sender_may_wait().
  virtual std::shared_ptr<send_gate> busy(pid to) noexcept {
    (void)to;
    return nullptr;
  }
  // A message. Owns `message` (detail::destroy_node frees it).
  virtual void send(pid from, pid to, detail::message_node* message) noexcept = 0;
  // `from` (local) has added `to` to its links / removed it.
  virtual void link(pid from, pid to) noexcept = 0;
  virtual void unlink(pid from, pid to) noexcept = 0;
  // An exit signal: through a link (the link is gone on both sides once it is sent) or exit/2.
  virtual void exit(pid from, pid to, const exit_reason& reason, bool via_link) noexcept = 0;
  // `watcher` (local) monitors `target` under `ref` (grove::monitor: a runtime-wide id); target may
  // be name_target(node) with `name` set for a monitor by registered name (OTP's {Name, Node}).
  virtual void monitor(pid watcher, pid target, std::uint64_t ref, std::string_view name) noexcept = 0;
  virtual void demonitor(pid watcher, pid target, std::uint64_t ref) noexcept = 0;
  // Local process `from` has exited (or never existed: reason noproc) while remote `watcher`
  // monitored it under `ref` (the id deliver_monitor gave it).
  virtual void down(pid from, pid watcher, std::uint64_t ref, const exit_reason& reason) noexcept = 0;
};

// Installs `r` as the running runtime's router, with this node's name and creation (what a pid of
// this runtime is called on the wire), or removes it (nullptr). Removing waits until no call into
// the old router is in progress, so its owner may destroy it then. Without a router, what is sent to
// a remote pid finds no node: a message is a dead letter, a link or monitor is answered with the
// reason noconnection, as Erlang answers for a node it cannot reach. Throws errc::not_running
// without a runtime, errc::bad_argument for a router with an empty name.
void set_router(router* r, std::string_view node_name = {}, std::uint32_t creation = 0);

// The exit reason of a link or monitor cut by a lost connection: Erlang's noconnection.
exit_reason noconnection();

// ---- Incoming: what a remote process sends to a local one ----
// The distribution layer calls these (any thread) for each signal that arrives, in arrival order
// per sending process. A `to` that is not alive is answered as a dead local process answers: a
// message is a dead letter, a link is answered by router::exit(to, from, noproc, via_link), a monitor
// by router::down(to, watcher, ref, noproc); the others are dropped. None throws; out of memory drops
// the signal.

// A message; owns `message`.
void deliver_message(pid to, detail::message_node* message) noexcept;
// A message to one of this runtime's aliases (dropped unless it is active when its owner takes it).
void deliver_to_alias(const alias& to, detail::message_node* message) noexcept;
void deliver_link(pid to, pid from) noexcept;
void deliver_unlink(pid to, pid from) noexcept;
void deliver_exit(pid to, pid from, exit_reason reason, bool via_link) noexcept;
// Remote `watcher` monitors local `to` under `ref`: take a fresh one from new_ref().
void deliver_monitor(pid to, pid watcher, std::uint64_t ref) noexcept;
void deliver_demonitor(pid to, pid watcher, std::uint64_t ref) noexcept;
// A monitor that local `watcher` holds on remote `from` (under `ref`, as router::monitor gave it)
// has fired. For a monitor by name, `from` is the name_target of its node (the down message then
// names {name, node} and a null pid, as OTP's {'DOWN', Ref, process, {Name, Node}, Reason}).
void deliver_down(pid watcher, pid from, std::uint64_t ref, exit_reason reason) noexcept;
// A reference id no monitor or alias of this runtime has used. Throws errc::not_running without a runtime.
std::uint64_t new_ref();

}  // namespace grove::remote

GROVE_PUBLIC_END
