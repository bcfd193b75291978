// grove/logger.hpp: where Grove's reports go.
//
// Everything Grove has to say goes through one hook, as in OTP's logger: crash reports of processes
// whose exit reaches no one (or of every crash: runtime_config::crash_reports), the runtime's own warnings (a swallowed exit, an arena over its limit,
// what stop() left behind), and, by default, the supervisors' reports (grove/supervisor/crash_report.hpp).
// The default logger writes each event's text as one line to stderr, followed, when the event has a
// throw site, by its frames, one a line, indented (one write per event, so events from many workers
// do not mix). set_logger replaces it for the whole program; an empty logger
// silences Grove.
//
// A logger runs on whichever thread reports, often a worker thread inside a process that is ending:
// it must be thread-safe and quick, must not block for long, and must not call back into Grove's
// blocking API (receive, sleep_for). Exceptions it throws are dropped.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/stack_trace.hpp>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

enum class log_level { error, warning, info };

// What an event is about.
enum class log_kind {
  crash_report,    // a process exited with a reason of its own other than normal or shutdown and no
                   // process links to it or monitors it (so its reason would otherwise reach no one);
                   // with runtime_config::crash_reports == all, whoever links to it or monitors it
  exit_swallowed,  // a process caught its own exit with catch (...) and went on (grove/process.hpp)
  max_heap_size,   // a process's arena passed its limit; the process was killed
  stop,            // runtime::stop overran its deadline or left something behind
  out_of_memory,   // the runtime could not allocate and did something less than asked (the text says what)
  supervisor,      // a supervisor's report (grove/supervisor/crash_report.hpp), formatted
  service,         // a service library's report: an HTTP handler that threw, an accept that fails (grove::http)
  unmatched_mail,  // a process's mailbox passed runtime_config::unmatched_mail_warning messages no
                   // receive has matched (reported once per process; the text names the types)
  trace,           // grove/trace.hpp: a trace file written (GROVE_TRACE), or that could not be
  top_socket,      // runtime_config::top_socket (tools/top's socket) could not be opened
  distribution,    // grove::dist: a node connected or went down (and why), a refused or malformed
                   // peer, a message that has no term form and was dropped
};

// The name of the kind: "crash_report", ...; of the level: "error", "warning", "info". fmt formats both so.
const char* to_string(log_kind kind) noexcept;
const char* to_string(log_level level) noexcept;

// A message a process took, as the tracer recorded it (log_event::last_messages).
struct received_message {
  std::string type;            // the C++ type, demangled
  grove::pid from;             // its sender; null if not recorded (a thread, a send_after timer, or the
                               // send is older than what the tracer still holds)
  std::uint64_t time_ns = 0;   // when it was taken (CLOCK_MONOTONIC)
};

struct log_event {
  log_event() = default;
  log_event(log_level l, log_kind k, grove::pid p, std::string n, exit_reason r, std::string t)
      : level(l), kind(k), process(p), name(std::move(n)), reason(std::move(r)), text(std::move(t)) {}

  log_level level = log_level::error;
  log_kind kind = log_kind::crash_report;
  grove::pid process;         // the process concerned, if any
  std::string name;           // its registered name, if it had one
  exit_reason reason;         // crash_report, max_heap_size: why it exited
  std::string text;           // the whole report, one line without a newline, e.g.
                              // "grove: process <0.42.1> (db) exited: exception: connection refused
                              // (std::runtime_error)"
  // crash_report and supervisor reports whose reason is an exception: its type, demangled, and where
  // it was thrown, if known (recorded when the program links grove::throw_traces: grove/stack_trace.hpp).
  std::string exception_type;
  stack_trace throw_site;
  // crash_report: the processes linked to it and those monitoring it when it exited (always empty
  // with runtime_config::crash_reports == unobserved, which reports only crashes nobody hears of).
  std::vector<grove::pid> links;
  std::vector<grove::pid> monitored_by;
  // crash_report, while the tracer records this process's receives (grove/trace.hpp: the receive
  // kind, for all or by its trace_process flags): the last messages it took, oldest first, at most
  // 8, found among the newest 4,096 events of each worker's ring. Empty when not traced.
  std::vector<received_message> last_messages;
};

using logger = std::function<void(const log_event&)>;

// Replaces the program's logger (an empty one silences Grove). Thread-safe; takes effect for events
// reported after it returns.
void set_logger(logger l);
// Restores the default (one line to stderr).
void reset_logger();
// Reports an event through the current logger. Thread-safe; never throws.
void log(const log_event& event) noexcept;

}  // namespace grove

template <>
struct fmt::formatter<grove::log_kind> : grove::detail::named_formatter<grove::log_kind> {};
template <>
struct fmt::formatter<grove::log_level> : grove::detail::named_formatter<grove::log_level> {};

GROVE_PUBLIC_END
