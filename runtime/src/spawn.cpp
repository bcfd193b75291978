// spawn.cpp: creating a process, and the first and last moments of its life on its own stack.
//
// spawn: take a PCB from the table (the process limit is enforced there), construct the function
// object straight from the caller's argument in the PCB (inline when it fits in 32 bytes, else on the
// heap: never a copy of it on the caller's stack first), set up spawn_link/spawn_monitor
// before anyone can see the new pid (so they are atomic, as in Erlang), then queue it: in the
// spawning worker's LIFO slot when a process spawns (the previous occupant moves to the local queue,
// where others can steal it), or the inject queue from a foreign thread. It is born NOTIFIED
// (process_table.cpp), so it is queued exactly once.
//
// process_main: runs the function through its entry_ops (grove/process.hpp, which catches what
// escapes it: a return is exit reason `normal`, exit_unwind carries its reason, any other exception
// becomes exit_reason::exception(what())). Then the exit protocol and the last switch to whichever
// worker runs it now, never to return (finish_process, exit_protocol.cpp).
#include <cxxabi.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <new>
#include <typeinfo>

#include <fmt/format.h>

#include <grove/process.hpp>

#include "spawn.hpp"

#include "delivery.hpp"
#include "exit_protocol.hpp"
#include "memory.hpp"
#include "receive.hpp"
#include "scheduler.hpp"
#include "throw_sites.hpp"

namespace grove::internal {


namespace {

// The callable (trivially copyable) moves from the PCB to the top of the stack, above process_main's frame
// (worker::begin_run left entry_reserve bytes there), and the PCB's bytes become its timer
// (process.hpp). Zeroed first: a stack image kept as a difference (stack_slots.hpp) then costs
// nothing for the padding. Out of line, so that its locals are not in process_main's frame, which
// is in every stack image. Returns the callable.
[[gnu::noinline]] void* start_entry(runtime_state& rt, process* p) noexcept {
  const detail::entry_ops* ops = p->entry.unstarted.ops;
  const std::size_t reserve = entry_reserve(*ops);
  char* at = static_cast<char*>(rt.slots.stack_top(p)) - reserve;
  std::memset(at, 0, reserve);
  void* fn = at;
  if (entry_is_inline(*ops)) {
    std::memcpy(at, p->entry.unstarted.storage, ops->size);  // trivially copyable: no code of its own runs
  } else {
    std::memcpy(at, p->entry.unstarted.storage, sizeof fn);
    std::memcpy(&fn, p->entry.unstarted.storage, sizeof fn);
  }
  ::new (&p->entry.started) entry_after_start{};
  p->entry.started.ops = ops;
  return fn;
}

}  // namespace

void process_main(transfer t) {
  auto* w = static_cast<worker*>(t.data);
  process* p = w->current;
  finish_first_switch(p->ctx);
  *w->thread_eh = eh_globals{};  // a fresh process has caught nothing (context.hpp)
  worker::arrived(t);  // after the sanitizer's switch ends: it may run the park of a process that handed off to us
  void* fn = start_entry(w->rt, p);
  finish_process(p, p->entry.started.ops->run(fn));
}


}  // namespace grove::internal

namespace grove::detail {

using namespace grove::internal;

// With grove::throw_traces linked, the reason carries where the exception was thrown (stack_trace.cpp).
exit_reason exception_reason(const std::exception& e) {
  return exit_reason::exception(e.what(), typeid(e).name(), throw_site_of(dynamic_cast<const void*>(&e), &typeid(e)));
}
exit_reason unknown_exception_reason() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  return exit_reason::exception("unknown exception (not derived from std::exception)", type ? type->name() : std::string(),
                                throw_site_of(nullptr, type));
}

result<spawned> spawn_entry(const spawn_options& options, const entry_ops& ops, void (*construct)(void*, void*), void* arg) {
  runtime_state* rt = current_runtime();
  if (!rt || rt->current_phase.load(std::memory_order_acquire) != runtime_state::phase::running) return errc::not_running;
  process* parent = current_process();
  if (parent) before_runtime_call(parent, false);
  if ((options.link || options.monitor) && (!parent || parent->exiting)) return errc::not_in_process;
  const int widx = worker_index_for(*rt);
  process* p = rt->table.allocate(widx, process_kind::scheduled);
  if (!p) return errc::process_limit;

  p->trap_exit = options.trap_exit;
  p->pinned = options.pinned;
  try {
    const bool inline_entry = entry_is_inline(ops);
    void* storage = inline_entry ? p->entry.unstarted.storage : allocate_bytes(ops.size);
    try {
      construct(storage, arg);
    } catch (...) {
      if (!inline_entry) free_bytes(storage, ops.size);
      throw;
    }
    if (!inline_entry) std::memcpy(p->entry.unstarted.storage, &storage, sizeof storage);
    p->entry.unstarted.ops = &ops;
    if (options.max_heap_bytes) p->ensure_extra().max_heap_bytes = options.max_heap_bytes;
  } catch (...) {
    exit_process(rt, p, exit_reason::normal());
    rt->table.release(p, widx);
    throw;
  }

  spawned result{p->id(), {}};
  if (options.link) {
    parent->ensure_extra().links.insert(result.pid);
    p->ensure_extra().links.insert(parent->id());
  }
  if (options.monitor) {
    std::uint64_t ref = rt->next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
    parent->ensure_extra().monitors.emplace(ref, result.pid);
    p->ensure_extra().monitored_by.emplace(ref, parent->id());
    result.monitor = monitor_ref{ref, result.pid};
  }

  if (parent) {
    // Erlang's set_on_spawn: the child is traced as its parent (grove/trace.hpp). relaxed: a switch.
    const std::uint8_t flags = parent->trace_flags.load(std::memory_order_relaxed);
    if (flags & trace::process_flags::set_on_spawn) [[unlikely]]
      p->trace_flags.store(flags, std::memory_order_relaxed);
  }
  if (tracing(trace::event_kind::spawn, parent)) [[unlikely]]
    record(trace::event_kind::spawn, 0, 0, parent ? parent->id().bits() : 0, result.pid.bits());
  worker* w = this_worker();
  if (w && &w->rt == rt) {
    w->spawned.fetch_add(1, std::memory_order_relaxed);  // statistics
  } else {
    rt->foreign_spawned.fetch_add(1, std::memory_order_relaxed);  // statistics
  }
  rt->schedule(p);  // as a wake: the LIFO slot from a process (it runs when the parent blocks)
  if (parent) charge(parent, true);  // spawning costs a reduction, as in BEAM: a spawn loop yields too
  return result;
}

}  // namespace grove::detail
