// links.cpp: the public API of links, monitors and exit signals (grove/link.hpp). Each call changes
// only the caller's own link set or monitor map and tells the other side by a signal
// (signal_handling.cpp acts on it there).
#include <fmt/format.h>

#include <grove/errc.hpp>
#include <grove/link.hpp>
#include <grove/message.hpp>
#include <grove/remote.hpp>

#include "delivery.hpp"
#include "exit_protocol.hpp"
#include "remote.hpp"
#include "signal_handling.hpp"
#include "signal_nodes.hpp"
#include "tracer.hpp"

namespace grove {

using namespace grove::internal;

namespace {

process* require_process() {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, false);
  return p;
}

runtime_state& require_runtime() {
  runtime_state* rt = current_runtime();
  if (!rt) throw error(errc::not_running);
  return *rt;
}

void trace_monitor(process* p, pid target, bool delivered) noexcept {
  if (tracing(trace::event_kind::monitor, p)) [[unlikely]]
    record(trace::event_kind::monitor,
           static_cast<std::uint8_t>(delivered ? trace::signal_outcome::none : trace::signal_outcome::noproc), 0,
           p->id().bits(), target.bits());
}

}  // namespace

void link(pid other) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  if (other == p->id()) return;
  process_extra& ex = p->ensure_extra();
  if (ex.links.count(other)) return;
  ex.links.insert(other);
  const bool delivered = deliver(rt, other, make_signal<link_signal>(p->id()), false);
  if (tracing(trace::event_kind::link, p)) [[unlikely]]
    record(trace::event_kind::link,
           static_cast<std::uint8_t>(delivered ? trace::signal_outcome::none : trace::signal_outcome::noproc), 0,
           p->id().bits(), other.bits());
  if (!delivered) {
    ex.links.erase(other);
    if (!p->trap_exit) throw error(errc::noproc, fmt::format("link: {} does not exist", other));
    p->mail.push(detail::make_node<exit_signal>(exit_signal{other, exit_reason::noproc()}));
  }
}

void unlink(pid other) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  if (!p->extra || p->extra->links.erase(other) == 0) return;
  if (tracing(trace::event_kind::unlink, p)) [[unlikely]]
    record(trace::event_kind::unlink, 0, 0, p->id().bits(), other.bits());
  deliver(rt, other, make_signal<unlink_signal>(p->id()), false);
}

monitor_ref monitor(pid target) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  std::uint64_t ref = rt.next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  p->ensure_extra().monitors.emplace(ref, target);
  const bool delivered = deliver(rt, target, make_signal<monitor_signal>(p->id(), ref), false);
  trace_monitor(p, target, delivered);
  if (!delivered) {
    // The target is gone: the down comes at once, through the same path as any other.
    p->mail.push(make_signal<down_signal>(target, ref, exit_reason::noproc()));
  }
  return monitor_ref{ref, target};
}

monitor_ref monitor(std::string_view name) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  if (name.empty()) throw error(errc::bad_argument, "monitor: an empty name");
  std::uint64_t ref = rt.next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  // OTP resolves the name once, now: the monitor is on the process that holds it at this moment.
  const pid target = rt.names.find(name);
  process_extra& ex = p->ensure_extra();
  ex.monitors.emplace(ref, target);
  ex.monitor_names.emplace(ref, std::string(name));
  const bool delivered = !target.is_null() && deliver(rt, target, make_signal<monitor_signal>(p->id(), ref), false);
  trace_monitor(p, target, delivered);
  if (!delivered) {
    // Nobody holds the name (or its holder is gone): the down comes at once, with noproc.
    p->mail.push(make_signal<down_signal>(target, ref, exit_reason::noproc()));
  }
  return monitor_ref{ref, target};
}

monitor_ref monitor(std::string_view name, std::string_view node) {
  runtime_state* rt = current_runtime();
  if (rt && (node == this_node_name(*rt) || node == local_node_name)) return monitor(name);
  process* p = require_process();
  runtime_state& r = require_runtime();
  if (name.empty()) throw error(errc::bad_argument, "monitor: an empty name");
  const std::uint32_t slot = remote::node_slot(node);  // throws for an empty or oversized node name
  std::uint64_t ref = r.next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  const pid target = remote::name_target(slot);
  process_extra& ex = p->ensure_extra();
  ex.monitors.emplace(ref, target);
  ex.monitor_names.emplace(ref, std::string(name));
  trace_monitor(p, target, true);
  route_remote_name_monitor(r, p->id(), slot, name, ref);
  return monitor_ref{ref, target};
}

bool demonitor(const monitor_ref& ref, bool flush) {
  process* p = require_process();
  bool active = p->extra && p->extra->monitors.erase(ref.id) > 0;
  if (active) {
    p->extra->monitor_names.erase(ref.id);
    if (tracing(trace::event_kind::demonitor, p)) [[unlikely]]
      record(trace::event_kind::demonitor, 0, 0, p->id().bits(), ref.target.bits());
    if (runtime_state* rt = current_runtime(); rt && !ref.target.is_null())
      deliver(*rt, ref.target, make_signal<demonitor_signal>(p->id(), ref.id), false);
  }
  if (flush) {
    drain_inbox(p);  // a down already in the inbox is dropped here (the monitor is gone)
    message_node* prev = nullptr;
    for (message_node* n = p->saved.head(); n;) {
      message_node* next = saved_list::next_of(n);
      if (n->type == detail::type_id<down>() && static_cast<detail::typed_node<down>*>(n)->value.ref.id == ref.id) {
        detail::destroy_node(p->saved.remove_after(prev));
      } else {
        prev = n;
      }
      n = next;
    }
  }
  return active;
}

bool trap_exit(bool on) {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  // Not before_runtime_call: the exit signals not yet acted on are handled by the new setting, so a
  // process that traps exits first thing traps every exit signal, however early (grove/link.hpp).
  if (p->exiting) act_on_exit(p, false);
  bool old = p->trap_exit;
  p->trap_exit = on;
  return old;
}

void exit(pid target, exit_reason reason) {
  runtime_state* rt = current_runtime();
  if (!rt) return;
  process* self = current_process();
  if (self) before_runtime_call(self, false);
  process* q = rt->table.acquire(target);
  if (!q) {
    if (target.is_remote()) route_remote_exit(*rt, target, self ? self->id() : pid(), reason, false);
    return;
  }
  send_exit_signal(*rt, q, self ? self->id() : pid(), std::move(reason), false);
  rt->table.release(q, worker_index_for(*rt));
  // A signal to oneself acts now: drain up to it (it is behind whatever had arrived before it).
  if (self && self == q)
    while (drain_inbox(self).more) {
    }
}

}  // namespace grove
