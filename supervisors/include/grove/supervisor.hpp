// grove/supervisor.hpp: OTP supervisors for Grove processes, built on the public runtime API only.
//
//   namespace sup = grove::supervisor;
//   grove::scoped_process me;                                    // or run this inside a process
//   grove::pid app = sup::start_link({.strategy = sup::strategy::one_for_one, .intensity = 3},
//                                    {sup::worker("db", run_db), sup::worker("api", run_api)});
//
// A supervisor is a process that traps exits. It starts its children in order, restarts them when
// they exit according to its strategy and their restart types, gives up when restarts exceed its
// intensity (stopping every child in reverse start order and exiting with `shutdown`, so that its own
// supervisor decides what happens next), and stops its children in reverse order when the process
// that started it (its parent, to which it is linked) exits, then exits with the parent's reason.
// An exit signal from the null pid (grove::runtime::stop, or exit() from a foreign thread) stops it
// the same way. Semantics follow OTP's supervisor module (runtime/DESIGN.md §5); where Grove differs it
// says so. supervisors/src/supervisor_process.cpp opens with the design.
//
// The management calls are requests to the supervisor process and replies from it; each takes a
// timeout (default: infinity, as OTP's) and never waits out the timeout if the supervisor dies (the
// caller monitors it): that returns grove::errc::noproc. A reply that comes after the caller's
// timeout is discarded, never left in the caller's mailbox. Call them from a process or a
// scoped_process. All are thread-safe.
#pragma once

#include <any>
#include <chrono>
#include <cstddef>
#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/supervisor/child_spec.hpp>
#include <grove/supervisor/crash_report.hpp>
#include <grove/supervisor/errc.hpp>
#include <grove/supervisor/restart_intensity.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::supervisor {

enum class strategy {
  one_for_one,         // restart only the child that exited
  one_for_all,         // stop all the others (reverse order), restart all (start order)
  rest_for_one,        // stop the ones started after it (reverse order), restart it and them
  simple_one_for_one,  // one_for_one over dynamic children of one template spec (start_child with
                       // arguments); stopped all at once (in parallel) when the supervisor stops
};

// OTP's auto_shutdown: whether the supervisor stops itself when significant children end on their
// own (exit without being restarted; a child stopped by terminate_child does not count).
enum class auto_shutdown {
  never,            // significant children are not allowed
  any_significant,  // when any significant child ends
  all_significant,  // when no significant child is left running
};

// The names: "one_for_one", ...; "never", "any_significant", "all_significant". fmt formats them so.
const char* to_string(strategy s) noexcept;
const char* to_string(auto_shutdown a) noexcept;

struct flags {
  supervisor::strategy strategy = supervisor::strategy::one_for_one;
  int intensity = 1;                       // restarts allowed in any `period` (>= 0)
  std::chrono::milliseconds period{5000};  // (> 0)
  supervisor::auto_shutdown auto_shutdown = supervisor::auto_shutdown::never;
  std::string name{};                          // registered name (grove::register_name) if not empty;
                                               // also shown in crash reports
  std::optional<supervisor::logger> logger{};  // this supervisor's crash reports go here (an empty
                                               // function silences them); unset: the global logger
};

inline constexpr std::chrono::milliseconds infinity = std::chrono::milliseconds::max();

// The payload of a supervisor's exit reason when a child failed to start, OTP's
// {shutdown, {failed_to_start_child, Id, Reason}}: exit_reason::payload<failed_to_start_child>().
struct failed_to_start_child {
  std::string id;
  exit_reason reason;  // the child's: what its start function returned or threw
};


// What validate() and a failed start report: a code and one sentence naming the culprit.
struct problem {
  std::error_code code{};
  std::string message{};
  explicit operator bool() const noexcept { return static_cast<bool>(code); }
};

// Checks flags and specs as start_link does, without starting anything: duplicate ids, empty ids,
// no start function, intensity < 0, period <= 0, a permanent significant child, a significant child
// without auto_shutdown, auto_shutdown on simple_one_for_one, simple_one_for_one with other than
// one spec, a negative shutdown timeout, a backoff out of range. An empty problem when all is well.
problem validate(const flags& f, const std::vector<child_spec>& specs);

// Starts a supervisor linked to the calling process (its parent) and waits until every child has
// started. If a child fails to start, as in OTP: the children already started are stopped in reverse
// order, and the supervisor exits with {shutdown, {failed_to_start_child, Id, Reason}} (a user
// reason "shutdown" whose payload is failed_to_start_child). That exit signal reaches the linked
// parent: one that does not trap exits dies with that reason (start_link does not return; a
// scoped_process throws grove::error(errc::noproc) naming it); one that traps gets it as an
// exit_signal message, and start_link reports the failure with the child's id and reason as data
// (start_error). A name that is taken: already_started with the holder's pid, and the supervisor
// exits normal. start_link throws supervisor::error (carrying the start_error) or grove::error
// (not_in_process, not_running, process_limit); try_start_link returns it. `timeout` bounds the
// whole start (then the supervisor is unlinked and killed, its children with it: grove::errc::timeout).
pid start_link(const flags& f, std::vector<child_spec> specs, std::chrono::milliseconds timeout = infinity);
start_result try_start_link(const flags& f, std::vector<child_spec> specs, std::chrono::milliseconds timeout = infinity);

// A child spec for a nested supervisor (type supervisor, shutdown infinity, permanent).
child_spec supervisor_child(std::string id, flags f, std::vector<child_spec> specs);

enum class child_state {
  running,
  restarting,  // waiting to be restarted (a backoff delay, or a failed start to be tried again)
  stopped,     // not running: terminated by terminate_child, or a transient child that ended
};
// "running", "restarting", "stopped"; fmt formats it so.
const char* to_string(child_state s) noexcept;

struct child_info {
  std::string id{};  // for simple_one_for_one: the template's id
  grove::pid pid;    // null unless running
  child_state state = child_state::stopped;
  child_type type = child_type::worker;
  restart_type restart = restart_type::permanent;
};

// OTP's count_children: specs (children known), active (running), supervisors and workers (specs
// of each type, running or not).
struct child_counts {
  std::size_t specs = 0;
  std::size_t active = 0;
  std::size_t supervisors = 0;
  std::size_t workers = 0;
};

// Adds a child and starts it (placed last in start order). Errors (start_error::code):
// already_started (start_error::pid is the running child, as OTP's {already_started, Pid}),
// already_present, invalid_child_spec, start_failed (start_error::reason is the child's reason;
// nothing is kept), and simple_one_for_one (use the overload with arguments).
start_result start_child(pid sup, child_spec spec, std::chrono::milliseconds timeout = infinity);
// simple_one_for_one: starts a child of the template with `args` (given to its start_with).
start_result start_child(pid sup, std::any args, std::chrono::milliseconds timeout = infinity);
// Stops a child with its shutdown policy and keeps its spec (a temporary child's spec is dropped);
// a child waiting to be restarted is no longer restarted.
std::error_code terminate_child(pid sup, std::string_view id, std::chrono::milliseconds timeout = infinity);
// simple_one_for_one (and others): stops the child with this pid and forgets it.
std::error_code terminate_child(pid sup, pid child, std::chrono::milliseconds timeout = infinity);
// Starts a stopped child again (errors: running, restarting, not_found, start_failed with the reason).
start_result restart_child(pid sup, std::string_view id, std::chrono::milliseconds timeout = infinity);
// Forgets a stopped child's spec (errors: running, restarting, not_found).
std::error_code delete_child(pid sup, std::string_view id, std::chrono::milliseconds timeout = infinity);
// The children in start order (simple_one_for_one: in no particular order).
result<std::vector<child_info>> which_children(pid sup, std::chrono::milliseconds timeout = infinity);
result<child_counts> count_children(pid sup, std::chrono::milliseconds timeout = infinity);
// Stops the supervisor as its parent's exit would: children in reverse order, then it exits with
// `reason`: by default normal (OTP's gen_server:stop/1), which its linked parent ignores; any other
// reason reaches the parent like any exit. Returns once it has exited (grove::errc::timeout if that
// took longer than `timeout`; it still stops).
std::error_code stop(pid sup, exit_reason reason = exit_reason::normal(), std::chrono::milliseconds timeout = infinity);

}  // namespace grove::supervisor

template <>
struct fmt::formatter<grove::supervisor::strategy> : grove::detail::named_formatter<grove::supervisor::strategy> {};
template <>
struct fmt::formatter<grove::supervisor::auto_shutdown> : grove::detail::named_formatter<grove::supervisor::auto_shutdown> {};
template <>
struct fmt::formatter<grove::supervisor::child_state> : grove::detail::named_formatter<grove::supervisor::child_state> {};

GROVE_PUBLIC_END
