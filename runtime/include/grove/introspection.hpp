// grove/introspection.hpp: what a process and the runtime are doing, as Erlang's process_info and
// system_info.
//
// Two views of a process, as recon and observer offer in Erlang:
//   - process_summary_of, processes and top_processes read what every process publishes as it runs
//     (its state, what it waits on, its saved-mailbox length, reductions, live stack): they never wait
//     for the process, stop nothing, and answer for a process stuck in a computation as for any other.
//     Each field is a snapshot, exact when read but not consistent with the others.
//   - process_info asks the process (a signal it answers when it next takes in its mail, as in OTP),
//     so its links, monitors and mailbox types are its own consistent view. A process that does not
//     answer within the timeout (it is computing, or waits in a blocking call) is described from what
//     it publishes instead, with `answered` false.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/pid.hpp>
#include <grove/stack_trace.hpp>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

enum class process_status { runnable, running, waiting, exiting };

// What a waiting process waits for.
enum class wait_reason : std::uint8_t {
  none,           // not waiting (running, runnable or exiting)
  receive,        // a message: receive, or a service call waiting for its reply
  sleep,          // a timer: sleep_for, sleep_until
  io,             // a socket to become ready (grove/net.hpp)
  blocking_call,  // run_blocking's fn, on a blocking thread (grove/blocking.hpp; grove::file too)
  muted,          // the process it sent to cannot keep up: it waits until that one catches up
                  // (sends never fail or drop; a send to an overloaded process waits after it)
};

// fmt formats both by these names.
const char* to_string(process_status s) noexcept;  // "runnable", "running", "waiting", "exiting"
const char* to_string(wait_reason r) noexcept;     // "none", "receive", "sleep", "io", "blocking_call", "muted"

// What a process publishes as it runs (see the file comment).
struct process_summary {
  grove::pid pid;
  process_status status = process_status::runnable;
  wait_reason waiting_on = wait_reason::none;  // while status is waiting
  std::size_t mailbox_length = 0;  // messages it has taken in and no receive has matched yet; mail
                                   // that arrived since it last received is not counted until then
  std::uint64_t reductions = 0;    // sends and receives done so far
  std::size_t stack_bytes = 0;     // live execution stack when it last parked (64-byte granularity)
  bool scoped = false;             // a scoped_process (a foreign thread), not a scheduled process
  std::string registered_name;     // empty if none
  std::size_t arena_bytes = 0;     // its arena (grove/arena.hpp) as taken from the system, in whole KiB
};

// The summary of a live process, or nullopt if it is not alive. Never waits; from any thread.
std::optional<process_summary> process_summary_of(pid p);

// Every live process (scoped_processes included), in no particular order: the processes alive
// throughout the call are all there; one spawned or ended during it may or may not be. Without a
// runtime, empty. Costs one pass over the process table (a few ms per million processes).
std::vector<pid> processes();

// What top_processes sorts by, largest first.
enum class process_order { mailbox_length, reductions, stack_bytes, arena_bytes };

// The `n` live processes with the largest `by` (recon's proc_count), from one pass over the
// published summaries: nothing is stopped or asked. Ties in no particular order.
std::vector<process_summary> top_processes(std::size_t n, process_order by);

// A process and what it did in a window's last interval.
struct process_activity {
  process_summary process;
  std::uint64_t reductions = 0;  // reductions since the window's previous pass (all of them for a
                                 // process the window had not seen yet)
};

// The busiest processes *now* rather than over their lives (recon's proc_window, etop's view):
// each top() is one pass over the published summaries, and ranks the processes by the reductions
// they did since the previous top() (or since construction). Keeps one (pid, reductions) entry per
// live process between passes (16 bytes each). Not thread-safe: one window per watcher.
class reductions_window {
 public:
  reductions_window();
  // The n processes with the most reductions in the interval that ends now, largest first.
  std::vector<process_activity> top(std::size_t n);
  // The length of that interval, as of the last top() (since construction for the first).
  std::chrono::nanoseconds last_interval() const noexcept { return last_interval_; }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> previous_;  // (pid bits, reductions), sorted by pid
  std::chrono::steady_clock::time_point taken_;
  std::chrono::nanoseconds last_interval_{0};
};

struct message_type_count {
  std::string type;  // the C++ type, demangled ("std::__cxx11::basic_string<char, ...>" for std::string)
  std::size_t count = 0;
};

struct process_details {
  grove::pid pid;
  // true: the process answered (every field is its own view, and status is running: it was when it
  // answered, or exiting). false: it did not answer in time; the fields from process_summary are
  // filled (status, waiting_on, mailbox_length, reductions, stack_bytes), the rest left empty.
  bool answered = true;
  process_status status = process_status::running;
  wait_reason waiting_on = wait_reason::none;
  std::size_t mailbox_length = 0;  // messages waiting (signals excluded): the saved queue, once what
                                   // had arrived is taken in
  std::vector<message_type_count> mailbox_types;  // the commonest types among them, most first (at most 5)
  std::size_t stack_bytes = 0;     // live execution stack at the moment it answered
  std::size_t arena_bytes = 0;     // held by its arena
  std::size_t max_heap_bytes = 0;  // its arena limit (0: none)
  std::uint64_t reductions = 0;    // sends and receives done so far
  std::vector<grove::pid> links;
  std::vector<monitor_ref> monitors;         // monitors it holds on others
  std::vector<grove::pid> monitored_by;      // processes monitoring it
  std::string registered_name;               // empty if none
  int worker = -1;                           // the worker it runs on; -1 for a scoped_process
  bool trap_exit = false;
  // Where it stands, as Erlang's current_stacktrace: captured by the process as it answers, so for a
  // parked process the runtime's frames that answer, then the call that parked it (receive, sleep_for,
  // an IO wait) and every caller up to its function. Empty when it did not answer.
  stack_trace stacktrace;
};

// Details of a live process; nullopt if it is not alive. If it does not answer within `timeout`,
// what it publishes (answered == false). From a process or a foreign thread. Thread-safe.
std::optional<process_details> process_info(pid p, std::chrono::milliseconds timeout = std::chrono::seconds(5));

struct worker_details {
  std::size_t run_queue_length = 0;   // processes waiting in its local queue (approximate)
  std::uint64_t context_switches = 0; // processes resumed
  std::uint64_t steals = 0;           // processes taken from other workers
  std::uint64_t parks = 0;            // times it went idle and slept
  std::uint64_t timers_fired = 0;
  std::uint64_t reductions = 0;     // of the processes it ran, as each run ends
  std::uint64_t messages_sent = 0;      // by the processes it ran (to pids, names and aliases)
  std::uint64_t messages_received = 0;  // taken into the mailboxes of the processes it ran, as each run ends
};

struct system_details {
  std::size_t process_count = 0;       // live processes, scoped_processes included
  std::size_t process_limit = 0;
  std::uint64_t spawned = 0;           // since start
  std::uint64_t dead_letters = 0;      // messages sent to dead or null pids
  std::size_t global_queue_length = 0; // runnable processes in the shared inject queue (approximate)
  std::size_t stack_slots = 0;         // execution stacks
  std::size_t stack_bytes = 0;         // size of each
  std::uint64_t stack_image_copies = 0;// parked stacks copied out to make room (see scheduler.cpp)
  // Of those, the ones kept as their difference from another image (runtime/src/image_delta.hpp).
  std::uint64_t stack_image_differences = 0;
  std::vector<worker_details> workers;
  // Totals over the workers.
  std::uint64_t context_switches = 0;
  std::uint64_t steals = 0;
  std::uint64_t parks = 0;
  std::uint64_t reductions = 0;     // of processes run by workers, as each run ends (Erlang's
                                    // statistics(reductions)); scoped processes' are not counted
  // Messages sent by, and received into the mailboxes of, processes run by workers (scoped
  // processes' are not counted). Received includes the down and exit_signal messages the runtime
  // makes; a message to a dead pid is sent and never received (dead_letters).
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
};

// A snapshot of the running runtime; counters are read without stopping anything.
// Throws grove::error(errc::not_running) without a runtime.
system_details system_info();

// Resources held anywhere in Grove (all runtimes, across start and stop): after a clean stop, all
// are zero. Tests use it as a leak check. Exact when nothing runs; read while processes run, a
// count may be off by what is being taken and given back at that moment.
struct resource_usage {
  std::size_t processes = 0;      // control blocks in use
  std::size_t stack_images = 0;   // saved stack images
  std::size_t arenas = 0;
  std::size_t messages = 0;       // message and signal nodes allocated and not yet freed
  std::size_t timers = 0;         // pending timers
  std::size_t fds = 0;            // sockets grove::net holds open
};
resource_usage resources_in_use() noexcept;

}  // namespace grove

template <>
struct fmt::formatter<grove::process_status> : grove::detail::named_formatter<grove::process_status> {};
template <>
struct fmt::formatter<grove::wait_reason> : grove::detail::named_formatter<grove::wait_reason> {};

GROVE_PUBLIC_END
