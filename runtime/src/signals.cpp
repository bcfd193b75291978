// signals.cpp: links, monitors and exit signals, with Erlang's rules (DESIGN-NOTES §5).
//
// Signals are mailbox nodes whose type is marked `is_signal` (grove/detail/message_node.hpp). They
// travel in the same queue as messages, so from one sender to one receiver everything arrives in
// send order, and they are acted on by the receiving process itself, in drain_inbox(), when it next
// runs a receive, a yield or a send that ends its slice. Each process changes only its own link set
// and monitor maps; the other side learns by a signal (OTP's rule: no process ever locks another).
//
// The signals and what the receiver does:
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
//
// Exit protocol (exit_process, run by the exiting process on its own stack):
//   1. set EXITED in the control word (later wakes are no-ops); it no longer counts as alive;
//   2. act on the signals already in its inbox (so a link made just before is honoured);
//   3. drop its registered name; cancel its timer;
//   4. free its messages, arena and function (whoever learns of the exit finds them gone);
//   5. exit{self, reason, link} to each link, down{self, ref, reason} to each monitor on it,
//      demonitor to each process it monitors. Its stack slot is released by the worker after.
// Signals that arrive after step 2 are answered when the last reference to the PCB is dropped
// (finalize_process): link → exit{noproc}, monitor → down{noproc}, info → "gone". Nothing is lost.
#include "signals.hpp"

#include <exception>

#include <fmt/format.h>

#include <grove/errc.hpp>
#include <grove/link.hpp>
#include <grove/message.hpp>

#include "arena.hpp"
#include "memory.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {

struct link_signal { pid from; };
struct unlink_signal { pid from; };
struct exit_signal_node { pid from; exit_reason reason; bool via_link; };
struct monitor_signal { pid from; std::uint64_t ref; };
struct demonitor_signal { pid from; std::uint64_t ref; };
struct down_signal { pid from; std::uint64_t ref; exit_reason reason; };
struct info_signal { std::shared_ptr<info_request> request; };
struct alias_delivery {  // a message sent to an alias; owns `message` until delivered or dropped
  std::uint64_t alias;
  message_node* message;
  alias_delivery(std::uint64_t a, message_node* m) : alias(a), message(m) {}
  alias_delivery(alias_delivery&& o) noexcept : alias(o.alias), message(std::exchange(o.message, nullptr)) {}
  ~alias_delivery() {
    if (message) detail::destroy_node(message);
  }
};

template <class T>
inline constexpr detail::message_type signal_type{&detail::type_name_of<T>, &detail::destroy_typed<T>, true};

template <class T, class... A>
message_node* make_signal(A&&... a) {
  message_node* n = detail::make_node<T>(T{std::forward<A>(a)...});
  n->type = &signal_type<T>;
  return n;
}

template <class T>
T* signal_as(message_node* n) noexcept {
  return n->type == &signal_type<T> ? &static_cast<detail::typed_node<T>*>(n)->value : nullptr;
}

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

// Step 2 of the exit protocol: act on what is queued, without dying again.
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

}  // namespace

int worker_index_for(const runtime_state& rt) noexcept {
  worker* w = this_worker();
  return (w && &w->rt == &rt) ? static_cast<int>(w->index) : -1;
}

bool deliver(runtime_state& rt, pid to, message_node* n, bool wake) noexcept {
  process* q = rt.table.acquire(to);
  if (!q) {
    if (!n->type->is_signal) rt.dead_letters.fetch_add(1, std::memory_order_relaxed);  // statistics
    detail::destroy_node(n);
    return false;
  }
  bool delivered = true;
  // acquire: after the exit's fetch_or. An exited process takes nothing more: answer for it now. (If
  // it exits just after this check, finalize_process answers instead: we hold a reference.)
  if (q->control.load(std::memory_order_acquire) & ctl_exited) {
    answer_for_exited(rt, to, n);
    delivered = false;
  } else if (wake) {
    q->mail.push(n);
    rt.wake(q);
  } else if (q->mail.push_lazily(n)) {
    rt.wake(q);  // a push behind ours may have woken q before our node was linked (mailbox.hpp)
  }
  rt.table.release(q, worker_index_for(rt));
  return delivered;
}

void send_exit_signal(runtime_state& rt, process* q, pid from, exit_reason reason, bool via_link) noexcept {
  try {
    q->mail.push(make_signal<exit_signal_node>(from, std::move(reason), via_link));
  } catch (...) {
    return;  // out of memory: the signal is lost
  }
  rt.wake(q);
}

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

namespace {
// Whether the code running is a catch block that caught our exit_unwind.
bool handling_exit_unwind() noexcept {
  std::exception_ptr e = std::current_exception();
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const exit_unwind&) {
    return true;
  } catch (...) {
    return false;
  }
}
}  // namespace

void check_pending_exit(process* p) {
  if (!p->exiting) return;
  if (p->kind == process_kind::scoped) throw error(errc::noproc, "this thread's scoped_process has exited");
  exit_reason reason = p->extra ? p->extra->reason : exit_reason::killed();
  if (std::uncaught_exceptions() > 0) return;  // a destructor runs during the unwinding: let it work
  if (handling_exit_unwind()) throw exit_unwind{std::move(reason)};  // a catch block that will rethrow, we hope
  // The exit_unwind was swallowed (catch (...) without rethrow). An exit cannot be refused: end the
  // process here, without unwinding the rest of its stack.
  abandon_process(p, std::move(reason));
}

void die(process* p, exit_reason reason) {
  if (p->kind == process_kind::scoped) {
    std::string text = fmt::format("this thread's scoped_process {} was ended by an exit signal: {}", p->id(), reason);
    if (runtime_state* rt = current_runtime()) {
      exit_process(rt, p, reason);
    } else {
      p->exiting = true;  // its runtime has stopped: the destructor runs the protocol
    }
    throw error(errc::noproc, text);
  }
  mark_exiting(p, reason);
  throw exit_unwind{std::move(reason)};
}

void exit_process(runtime_state* rt, process* p, const exit_reason& reason) noexcept {
  p->exiting = true;
  // 1. acq_rel: later wakes see EXITED and do nothing; orders us after earlier wakes
  p->control.fetch_or(ctl_exited, std::memory_order_acq_rel);
  if (rt) rt->process_exited(p, p->kind == process_kind::scoped);  // no longer alive: is_alive and the count agree
  // 2.
  drain_for_exit(p);
  // 3.
  disarm_timeout(p);
  const pid self = p->id();
  if (rt && p->has_name.load(std::memory_order_acquire)) rt->names.remove_process(self);  // acquire: pairs with register
  // 4. Free what it holds, so that whoever learns of the exit finds its memory gone.
  while (!p->saved.empty()) detail::destroy_node(p->saved.remove_after(nullptr));
  if (p->extra) destroy_arena(p);
  if (p->entry) {
    p->entry->destroy(p->entry_fn);
    if (p->entry_fn != p->inline_entry) free_bytes(p->entry_fn, p->entry->size);
    p->entry = nullptr;
    p->entry_fn = nullptr;
  }
  // 5.
  if (process_extra* ex = p->extra) {
    if (rt) {
      try {
        for (pid l : ex->links) deliver(*rt, l, make_signal<exit_signal_node>(self, reason, true), true);
        for (auto& [ref, watcher] : ex->monitored_by)
          deliver(*rt, watcher, make_signal<down_signal>(self, ref, reason), true);
        for (auto& [ref, target] : ex->monitors) deliver(*rt, target, make_signal<demonitor_signal>(self, ref), false);
      } catch (...) {
        // Out of memory building a signal: the remaining ones are lost. Nothing else can be done here.
      }
    }
    delete ex;
    p->extra = nullptr;
  }
}

void answer_for_exited(runtime_state& rt, pid dead, message_node* n) noexcept {
  try {
    if (auto* s = signal_as<link_signal>(n)) {
      deliver(rt, s->from, make_signal<exit_signal_node>(dead, exit_reason::noproc(), true), true);
    } else if (auto* m = signal_as<monitor_signal>(n)) {
      deliver(rt, m->from, make_signal<down_signal>(dead, m->ref, exit_reason::noproc()), true);
    } else if (auto* i = signal_as<info_signal>(n)) {
      answer_info_gone(*i->request);
    } else if (!n->type->is_signal) {
      rt.dead_letters.fetch_add(1, std::memory_order_relaxed);  // statistics
    }
  } catch (...) {
    // Out of memory: that answer is lost.
  }
  detail::destroy_node(n);
}

void finalize_process(runtime_state& owner, process* p) noexcept {
  const pid self = p->id();
  // Its own runtime, even if another one runs now.
  while (message_node* n = p->mail.pop()) answer_for_exited(owner, self, n);
  if (p->waiter) {
    destroy_scoped_waiter(p->waiter);
    p->waiter = nullptr;
  }
}

message_node* make_info_signal(std::shared_ptr<info_request> req) { return make_signal<info_signal>(std::move(req)); }

}  // namespace grove::internal

// ---- the public API (grove/link.hpp) ----

namespace grove {

using namespace grove::internal;

namespace {

process* require_process() {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  check_pending_exit(p);
  return p;
}

runtime_state& require_runtime() {
  runtime_state* rt = current_runtime();
  if (!rt) throw error(errc::not_running);
  return *rt;
}

}  // namespace

void link(pid other) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  if (other == p->id()) return;
  process_extra& ex = p->ensure_extra();
  if (ex.links.count(other)) return;
  ex.links.insert(other);
  if (!deliver(rt, other, make_signal<link_signal>(p->id()), false)) {
    ex.links.erase(other);
    if (!p->trap_exit) throw error(errc::noproc, fmt::format("link: {} does not exist", other));
    p->mail.push(detail::make_node<exit_signal>(exit_signal{other, exit_reason::noproc()}));
  }
}

void unlink(pid other) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  if (!p->extra || p->extra->links.erase(other) == 0) return;
  deliver(rt, other, make_signal<unlink_signal>(p->id()), false);
}

monitor_ref monitor(pid target) {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  std::uint64_t ref = rt.next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  p->ensure_extra().monitors.emplace(ref, target);
  if (!deliver(rt, target, make_signal<monitor_signal>(p->id(), ref), false)) {
    // The target is gone: the down comes at once, through the same path as any other.
    p->mail.push(make_signal<down_signal>(target, ref, exit_reason::noproc()));
  }
  return monitor_ref{ref, target};
}

bool demonitor(const monitor_ref& ref, bool flush) {
  process* p = require_process();
  bool active = p->extra && p->extra->monitors.erase(ref.id) > 0;
  if (active) {
    if (runtime_state* rt = current_runtime()) deliver(*rt, ref.target, make_signal<demonitor_signal>(p->id(), ref.id), false);
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

alias make_alias() {
  process* p = require_process();
  runtime_state& rt = require_runtime();
  std::uint64_t id = rt.next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  p->ensure_extra().aliases.insert(id);
  return alias{p->id(), id};
}

bool unalias(const alias& a) {
  process* p = require_process();
  return a.owner == p->id() && p->extra && p->extra->aliases.erase(a.id) > 0;
}

namespace detail {
void send_node_to_alias(const alias& to, message_node* n) {
  runtime_state* rt = current_runtime();
  if (!rt) {
    destroy_node(n);
    return;
  }
  // The wrapper owns n from here: if allocating it throws, n is freed with it.
  deliver(*rt, to.owner, make_signal<alias_delivery>(to.id, n), true);
  if (process* self = current_process()) charge(self, true);
}
}  // namespace detail

bool trap_exit(bool on) {
  process* p = require_process();
  bool old = p->trap_exit;
  p->trap_exit = on;
  return old;
}

void exit(pid target, exit_reason reason) {
  runtime_state* rt = current_runtime();
  if (!rt) return;
  process* self = current_process();
  process* q = rt->table.acquire(target);
  if (!q) return;
  send_exit_signal(*rt, q, self ? self->id() : pid(), std::move(reason), false);
  rt->table.release(q, worker_index_for(*rt));
  // A signal to oneself acts now: drain up to it (it is behind whatever had arrived before it).
  if (self && self == q)
    while (drain_inbox(self).more) {
    }
}

}  // namespace grove
