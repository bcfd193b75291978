// signal_handling.cpp: the receiving side of signals (signal_nodes.hpp lists them), with Erlang's
// rules (runtime/DESIGN.md, "OTP semantics").
//
// A process acts on its signals itself, in drain_inbox(), when it next runs a receive, a yield or a
// send that ends its slice; each process changes only its own link set and monitor maps, and the
// other side learns by a signal (OTP's rule: no process ever locks another). What each signal does:
//   link{from}            add `from` to its links
//   unlink{from}          remove it
//   monitor{from, ref}    remember that `from` monitors it under `ref`
//   demonitor{from, ref}  forget it
//   down{from, ref, why}  if it still holds monitor `ref`, drop it and queue a `down` message (a
//                         demonitor in between makes the down vanish: demonitor's guarantee)
//   exit{from, why, link} Erlang's rules:
//       - why == kill, sent directly (not through a link): die `killed`, trapping or not;
//       - through a link the receiver no longer has (it unlinked): ignore;
//       - trapping exits: queue an exit_signal message (kill through a link included);
//       - why == normal: ignore, unless it is the receiver's own exit(self(), normal);
//       - otherwise: die with `why`.
//   info{request}         answer process_info (introspection.cpp)
//   alias{id, message}    queue the message if alias `id` is still active, else drop it
#include "signal_handling.hpp"

#include <grove/link.hpp>

#include "exit_protocol.hpp"
#include "introspection.hpp"
#include "process.hpp"
#include "signal_nodes.hpp"

namespace grove::internal {

namespace {

// Acts on one signal (consumes it). True if it queued a message for the process.
bool handle_signal(process* p, message_node* n) {
  detail::node_owner owner(n);
  if (auto* s = signal_as<link_signal>(n)) {
    p->ensure_extra().links.insert(s->from);
    return false;
  }
  if (auto* s = signal_as<unlink_signal>(n)) {
    if (p->extra) p->extra->links.erase(s->from);
    return false;
  }
  if (auto* s = signal_as<monitor_signal>(n)) {
    p->ensure_extra().monitored_by.emplace(s->ref, s->from);
    return false;
  }
  if (auto* s = signal_as<demonitor_signal>(n)) {
    if (p->extra) p->extra->monitored_by.erase(s->ref);
    return false;
  }
  if (auto* s = signal_as<down_signal>(n)) {
    if (p->exiting || !p->extra || p->extra->monitors.erase(s->ref) == 0) return false;
    p->saved.append(detail::make_node<down>(down{monitor_ref{s->ref, s->from}, s->from, std::move(s->reason)}));
    return true;
  }
  if (auto* s = signal_as<info_signal>(n)) {
    answer_info(p, *s->request);
    return false;
  }
  if (auto* s = signal_as<alias_delivery>(n)) {
    if (p->exiting || !p->extra || p->extra->aliases.count(s->alias) == 0) return false;  // inactive: dropped
    p->saved.append(std::exchange(s->message, nullptr));
    return true;
  }
  if (auto* s = signal_as<exit_signal_node>(n)) {
    if (p->exiting) return false;  // already on its way out
    if (!s->via_link && s->reason.is_kill()) die(p, exit_reason::killed());
    if (s->via_link) {
      if (!p->extra || p->extra->links.erase(s->from) == 0) return false;  // unlinked meanwhile
    }
    if (p->trap_exit) {
      p->saved.append(detail::make_node<exit_signal>(exit_signal{s->from, std::move(s->reason)}));
      return true;
    }
    if (s->reason.is_normal()) {
      if (!s->via_link && s->from == p->id()) die(p, exit_reason::normal());
      return false;
    }
    die(p, std::move(s->reason));
  }
  return false;  // an unknown signal type cannot happen; dropping it is the safe answer
}

}  // namespace

drained drain_inbox(process* p) {
  drained d;
  for (std::size_t taken = 0;; ++taken) {
    if (taken == drain_batch) {
      d.more = p->mail.maybe_nonempty();
      return d;
    }
    message_node* n = p->mail.pop();
    if (!n) return d;
    if (!n->type->is_signal) {
      p->saved.append(n);
      d.queued = true;
      continue;
    }
    d.queued |= handle_signal(p, n);
  }
}

void drain_for_exit(process* p) noexcept {
  while (message_node* n = p->mail.pop()) {
    if (!n->type->is_signal) {
      detail::destroy_node(n);
      continue;
    }
    try {
      handle_signal(p, n);  // p->exiting: exit signals are ignored, so this does not throw exit_unwind
    } catch (...) {
      // Out of memory while recording a link: the link is lost, the exit goes on.
    }
  }
}

}  // namespace grove::internal
