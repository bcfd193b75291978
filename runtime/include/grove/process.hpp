// grove/process.hpp: spawning processes, and what a process can do to itself.
//
// A process runs a C++ callable on its own execution context. It ends `normal` when the callable
// returns; a callable that returns a grove::exit_reason ends with that reason instead (returning
// exit_reason("crash") is exit(exit_reason("crash")) without the cost of unwinding: no exception is
// thrown, the stack is already unwound). If an exception escapes, the runtime catches it and the
// process ends with exit_reason::exception(what()). Nothing else is affected either way: links and
// monitors carry the reason on. spawn is thread-safe and callable from processes and foreign threads
// alike.
//
// Code that runs in a process may move between worker threads whenever it blocks (receive, sleep,
// yield, a send that uses up its time slice): do not keep the address of a thread_local or
// pthread_self() across those calls; read them again after. errno cannot be read again by hand
// (GCC keeps its address across calls): read it with grove::io::last_errno() (grove/io.hpp), or
// spawn the process pinned.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <grove/duration.hpp>
#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

struct spawn_options {
  bool link = false;               // link to the caller before the new process runs (spawn_link)
  bool monitor = false;            // the caller monitors it before it runs (spawn_monitor)
  bool trap_exit = false;          // the new process starts trapping exits
  std::size_t max_heap_bytes = 0;  // its arena's limit (grove/arena.hpp); 0: no limit
  // Runs only on the worker thread that first runs it: once started it never migrates, so errno,
  // thread_locals, pthread_self() and C libraries' per-thread state (OpenSSL's error queue, many
  // loggers) stay its own across runtime calls, whatever the compiler caches (README, "Rules").
  // It waits for that worker when the worker is busy (it is never stolen), and costs a queue of its
  // own per worker: bench/grove/ping_pong --pinned 1 measures the difference.
  bool pinned = false;
};

// A spawned process and, for spawn_monitor, the caller's monitor on it.
struct spawned {
  grove::pid pid;
  monitor_ref monitor;
};

// Thrown through a process's stack to end it, so that its destructors run: by grove::exit (`self` is
// true), by an exit signal that kills it, by its arena passing its limit. Deliberately not derived
// from std::exception, so `catch (const std::exception&)` lets it pass. Catch it (or catch (...))
// only to clean up and rethrow: a process that swallows it has it raised again at its next runtime
// call; after three swallows it ends at once without unwinding the rest of its stack, and the first
// swallow is reported through the logger (grove/logger.hpp).
struct exit_unwind {
  exit_reason reason;
  bool self = false;
};

namespace detail {
using grove::exit_unwind;
// sleep_for's body: timeout_ns as grove/duration.hpp makes it.
void sleep_ns(std::int64_t timeout_ns);
// grove::exit's checks and bookkeeping before the throw: throws grove::error outside a scheduled
// process; marks the calling process as exiting and returns what to throw: `reason`, or the reason
// of an exit signal that had already arrived and kills it (it takes effect first).
exit_unwind begin_exit(exit_reason reason);
// The exit reasons of a process that an exception ended: exit_reason::exception(what(), type name).
exit_reason exception_reason(const std::exception& e);
exit_reason unknown_exception_reason();

// How the runtime moves, runs and destroys a type-erased callable (stored inline when small).
// `run` catches what escapes the callable itself, and grove::exit throws from the caller's own frame
// (it is inline): the C++ unwinder walks every frame between the throw and the catch twice, at
// ~0.3-0.4 us a frame on this project's machines, and a crash is what supervisors handle all day.
// With the catch in the runtime and the throw in an out-of-line exit(), a crash cost ~2x as many
// unwinder instructions (valgrind --tool=callgrind on bench/grove/restarts; bench/RESULTS.md).
struct entry_ops {
  exit_reason (*run)(void* fn) noexcept;  // the process's exit reason when the callable returns or throws
  void (*destroy)(void* fn) noexcept;
  std::size_t size;
  std::size_t align;
  // Copyable byte for byte (a lambda capturing pids, numbers, pointers): the runtime may keep it
  // in the control block until the process first runs and then move it by memcpy, running none of
  // its code. Any other callable lives on the heap, at the one address it was constructed at.
  bool trivially_copyable;
};

template <class F>
inline constexpr entry_ops entry_ops_for{
    [](void* fn) noexcept -> exit_reason {
      try {
        if constexpr (std::is_convertible_v<std::invoke_result_t<F&>, exit_reason>) {
          return (*static_cast<F*>(fn))();
        } else {
          (*static_cast<F*>(fn))();
          return exit_reason::normal();
        }
      } catch (exit_unwind& e) {
        return std::move(e.reason);
      } catch (const std::exception& e) {
        return exception_reason(e);
      } catch (...) {
        return unknown_exception_reason();
      }
    },
    [](void* fn) noexcept { static_cast<F*>(fn)->~F(); },
    sizeof(F),
    alignof(F),
    std::is_trivially_copyable_v<F>,
};

// Constructs the process's copy of the callable straight from the caller's argument (moved from an
// rvalue, copied from an lvalue) into its storage in the PCB or on the heap: no temporary of the
// callable's size on the calling process's stack, whose whole size is runtime_config::stack_bytes.
template <class Fn, class Arg>
void construct_entry(void* dst, void* src) {
  ::new (dst) Fn(std::forward<Arg>(*static_cast<std::remove_reference_t<Arg>*>(src)));
}

result<spawned> spawn_entry(const spawn_options& options, const entry_ops& ops, void (*construct)(void* dst, void* src),
                            void* arg);
}  // namespace detail

// Spawns `fn` as a new process. Never blocks. Returns errc::process_limit at the limit,
// errc::not_running without a runtime, errc::not_in_process for link/monitor from a foreign thread.
template <class F>
result<spawned> try_spawn(const spawn_options& options, F&& fn) {
  using fn_t = std::decay_t<F>;
  static_assert(std::is_invocable_v<fn_t&>, "spawn takes a callable with no arguments (capture what it needs)");
  static_assert(std::is_constructible_v<fn_t, F&&>, "spawn needs a callable it can move or copy into the new process");
  return detail::spawn_entry(options, detail::entry_ops_for<fn_t>, &detail::construct_entry<fn_t, F&&>,
                             const_cast<void*>(static_cast<const volatile void*>(std::addressof(fn))));
}

// As try_spawn, but throws grove::error on failure.
template <class F>
pid spawn(const spawn_options& options, F&& fn) {
  auto r = try_spawn(options, std::forward<F>(fn));
  if (!r) throw error(static_cast<errc>(r.error().value()));
  return r->pid;
}
template <class F>
pid spawn(F&& fn) {
  return spawn(spawn_options{}, std::forward<F>(fn));
}
// Spawns and links atomically: the link exists before the new process runs.
template <class F>
pid spawn_link(F&& fn) {
  return spawn(spawn_options{.link = true}, std::forward<F>(fn));
}
// Spawns and monitors atomically.
template <class F>
spawned spawn_monitor(F&& fn) {
  auto r = try_spawn(spawn_options{.monitor = true}, std::forward<F>(fn));
  if (!r) throw error(static_cast<errc>(r.error().value()));
  return *r;
}

// The calling process's pid; the null pid on a thread that is not running a process.
pid self() noexcept;
// Lets the other runnable processes on this worker run first (for CPU-bound loops).
void yield();
// Ends the calling process with `reason` (unwinding its stack, so destructors run). Outside a
// process it throws grove::error(errc::not_in_process). If an exit signal that kills the process has
// already arrived (while it computed), that signal's reason wins: it came first.
[[noreturn]] inline void exit(exit_reason reason) { throw detail::begin_exit(std::move(reason)); }
// Defers the calling process's exit for non-blocking runtime calls while it lives, as
// pthread_setcancelstate does for cancellation: send, spawn, link, monitor and exit(pid, reason)
// made in its scope neither raise an exit signal that has arrived (while the process computed) nor
// lose their effect, so a hand-over that must reach another process (a resource given back, "I am
// done") completes even if the process has just been killed. Blocking calls (receive, sleep_for,
// yield, IO waits) still raise it, so a deferral never makes a process unkillable. The exit is
// raised at the first runtime call after the outermost deferral ends, or taken at the process's end.
// Use it where a runtime call runs in a destructor on a normal scope exit: a raise there would end
// the program (destructors are noexcept). Nestable; a no-op outside a process.
class exit_deferral {
 public:
  exit_deferral() noexcept;
  ~exit_deferral();
  exit_deferral(const exit_deferral&) = delete;
  exit_deferral& operator=(const exit_deferral&) = delete;
};
// Whether `p` names a live process (it may exit the next moment).
bool is_alive(pid p) noexcept;
// Blocks the calling process (messages stay in the mailbox; exit signals still act). On a foreign
// thread with a scoped_process it blocks the thread. Zero or negative yields; a duration too long to
// represent (seconds::max(), grove::forever) sleeps until the process is ended (grove/duration.hpp).
template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
  detail::sleep_ns(detail::timeout_ns(d));
}
template <class Clock, class Duration>
void sleep_until(std::chrono::time_point<Clock, Duration> t) {
  const auto now = Clock::now();
  sleep_for(t > now ? t - now : Duration::zero());  // t - now cannot overflow once t > now
}

}  // namespace grove

GROVE_PUBLIC_END
