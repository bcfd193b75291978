// exit_protocol.cpp: how a process ends, run by the exiting process itself on its own stack.
//
// ## Decided exits
// A process ends when its function returns (normal, or the exit_reason it returns), when an
// exception escapes it, or when an exit is *decided* for it: grove::exit, an exit signal that kills
// it (signal_handling.cpp), its arena passing its limit. A decided exit is recorded first
// (mark_exiting: p->exiting and the reason), then raised: exit_unwind is thrown through the stack so
// destructors run, and the reason is final whatever the stack does on the way (a decided exit wins
// over the exception or value the function ends with).
//
// ## Busy processes (OTP's rule: a pending exit signal takes effect no later than the process's end)
// A process acts on signals itself, so one that computes without calling the runtime cannot act on
// a kill or a linked crash until it does. The exit_signals counter on the PCB's shared cache line
// says one has arrived: senders add one before pushing an exit signal (delivery.cpp), and the
// process subtracts one as it acts on each (signal_handling.cpp). So:
//   1. every runtime call starts with before_runtime_call: one relaxed load; when the count is not
//      zero it drains the inbox (messages move to the saved list in order, signals are acted on), so
//      a killed process dies at its next send, spawn, link, receive, ... and no send made after the
//      kill arrived is ever delivered;
//   2. when the function returns or throws, finish_process drains once more without raising: an exit
//      signal that arrived while it ran makes the exit reason its own (`killed`, the linked process's
//      reason), so monitors and links see it and the "let it crash" chain goes on.
// A signal whose sender has not finished pushing it when the process ends is concurrent with the
// end; either order is a correct one, and it is answered later as for any exited process.
//
// ## Swallowed exits
// exit_unwind is not a std::exception, but catch (...) catches it. A process that swallows it and
// goes on has a decided exit and runs as if alive; before_runtime_call finds it so (p->exiting, not
// unwinding, not inside a catch block handling exit_unwind) and raises the exit again, so the rest of
// its stack unwinds and its destructors run (outer locks released, memory freed). The first swallow
// is reported through the logger (grove/logger.hpp); after max_swallows the process is ended where
// it stands, without unwinding the rest (abandon), so a loop that swallows every time still ends.
// Runtime calls made while the stack unwinds (destructors) or from a catch block that will rethrow
// work normally; a blocking call in such a catch block raises the exit again instead of waiting.
// An exit decided while another exception unwinds the stack (a destructor's send finds a kill) cannot
// be thrown there (std::terminate): it is recorded, and raised at the first runtime call after that
// unwinding, or taken as the reason at the end.
//
// ## Deferred exits (grove::exit_deferral)
// While a process holds an exit_deferral, a non-blocking runtime call that finds an exit signal
// acts on it (the exit is decided) but neither raises it nor drops its own effect: a hand-over
// send in a destructor reaches its target. Blocking calls raise as ever. Rejected: making send
// deliver and then raise everywhere (a send after a kill would be delivered, against OTP), or
// never raising in sends (a loop of sends would never die).
//
// ## The exit protocol (exit_process)
//   1. set EXITED in the control word (later wakes are no-ops); it no longer counts as alive;
//   2. act on the signals already in its inbox (so a link made just before is honoured);
//   3. drop its registered name; cancel its timer;
//   4. free its messages, arena and function (whoever learns of the exit finds them gone);
//   5. report a crash nobody will hear of through the logger, as OTP's error logger does: an exit of
//      the process's own making (its function returned or threw a reason, grove::exit, its arena;
//      not an exit signal, whose sender knows) with a reason other than normal or shutdown, while no
//      process links to it or monitors it (or linked and monitored too: crash_report_policy::all),
//      with the exception's type and throw site, and its links and monitors;
//   6. exit{self, reason, link} to each link, down{self, ref, reason} to each monitor on it,
//      demonitor to each process it monitors. Its stack slot is released by the worker after.
// Signals that arrive after step 2 are answered when the last reference to the PCB is dropped
// (finalize_process, delivery.cpp): link → exit{noproc}, monitor → down{noproc}, info → "gone".
#include "exit_protocol.hpp"

#include <cstring>
#include <exception>
#include <iterator>

#include <fmt/format.h>

#include <grove/errc.hpp>
#include <grove/logger.hpp>
#include <grove/runtime.hpp>

#include "arena.hpp"
#include "delivery.hpp"
#include "memory.hpp"
#include "signal_handling.hpp"
#include "signal_nodes.hpp"
#include "timers.hpp"
#include "tracer.hpp"

namespace grove::internal {

namespace {

// Swallows tolerated before a process is ended without unwinding (file comment, "swallowed exits").
constexpr std::uint8_t max_swallows = 3;

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

const exit_reason& decided_reason(process* p) noexcept {
  static const exit_reason killed = exit_reason::killed();
  return p->extra ? p->extra->reason : killed;
}

bool is_shutdown_like(const exit_reason& r) noexcept {
  return r.is_normal() || r.is_shutdown() || (r.what_kind() == exit_reason::kind::user && r.text() == "shutdown");
}

// Ends p where it stands (it swallowed its exit too often): the exit protocol, then the final switch.
[[noreturn]] void abandon_process(process* p) {
  exit_reason reason = decided_reason(p);
  finish_process(p, std::move(reason));  // moved: this frame is abandoned too
}

// Step 5 of the exit protocol: the crash report (grove/logger.hpp, log_kind::crash_report).
void report_crash(runtime_state* rt, const process* p, std::string name, const exit_reason& reason,
                  const process_extra* ex) noexcept {
  const pid self = p->id();
  try {
    log_event e{log_level::error, log_kind::crash_report, self, std::move(name), reason, {}};
    e.exception_type = reason.exception_type();
    if (const stack_trace* site = reason.throw_site()) e.throw_site = *site;
    if (ex) {
      e.links.assign(ex->links.begin(), ex->links.end());
      for (const auto& [ref, watcher] : ex->monitored_by) e.monitored_by.push_back(watcher);
    }
    if (rt && tracing(event_kind::receive, p)) [[unlikely]]
      e.last_messages = last_received(rt->tracer, self, 8);
    e.text = e.name.empty() ? fmt::format("grove: process {} exited: {}", self, reason)
                            : fmt::format("grove: process {} ({}) exited: {}", self, e.name, reason);
    if (!e.exception_type.empty()) fmt::format_to(std::back_inserter(e.text), " ({})", e.exception_type);
    if (!e.links.empty()) fmt::format_to(std::back_inserter(e.text), "; links {}", fmt::join(e.links, " "));
    if (!e.monitored_by.empty()) fmt::format_to(std::back_inserter(e.text), "; monitored by {}", fmt::join(e.monitored_by, " "));
    for (std::size_t i = 0; i < e.last_messages.size(); ++i) {
      const received_message& m = e.last_messages[i];
      e.text += i == 0 ? "; last messages: " : ", ";
      e.text += m.type;
      if (!m.from.is_null()) fmt::format_to(std::back_inserter(e.text), " from {}", m.from);
    }
    log(e);
  } catch (...) {
    // Out of memory building the report: it is lost.
  }
}

}  // namespace

void raise_exit(process* p) {
  if (p->kind == process_kind::scoped) {
    const exit_reason reason = decided_reason(p);
    std::string text = fmt::format("this thread's scoped_process {} was ended by an exit signal: {}", p->id(), reason);
    // acquire: after its own exit's fetch_or. Its runtime, if it still runs; else the destructor runs
    // the protocol (it sees EXITED unset).
    if (!(p->control.load(std::memory_order_acquire) & ctl_exited))
      if (runtime_state* rt = current_runtime()) exit_process(rt, p, reason);
    throw error(errc::noproc, text);
  }
  process_extra& ex = p->ensure_extra();
  if (ex.exit_raises < 255) ++ex.exit_raises;
  throw exit_unwind{ex.reason, false};
}

void die(process* p, exit_reason reason) {
  mark_exiting(p, reason);
  raise_exit(p);
}

void act_on_exit(process* p, bool blocking) {
  if (!p->exiting) {
    // Exit signals arrived while it ran: act on them now (file comment, "busy processes").
    while (p->exit_signals.load(std::memory_order_relaxed) != 0) {  // relaxed: see before_runtime_call
      // raises the exit if one kills (unless the stack is unwinding, or an exit_deferral covers this call)
      const drained d = drain_inbox(p, blocking || p->exits_deferred == 0);
      if (p->exiting || !d.more) break;  // a signal still being pushed is seen at the next call
    }
    if (!p->exiting) return;
  }
  if (p->in_exit_protocol) return;             // its own exit protocol's calls (a logger) run normally
  if (std::uncaught_exceptions() > 0) return;  // a destructor runs during an unwinding: let it work
  if (!blocking && p->exits_deferred > 0) return;  // exit_deferral: raised after its scope
  if (p->kind == process_kind::scoped) raise_exit(p);
  const bool in_catch = handling_exit_unwind();
  if (in_catch && !blocking) return;  // cleanup in a catch block that will rethrow, we hope
  process_extra& ex = p->ensure_extra();
  if (!in_catch && ex.exit_raises > 0) {  // it was thrown, and the process runs on: swallowed
    if (ex.exit_swallows < 255) ++ex.exit_swallows;
    if (ex.exit_swallows == 1) {
      log(log_event{log_level::warning, log_kind::exit_swallowed, p->id(), {}, ex.reason,
                    fmt::format("grove: process {} swallowed its exit ({}) with catch (...) and went on; it is raised "
                                "again at each runtime call, and after {} swallows the process ends without "
                                "unwinding the rest of its stack",
                                p->id(), ex.reason, max_swallows)});
    }
    if (ex.exit_swallows > max_swallows) abandon_process(p);
  }
  raise_exit(p);
}

namespace {

// Step 4: the callable, wherever it is (process.hpp, entry_or_timer). A started process runs this on
// its own stack, whose top holds the callable or the pointer to it.
void destroy_entry(runtime_state* rt, process* p) noexcept {
  if (p->kind != process_kind::scheduled) return;
  const detail::entry_ops* ops = p->started ? p->entry.started.ops : p->entry.unstarted.ops;
  if (!ops || (p->started && !rt)) return;
  void* at = p->started ? static_cast<void*>(static_cast<char*>(rt->slots.stack_top(p)) - entry_reserve(*ops))
                        : static_cast<void*>(p->entry.unstarted.storage);
  void* fn = at;
  if (!entry_is_inline(*ops)) std::memcpy(&fn, at, sizeof fn);
  ops->destroy(fn);
  if (!entry_is_inline(*ops)) free_bytes(fn, ops->size);
  if (p->started) p->entry.started.ops = nullptr;
  else p->entry.unstarted.ops = nullptr;
}

}  // namespace

void exit_process(runtime_state* rt, process* p, const exit_reason& reason) noexcept {
  // Recorded before anyone can learn of the exit (step 1 makes a monitor answer noproc at once), so
  // that a trace read by whoever learnt of it holds the exit.
  if (tracing(event_kind::exit, p)) [[unlikely]]
    record(event_kind::exit, static_cast<std::uint8_t>(reason.what_kind()), 0, p->id().bits(), intern_reason_text(reason));
  p->exiting = true;
  p->activity.store(exiting_activity, std::memory_order_relaxed);  // published for introspection
  p->in_exit_protocol = true;
  // 1. acq_rel: later wakes see EXITED and do nothing; orders us after earlier wakes
  p->control.fetch_or(ctl_exited, std::memory_order_acq_rel);
  end_overload_if_any(p);  // its senders wait no more (overload.cpp)
  if (rt) rt->process_exited(p);  // no longer alive: is_alive and the count agree
  // 2.
  drain_for_exit(p);
  // 3.
  disarm_timeout(p);
  const pid self = p->id();
  std::string name;
  if (rt && p->has_name.load(std::memory_order_acquire)) {  // acquire: pairs with register
    try {
      name = rt->names.name_of(self);
    } catch (...) {
      // Out of memory for the name's copy: the report goes without it.
    }
    rt->names.remove_process(self);
  }
  // 4. Free what it holds, so that whoever learns of the exit finds its memory gone.
  while (!p->saved.empty()) detail::destroy_node(p->saved.remove_after(nullptr));
  if (p->extra) destroy_arena(p);
  destroy_entry(rt, p);
  // 5.
  process_extra* ex = p->extra;
  if (!is_shutdown_like(reason) && !(ex && ex->exit_by_signal) &&
      ((rt && rt->config.crash_reports == crash_report_policy::all) || !ex || (ex->links.empty() && ex->monitored_by.empty())))
    report_crash(rt, p, std::move(name), reason, ex);
  // 6.
  if (ex) {
    if (rt) {
      try {
        for (pid l : ex->links) deliver_exit_signal(*rt, l, self, reason, true);
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
  // A scoped process's thread goes on after its exit: its later calls raise errc::noproc.
  if (p->kind == process_kind::scoped) p->in_exit_protocol = false;
}

void finish_process(process* p, exit_reason returned) {
  // "busy processes", step 2: an exit signal that came meanwhile wins (relaxed: see before_runtime_call)
  while (!p->exiting && p->exit_signals.load(std::memory_order_relaxed) != 0 && drain_inbox(p, false).more) {
  }
  exit_reason reason = p->exiting ? decided_reason(p) : std::move(returned);
  runtime_state* rt = current_runtime();
  exit_process(rt, p, reason);
  reason = exit_reason();    // releases its detail now: no destructor will run for this frame
  returned = exit_reason();
  worker& now_on = *rt->workers[p->worker];  // maybe not the first worker: the process may have migrated
  p->parked = park_reason::exit;
  exit_to(now_on.sched_ctx, now_on.thread_stack, nullptr);
}

}  // namespace grove::internal
