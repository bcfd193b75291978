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

#include <exception>

#include <grove/link.hpp>

#include "exit_protocol.hpp"
#include "introspection.hpp"
#include "process.hpp"
#include "remote.hpp"
#include "scheduler.hpp"
#include "signal_nodes.hpp"
#include "tracer.hpp"

namespace grove::internal {

namespace {

enum class effect { none, queued, dies };

// Every message joins the saved queue here. Past runtime_config::unmatched_mail_warning the process
// is reported, once: one relaxed load and one compare per message below it (the count is the
// saved list's own).
// Always inlined: with the saved list's size an atomic, GCC 12 stopped inlining it into
// drain_inbox (+15 instructions a message, bench/grove/ring under callgrind).
[[gnu::always_inline]] inline void keep(process* p, message_node* n) {
  p->saved.append(n);
  if (p->saved.size() == unmatched_mail_threshold.load(std::memory_order_relaxed)) [[unlikely]]
    report_unmatched_mail(p);
}

// The trace's record of an exit signal acted on (tracer.cpp's table), before its reason moves on.
void trace_exit_signal(process* p, const exit_signal_node& s, trace::signal_outcome what) noexcept {
  if (tracing(trace::event_kind::exit_signal, p)) [[unlikely]]
    record(trace::event_kind::exit_signal, static_cast<std::uint8_t>(s.reason.what_kind()),
           static_cast<std::uint32_t>(what), p->id().bits(), s.from.bits(), intern_reason_text(s.reason),
           s.via_link ? 1 : 0);
}

// Acts on one signal (consumes it). An exit that ends the process is marked (mark_exiting), not
// raised: the caller decides whether it may throw now.
effect handle_signal(process* p, message_node* n, const void* drained_from) {
  detail::node_owner owner(n);
  if (auto* s = signal_as<link_signal>(n)) {
    p->ensure_extra().links.insert(s->from);
    return effect::none;
  }
  if (auto* s = signal_as<unlink_signal>(n)) {
    if (p->extra) p->extra->links.erase(s->from);
    return effect::none;
  }
  if (auto* s = signal_as<monitor_signal>(n)) {
    p->ensure_extra().monitored_by.emplace(s->ref, s->from);
    return effect::none;
  }
  if (auto* s = signal_as<demonitor_signal>(n)) {
    if (p->extra) p->extra->monitored_by.erase(s->ref);
    return effect::none;
  }
  if (auto* s = signal_as<down_signal>(n)) {
    if (p->exiting || !p->extra || p->extra->monitors.erase(s->ref) == 0) return effect::none;
    down d{monitor_ref{s->ref, s->from}, s->from, std::move(s->reason), {}, {}};
    if (auto it = p->extra->monitor_names.find(s->ref); it != p->extra->monitor_names.end()) {
      d.name = std::move(it->second);  // a monitor by name: the item is {name, node}, as in OTP
      if (s->from.is_remote()) {
        d.node = remote::node_name(s->from.node());
        if (remote::is_name_target(s->from)) d.from = pid();  // nobody here knows who held the name
      } else if (runtime_state* rt = current_runtime()) {
        d.node = this_node_name(*rt);
      } else {
        d.node = local_node_name;
      }
      p->extra->monitor_names.erase(it);
    }
    if (tracing(trace::event_kind::down, p)) [[unlikely]]
      record(trace::event_kind::down, static_cast<std::uint8_t>(d.reason.what_kind()), 0, p->id().bits(), s->from.bits(),
             intern_reason_text(d.reason));
    keep(p, detail::make_node<down>(std::move(d)));
    return effect::queued;
  }
  if (auto* s = signal_as<info_signal>(n)) {
    answer_info(p, *s->request, drained_from);
    return effect::none;
  }
  if (auto* s = signal_as<alias_delivery>(n)) {
    if (p->exiting || !p->extra || p->extra->aliases.count(s->alias) == 0) return effect::none;  // inactive: dropped
    keep(p, std::exchange(s->message, nullptr));
    return effect::queued;
  }
  if (auto* s = signal_as<exit_signal_node>(n)) {
    p->exit_signals.fetch_sub(1, std::memory_order_relaxed);  // a count only; the node itself was acquired by pop
    if (p->exiting) return effect::none;  // already on its way out
    if (!s->via_link && s->reason.is_kill()) {
      trace_exit_signal(p, *s, trace::signal_outcome::exits);
      mark_exiting(p, exit_reason::killed());
      p->extra->exit_by_signal = true;
      return effect::dies;
    }
    if (s->via_link) {
      if (!p->extra || p->extra->links.erase(s->from) == 0) {  // unlinked meanwhile
        trace_exit_signal(p, *s, trace::signal_outcome::ignored);
        return effect::none;
      }
    }
    if (p->trap_exit) {
      trace_exit_signal(p, *s, trace::signal_outcome::trapped);
      keep(p, detail::make_node<exit_signal>(exit_signal{s->from, std::move(s->reason)}));
      return effect::queued;
    }
    if (s->reason.is_normal()) {
      if (s->via_link || s->from != p->id()) {
        trace_exit_signal(p, *s, trace::signal_outcome::ignored);
        return effect::none;
      }
      trace_exit_signal(p, *s, trace::signal_outcome::exits);
      mark_exiting(p, exit_reason::normal());  // its own exit(self(), normal)
      p->extra->exit_by_signal = true;
      return effect::dies;
    }
    trace_exit_signal(p, *s, trace::signal_outcome::exits);
    mark_exiting(p, s->reason);
    p->extra->exit_by_signal = true;
    return effect::dies;
  }
  return effect::none;  // an unknown signal type cannot happen; dropping it is the safe answer
}

}  // namespace

// noinline: its return address is the runtime call the process is in (a process_info's trace starts there).
__attribute__((noinline)) drained drain_inbox(process* p, bool may_raise) {
  drained d;
  for (std::size_t taken = 0;; ++taken) {
    if (taken == drain_batch) {
      d.more = p->mail.maybe_nonempty();
      // Its senders wait while a batch leaves more behind, and no longer once one empties the inbox
      // (here or below): overload.cpp.
      if (d.more) {
        begin_overload(p);
      } else {
        end_overload_if_any(p);
      }
      return d;
    }
    message_node* n = p->mail.pop();
    if (!n) {
      end_overload_if_any(p);
      return d;
    }
    if (!n->type->is_signal) {
      keep(p, n);
      d.queued = true;
      continue;
    }
    switch (handle_signal(p, n, __builtin_return_address(0))) {
      case effect::none: break;
      case effect::queued: d.queued = true; break;
      case effect::dies:
        // Another exception unwinding the stack (a destructor's runtime call): throwing now would
        // terminate the program. The exit is decided; it is raised after (exit_protocol.cpp).
        if (may_raise && std::uncaught_exceptions() == 0) raise_exit(p);
        d.more = p->mail.maybe_nonempty();
        return d;
    }
  }
}

void drain_for_exit(process* p) noexcept {
  while (message_node* n = p->mail.pop()) {
    if (!n->type->is_signal) {
      detail::destroy_node(n);
      continue;
    }
    try {
      handle_signal(p, n, nullptr);  // p->exiting: exit signals are ignored
    } catch (...) {
      // Out of memory while recording a link: the link is lost, the exit goes on.
    }
  }
}

}  // namespace grove::internal
