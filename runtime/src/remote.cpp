// remote.cpp: remote pids and the seam to a distribution layer (grove/remote.hpp).
//
// ## What a remote pid is
// A pid with a non-zero node slot (grove/pid.hpp): the slot names the node in a process-wide table
// of node names, the creation names the node's incarnation, and ID and serial are the process's own
// numbers there, as OTP 24's NEW_PID_EXT carries them. Nothing per remote process is stored
// anywhere, so holding a remote pid costs nothing and never goes stale differently from a local one.
// The table holds names only (as Erlang's atom table does, and bounded like it): a cluster's node
// names are few, and a name's slot never changes, so a remote pid printed or compared is stable.
//
// ## Outgoing: one seam, found where a local lookup fails
// Everything the runtime sends goes through deliver() or deliver_exit_signal() (delivery.cpp),
// which look the target up in the process table. A remote pid is never found there (acquire
// checks the node first), so the miss path, and only it, asks whether the target is remote and
// hands the node to route_remote: the local message path pays nothing for distribution. route_remote
// turns each signal node into one call on the router (link, unlink, exit, monitor, demonitor, down;
// a message goes as it is), from the sender's thread, so what one sender sends to one receiver
// reaches the router in send order; the router keeps that order on the wire.
//
// ## Without a router
// A remote pid outlives the connection it came by (and the distribution layer itself). What is
// sent to it then finds no node, and is answered as Erlang answers for a node it cannot reach: a
// message is a dead letter; a link gets exit{noconnection} back through the link, a monitor
// down{noconnection}; the rest is dropped.
//
// ## Incoming
// The distribution layer calls remote::deliver_*, which make the same signal nodes a local sender
// would and deliver them the same way, with one difference: a target that is gone is answered as a
// dead local process answers (answer_for_exited: a link gets exit{noproc}, a monitor down{noproc},
// each routed back to the remote sender), since a remote sender has no synchronous answer to wait
// for as a local link() does.
//
// ## A busy node
// A router may ask a process that sent a message to wait (router::busy: OTP's busy_dist_port, so a
// sender cannot queue without bound for a node that reads slower than it writes). The runtime asks
// after the send, outside the noexcept path that routed it, and waits outside any router call: a
// waiting sender holds the gate (a shared_ptr), not the router, so removal never waits for it.
//
// ## Removal (set_router(nullptr)) and its orders
// Callers announce themselves in `users` and then load `router`; the remover stores null and then
// waits for `users` to reach zero. Both pairs are seq_cst, so in their single total order either a
// caller's load comes before the store (and its increment before the remover's wait, which then
// waits for it) or after it (and it sees null). Rejected: a mutex around every routed send (remote
// sends from every worker would serialise on it), and a shared_ptr per call (an RMW on one shared
// count, as ours, plus an allocation's lifetime to reason about).
#include "remote.hpp"

#include <exception>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <grove/errc.hpp>
#include <grove/link.hpp>

#include "delivery.hpp"
#include "scheduler.hpp"
#include "signal_nodes.hpp"

namespace grove::internal {

namespace {

constexpr std::size_t max_node_names = 65535;
constexpr std::size_t max_node_name_bytes = 255;

struct node_table {
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::shared_mutex lock;
  std::vector<std::string> names{std::string()};  // guarded by lock; slot 0 is never given
  std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>> slots;  // guarded by lock
};

node_table& nodes() {
  static node_table t;  // process-wide and never destroyed before its users: see the file comment
  return t;
}

// Calls fn(router&) if a router is installed, else returns false. See "Removal".
template <class F>
bool with_router(runtime_state& rt, F&& fn) noexcept {
  rt.remote.users.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: see "Removal"
  remote::router* r = rt.remote.router.load(std::memory_order_seq_cst);
  if (r) fn(*r);
  rt.remote.users.fetch_sub(1, std::memory_order_seq_cst);  // seq_cst: the remover's wait reads it
  return r != nullptr;
}

}  // namespace

void wait_after_remote_send(runtime_state& rt, pid to) {
  if (!remote::sender_may_wait()) return;
  std::shared_ptr<remote::send_gate> gate;
  with_router(rt, [&](remote::router& r) { gate = r.busy(to); });
  if (gate) gate->wait();
}

void route_remote(runtime_state& rt, pid to, detail::message_node* n) noexcept {
  detail::node_owner owner(n);  // freed on the way out unless handed on
  if (!n->type->is_signal) {
    process* self = current_process();
    const pid from = self ? self->id() : pid();
    if (!with_router(rt, [&](remote::router& r) { r.send(from, to, owner.release()); }))
      rt.dead_letters.fetch_add(1, std::memory_order_relaxed);  // statistics
    return;
  }
  if (auto* s = signal_as<link_signal>(n)) {
    if (!with_router(rt, [&](remote::router& r) { r.link(s->from, to); }))
      deliver_exit_signal(rt, s->from, to, remote::noconnection(), true);
  } else if (auto* u = signal_as<unlink_signal>(n)) {
    with_router(rt, [&](remote::router& r) { r.unlink(u->from, to); });
  } else if (auto* e = signal_as<exit_signal_node>(n)) {
    with_router(rt, [&](remote::router& r) { r.exit(e->from, to, e->reason, e->via_link); });
  } else if (auto* m = signal_as<monitor_signal>(n)) {
    if (!with_router(rt, [&](remote::router& r) { r.monitor(m->from, to, m->ref, {}); })) {
      try {
        deliver(rt, m->from, make_signal<down_signal>(to, m->ref, remote::noconnection()), true);
      } catch (...) {
        // Out of memory: that answer is lost.
      }
    }
  } else if (auto* d = signal_as<demonitor_signal>(n)) {
    with_router(rt, [&](remote::router& r) { r.demonitor(d->from, to, d->ref); });
  } else if (auto* w = signal_as<down_signal>(n)) {
    with_router(rt, [&](remote::router& r) { r.down(w->from, to, w->ref, w->reason); });
  }
  // info and alias deliveries never address a remote pid (their pids come from this runtime).
}

void route_remote_exit(runtime_state& rt, pid to, pid from, const exit_reason& reason, bool via_link) noexcept {
  with_router(rt, [&](remote::router& r) { r.exit(from, to, reason, via_link); });
}

void route_remote_name_monitor(runtime_state& rt, pid watcher, std::uint32_t node, std::string_view name,
                               std::uint64_t ref) noexcept {
  const pid target = remote::name_target(node);
  if (!with_router(rt, [&](remote::router& r) { r.monitor(watcher, target, ref, name); })) {
    try {
      deliver(rt, watcher, make_signal<down_signal>(target, ref, remote::noconnection()), true);
    } catch (...) {
      // Out of memory: that answer is lost.
    }
  }
}

std::string this_node_name(const runtime_state& rt) {
  std::lock_guard<std::mutex> g(rt.remote.lock);
  return rt.remote.node_name.empty() ? std::string(local_node_name) : rt.remote.node_name;
}

}  // namespace grove::internal

namespace grove::remote {

using namespace grove::internal;

namespace {
runtime_state& require_runtime() {
  runtime_state* rt = current_runtime();
  if (!rt) throw error(errc::not_running);
  return *rt;
}
}  // namespace

std::uint32_t node_slot(std::string_view name) {
  if (name.empty() || name.size() > max_node_name_bytes)
    throw error(errc::bad_argument, "remote::node_slot: a node name has 1 to 255 bytes");
  node_table& t = nodes();
  {
    std::shared_lock<std::shared_mutex> g(t.lock);
    if (auto it = t.slots.find(name); it != t.slots.end()) return it->second;
  }
  std::unique_lock<std::shared_mutex> g(t.lock);
  if (auto it = t.slots.find(name); it != t.slots.end()) return it->second;
  if (t.names.size() > max_node_names) throw error(errc::process_limit, "remote::node_slot: the node table is full");
  const auto slot = static_cast<std::uint32_t>(t.names.size());
  t.names.emplace_back(name);
  t.slots.emplace(std::string(name), slot);
  return slot;
}

std::string node_name(std::uint32_t slot) {
  node_table& t = nodes();
  std::shared_lock<std::shared_mutex> g(t.lock);
  return slot < t.names.size() ? t.names[slot] : std::string();
}

std::string this_node() { return this_node_name(require_runtime()); }

bool sender_may_wait() noexcept {
  const process* p = current_process();
  return p && !p->exiting && !p->in_exit_protocol && p->exits_deferred == 0 && std::uncaught_exceptions() == 0;
}

std::uint32_t this_creation() {
  runtime_state& rt = require_runtime();
  std::lock_guard<std::mutex> g(rt.remote.lock);
  return rt.remote.creation;
}

void set_router(router* r, std::string_view node_name, std::uint32_t creation) {
  runtime_state& rt = require_runtime();
  if (r && node_name.empty()) throw error(errc::bad_argument, "remote::set_router: a router needs this node's name");
  if (r) {
    std::lock_guard<std::mutex> g(rt.remote.lock);
    if (rt.remote.router.load(std::memory_order_relaxed))  // relaxed: installs are serialised by the lock
      throw error(errc::bad_argument, "remote::set_router: a router is installed already");
    rt.remote.node_name = node_name;
    rt.remote.creation = creation;
    rt.remote.router.store(r, std::memory_order_seq_cst);  // seq_cst: see "Removal"
    return;
  }
  {
    std::lock_guard<std::mutex> g(rt.remote.lock);
    rt.remote.router.store(nullptr, std::memory_order_seq_cst);  // seq_cst: see "Removal"
    rt.remote.node_name.clear();
    rt.remote.creation = 0;
  }
  while (rt.remote.users.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();  // see "Removal"
}

exit_reason noconnection() { return exit_reason("noconnection"); }

void deliver_message(pid to, detail::message_node* message) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) {
    detail::destroy_node(message);
    return;
  }
  deliver(*rt, to, message, true, true);
}

void deliver_to_alias(const alias& to, detail::message_node* message) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt || to.owner.is_remote()) {
    detail::destroy_node(message);
    return;
  }
  detail::message_node* n = nullptr;
  try {
    n = make_signal<alias_delivery>(to.id, message);
  } catch (...) {
    detail::destroy_node(message);  // out of memory: dropped, as for an inactive alias
    return;
  }
  deliver(*rt, to.owner, n, true, true);
}

namespace {
// Makes a signal node of kind T and delivers it, answering for a target that is gone. Out of
// memory drops it.
template <class T, class... A>
void deliver_signal(pid to, bool wake, A&&... a) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) return;
  detail::message_node* n = nullptr;
  try {
    n = make_signal<T>(std::forward<A>(a)...);
  } catch (...) {
    return;
  }
  deliver(*rt, to, n, wake, true);
}
}  // namespace

void deliver_link(pid to, pid from) noexcept { deliver_signal<link_signal>(to, false, from); }
void deliver_unlink(pid to, pid from) noexcept { deliver_signal<unlink_signal>(to, false, from); }
void deliver_monitor(pid to, pid watcher, std::uint64_t ref) noexcept { deliver_signal<monitor_signal>(to, false, watcher, ref); }
void deliver_demonitor(pid to, pid watcher, std::uint64_t ref) noexcept {
  deliver_signal<demonitor_signal>(to, false, watcher, ref);
}
void deliver_down(pid watcher, pid from, std::uint64_t ref, exit_reason reason) noexcept {
  deliver_signal<down_signal>(watcher, true, from, ref, std::move(reason));
}

void deliver_exit(pid to, pid from, exit_reason reason, bool via_link) noexcept {
  runtime_state* rt = current_runtime();
  if (!rt) return;
  deliver_exit_signal(*rt, to, from, std::move(reason), via_link);
}

std::uint64_t new_ref() {
  return require_runtime().next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
}

}  // namespace grove::remote
