// exit_protocol.cpp: how a process ends, run by the exiting process itself on its own stack.
//
// A process ends when its function returns (normal, or the exit_reason it returns), when an
// exception escapes it, or when it is unwound by exit_unwind: grove::exit, an exit signal that kills
// it (signal_handling.cpp), an arena past its limit. Then, in exit_process:
//   1. set EXITED in the control word (later wakes are no-ops); it no longer counts as alive;
//   2. act on the signals already in its inbox (so a link made just before is honoured);
//   3. drop its registered name; cancel its timer;
//   4. free its messages, arena and function (whoever learns of the exit finds them gone);
//   5. exit{self, reason, link} to each link, down{self, ref, reason} to each monitor on it,
//      demonitor to each process it monitors. Its stack slot is released by the worker after.
// Signals that arrive after step 2 are answered when the last reference to the PCB is dropped
// (finalize_process, delivery.cpp): link → exit{noproc}, monitor → down{noproc}, info → "gone".
#include "exit_protocol.hpp"

#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include <grove/errc.hpp>

#include "arena.hpp"
#include "delivery.hpp"
#include "memory.hpp"
#include "signal_handling.hpp"
#include "signal_nodes.hpp"
#include "timers.hpp"

namespace grove::internal {

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

void finish_process(process* p, exit_reason reason) {
  runtime_state* rt = current_runtime();
  exit_process(rt, p, reason);
  reason = exit_reason();  // releases its detail now: no destructor will run for this frame
  worker& now_on = *rt->workers[p->worker];  // maybe not the first worker: the process may have migrated
  p->parked = park_reason::exit;
  exit_to(now_on.sched_ctx, now_on.thread_stack, now_on.thread_eh, nullptr);
}

void abandon_process(process* p, exit_reason reason) {
  std::fprintf(stderr, "grove: process %s swallowed its exit (%s) with catch (...) and no rethrow; it ends without unwinding the rest of its stack\n",
               fmt::format("{}", p->id()).c_str(), reason.to_string().c_str());
  finish_process(p, std::move(reason));  // moved: this frame is abandoned too
}

}  // namespace grove::internal
