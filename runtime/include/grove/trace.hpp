// grove/trace.hpp: what the scheduler and the processes did, recorded as it happens and written as
// a Perfetto trace (open it at https://ui.perfetto.dev).
//
//   grove::trace::start();                          // every event kind, 65,536 events per worker
//   ... the program runs ...
//   grove::trace::write_perfetto("/tmp/grove.pftrace");
//
// Or without touching the program: GROVE_TRACE=<file> starts tracing when the runtime starts and
// writes the file when it stops (GROVE_TRACE_BUFFER=<events per worker> sizes the rings).
//
// Each worker records into a ring of its own (no lock, no allocation; 25-29 ns an event stamped with the
// TSC, 15-18 M events/s on a worker; bench/RESULTS.md, "Tracing", with the command), and
// threads that are not workers into one shared ring: a **flight recorder** that always holds the
// newest events_per_worker events of each worker, older ones overwritten. write_perfetto and
// snapshot read the rings while recording goes on, without stopping anyone; an event being
// overwritten as they read is left out, never torn. Switched off (the default), each place that
// records costs one relaxed load and a branch.
//
// What the trace shows: one track per worker (a slice per process run, named by pid and registered
// name; a counter of its run-queue length), and one per process (its runs, its waits and why, an
// instant for each send, receive, receive timeout, spawn, exit, link, monitor, down, exit signal,
// annotation, wake, timer fire and IO wait; a counter of its mailbox after each receive), with a
// flow arrow from each send (or send_after timer) to the receive that took the message. A call that
// timed out reads: the request's arrow into the server, the server's long run (or its queue behind
// another), the caller's "receive timed out", then the late reply's arrow.
//
// Dumps: dump() writes the rings to options::dump_file, a supervisor that gives up calls it, and
// so does a signal, if options::dump_signal asks for one (`kill -USR2 <pid>`).
//
// Also recorded: link, unlink, monitor and demonitor calls; down messages and exit signals as their
// receiver acts on them (what it did: ignored, trapped, exited); steals between workers; and
// annotations (annotate()), which supervisors and pools write for their reports.
//
// Crash reports: while a process's receives are recorded, its crash report names the last messages
// it took (grove/logger.hpp, log_event::last_messages).
//
// Per process: trace_process(pid, flags) records one process's events (and, with set_on_spawn,
// its descendants'), as erlang:trace/3 does, while start's kinds select for all.
//
// Also: wakes (who or what made a process runnable: a message and its sender, a signal, a timeout,
// an fd's readiness, a blocking call's end), send_after timers as they fire, and IO waits (the fd).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <grove/detail/named_formatter.hpp>
#include <grove/errc.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::trace {

// Event kinds, also the bits of options::kinds.
enum class event_kind : std::uint8_t {
  spawn,            // process: the parent (null from a foreign thread); other: the child
  exit,             // process: who exited; detail: its reason
  send,             // process: the sender (null from a foreign thread); other: the receiver; message_type
  receive,          // process: the receiver; message_type; count: messages it passed over first
  receive_timeout,  // process: a receive (or sleep) whose timeout ended it
  run_begin,        // process: starts running on `worker`; count: the worker's run-queue length then
  run_end,          // process: stops running; detail: why ("wait: receive", "yield", "exit", ...)
  link,             // process: the caller of link(); other: the process linked to; outcome: noproc if
                    // it did not exist (the link was not made)
  unlink,           // process: the caller of unlink(); other: the process unlinked from
  monitor,          // process: the caller of monitor(); other: the target (null: a name nobody holds);
                    // outcome: noproc if it did not exist (the down follows at once)
  demonitor,        // process: the caller of demonitor(); other: the target
  down,             // process: the watcher, as the down message joins its mailbox; other: the target;
                    // detail: the reason
  exit_signal,      // process: the receiver, as it acts on the signal; other: the sender; detail: the
                    // reason; outcome: what it did (ignored, trapped, exits); count: 1 through a link
  steal,            // process: the first process taken (it runs next); count: how many; from_worker:
                    // the worker they came from; worker: the thief
  annotation,       // process: the caller (null from a thread that is not a process); detail: the text
                    // given to annotate() (supervisors and pools write theirs: grove/trace.hpp's end)
  wake,             // process: the woken one, as it becomes runnable; other: the waker (null: a timer,
                    // the poller, a blocking thread or another thread); cause: what woke it
  timer_fire,       // process: the target of a send_after timer, as its message is delivered;
                    // message_type; message_id: the same as the receive that took it
  io_wait,          // process: the one that asks to wait for an fd; count: the fd; outcome: none;
                    // detail: "readable" or "writable" (its end is the wake, cause io)
};

inline constexpr std::uint32_t bit(event_kind k) noexcept { return 1u << static_cast<unsigned>(k); }
inline constexpr std::uint32_t all_events = 0x3FFFF;

// What a link, a monitor or an exit signal came to.
enum class signal_outcome : std::uint8_t {
  none,     // the event kind has no outcome, or it succeeded (link, monitor)
  noproc,   // link, monitor: the other process did not exist
  ignored,  // exit_signal: dropped (a normal exit through a link, or a link the receiver no longer has)
  trapped,  // exit_signal: the receiver traps exits; it became an exit_signal message
  exits,    // exit_signal: the receiver exits with the reason (killed for a direct kill)
};

// What made a process runnable (event_kind::wake).
enum class wake_cause : std::uint8_t {
  message,        // a message joined its mailbox (also a send_after timer's)
  signal,         // a signal: an exit signal, a down, a link or monitor request, a process_info
  timeout,        // its receive, sleep or IO wait timed out
  io,             // the fd it waits for is ready
  blocking_call,  // its run_blocking call returned
  unmuted,        // it waited after a send (wait_reason::muted) and the process it sent to caught up
};

// Their names as written above ("exit_signal", "trapped", "timeout"); also through fmt ("{}").
const char* to_string(event_kind k) noexcept;
const char* to_string(signal_outcome o) noexcept;
const char* to_string(wake_cause c) noexcept;

struct options {
  std::size_t events_per_worker = 65536;  // ring size per worker (rounded up to a power of two, >= 64)
  std::uint32_t kinds = all_events;       // which event kinds to record (bit(event_kind::send) | ...)
  std::string dump_file{};                // where dump() writes (GROVE_TRACE: that file); empty: dump() does nothing
  // A signal that dumps the flight recorder (e.g. SIGUSR2; GROVE_TRACE_SIGNAL=USR2): 0, the
  // default, installs nothing. Asked for, start() installs a handler for it in place of the
  // signal's disposition (the host's global state: only when asked), which stop() puts back; the
  // handler only writes a byte to a pipe, and a thread of the tracer's does the dump (dump()'s
  // rate limit applies). errc::bad_argument for a signal that cannot be caught (SIGKILL, ...).
  int dump_signal = 0;
};

// Starts recording, with fresh rings (what an earlier start recorded is dropped): an empty error
// code, or errc::not_running without a running runtime. options::kinds are recorded for every
// process; start({.kinds = 0}) records only what trace_process asks for. Thread-safe.
std::error_code start(const options& o = {});
// Stops recording; what was recorded stays readable until the next start or the runtime's end.
void stop() noexcept;
// Whether a start is in effect (even with no kinds selected yet).
bool is_recording() noexcept;

// Per-process tracing, Erlang's erlang:trace(Pid, true, Flags): the events of one process, on top of
// what options::kinds records for all. Flags name groups of event kinds, as Erlang's do:
namespace process_flags {
inline constexpr std::uint8_t send = 1 << 0;          // send: messages it sends
inline constexpr std::uint8_t receive = 1 << 1;       // receive, receive_timeout, timer_fire: what it receives
inline constexpr std::uint8_t procs = 1 << 2;         // spawn, exit, link, unlink, monitor, demonitor,
                                                      // down, exit_signal (Erlang's procs)
inline constexpr std::uint8_t running = 1 << 3;       // run_begin, run_end, steal, wake, io_wait (Erlang's
                                                      // running)
inline constexpr std::uint8_t annotations = 1 << 4;   // its annotate() calls
inline constexpr std::uint8_t all = 0x1F;
inline constexpr std::uint8_t set_on_spawn = 1 << 5;  // the processes it spawns from now on get the same
                                                      // flags, this one included (Erlang's set_on_spawn)
}  // namespace process_flags
// Sets the process's flags (0: no longer traced by itself). They last until changed or the process
// exits, across stop and start, as Erlang's do; they record only while a start is in effect.
// errc::not_running without a runtime or without a start in effect; errc::noproc for a process
// that is not alive. Thread-safe; the process may be running (the flags apply from its next event).
std::error_code trace_process(grove::pid p, std::uint8_t flags);
// Whether events of this kind are recorded now: guard the formatting of an annotation with it.
bool is_recording(event_kind k) noexcept;

struct event {
  event_kind kind = event_kind::spawn;
  std::uint64_t time_ns = 0;          // CLOCK_MONOTONIC
  int worker = -1;                    // the worker that recorded it; -1: another thread
  grove::pid process;
  grove::pid other;
  const char* message_type = nullptr; // send, receive: the C++ type's name (as typeid gives it)
  std::uint64_t message_id = 0;       // send, receive: the same non-zero id for a send and the receive
                                      // that took its message (0: the other end is not in the rings)
  std::uint32_t count = 0;            // receive: messages passed over; run_begin: run-queue length;
                                      // steal: processes taken; exit_signal: 1 through a link; io_wait:
                                      // the fd
  std::uint32_t queued = 0;           // receive: messages still in its mailbox after it (those it has
                                      // taken in: grove/introspection.hpp's mailbox_length)
  std::string detail;                 // exit, down, exit_signal: the reason; run_end: why it stopped;
                                      // annotation: its text
  signal_outcome outcome = signal_outcome::none;  // link, monitor, exit_signal
  int from_worker = -1;               // steal: the victim
  wake_cause cause = wake_cause::message;  // wake
};

// Records an annotation event with this text on the calling process's track (Go's trace.Log): what
// a library or the program wants next to the runtime's events. Recorded only while
// is_recording(event_kind::annotation); texts are kept once each (a repeated text costs a lookup),
// up to 65,536 different texts a runtime, after which annotations are recorded without a text.
// Supervisors annotate each report (child crashed, restarted, gave up, start failed), pools each
// refusal and timed-out waiter. Never throws.
void annotate(std::string_view text) noexcept;

// What the rings hold now, oldest first. Thread-safe; recording goes on meanwhile.
std::vector<event> snapshot();
// The flight recorder's dump: writes what the rings hold to options::dump_file, if tracing records
// and a file is set, and logs why (log_kind::trace). A supervisor calls it when it gives up (the
// events that led there), at most one dump a second (a storm of give-ups writes one). The number of
// events written, or 0. Never throws.
std::size_t dump(std::string_view why) noexcept;
// Writes what the rings hold as a Perfetto trace file; the number of events written.
// errc::bad_argument if the file cannot be written. Thread-safe; recording goes on meanwhile.
result<std::size_t> write_perfetto(const std::string& path);

}  // namespace grove::trace

template <>
struct fmt::formatter<grove::trace::event_kind> : grove::detail::named_formatter<grove::trace::event_kind> {};
template <>
struct fmt::formatter<grove::trace::signal_outcome> : grove::detail::named_formatter<grove::trace::signal_outcome> {};
template <>
struct fmt::formatter<grove::trace::wake_cause> : grove::detail::named_formatter<grove::trace::wake_cause> {};

GROVE_PUBLIC_END
