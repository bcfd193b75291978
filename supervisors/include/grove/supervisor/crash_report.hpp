// grove/supervisor/crash_report.hpp: what a supervisor reports, and where the reports go.
//
// Every crash, restart and give-up produces exactly one crash_report, handed to a logger: the
// supervisor's own (flags::logger) if it has one, else the global one (set_logger), which by default
// hands the formatted line to Grove's logger (grove/logger.hpp, log_kind::supervisor), so one hook,
// grove::set_logger, sees every report the runtime and its supervisors make. OTP's supervisor reports map to these kinds:
// child_terminated → child_crashed, start_error → start_failed / restart_failed, shutdown_error →
// shutdown_error, shutdown (reached_max_restart_intensity) → gave_up; OTP's progress reports of
// restarts become child_restarted.
//
// A logger runs inside the supervisor process, on a worker thread, while the supervisor waits for it:
// it must be thread-safe (many supervisors report at once) and quick. Exceptions it throws are dropped.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <grove/exit_reason.hpp>
#include <grove/logger.hpp>
#include <grove/pid.hpp>
#include <string>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::supervisor {

enum class report_kind {
  child_crashed,    // a child exited abnormally (also a temporary one, which is then forgotten)
  child_restarted,  // a child was started again after a crash (one report per child started)
  start_failed,     // a child failed to start while the supervisor started (its start fails too)
  restart_failed,   // a child failed to start while being restarted (the restart is tried again)
  shutdown_error,   // a child being stopped exited with an unexpected reason
  gave_up,          // restart intensity exceeded: the supervisor stops its children, exits shutdown
  auto_shutdown,    // significant children ended: the supervisor stops its children, exits shutdown
};

// The kind's name: "child_crashed", ...
const char* to_string(report_kind kind) noexcept;

struct crash_report {
  report_kind kind = report_kind::child_crashed;
  grove::pid supervisor{};
  std::string supervisor_name{};       // flags::name, or empty
  std::string child_id{};              // the child concerned (for gave_up: the child whose crash did it)
  grove::pid child{};                  // its pid: the one that exited, or for child_restarted the new one
  exit_reason reason{};                // why it exited (gave_up: the crash that exceeded the intensity)
  std::string exception{};             // an exception's what() (from the reason, or thrown by a start function)
  std::size_t restarts_in_window = 0;  // restarts counted in the current intensity window
  int intensity = 0;                   // the supervisor's limits, for the reader
  std::chrono::milliseconds period{0};
};

using logger = std::function<void(const crash_report&)>;

// One line, no newline, e.g.
//   supervisor app <0.12.1>: child 'db' <0.15.1> crashed: exception: timeout; restarts 1 of 3 in 5000 ms
std::string format_report(const crash_report& report);
// The default logger: format_report through grove::log (level error for crashes, failures and
// give-ups, info for restarts), with the supervisor (or the child) as the event's process, and the
// reason's exception type and throw site (grove/stack_trace.hpp) in the event.
void log_report(const crash_report& report);
// format_report plus a newline to stderr, and the throw site's frames under it if the reason has
// one, in one write.
void print_report(const crash_report& report);
// The global logger, used by supervisors that have none of their own. An empty logger silences
// them. Thread-safe; takes effect for reports made after it returns.
void set_logger(logger l);
// Restores log_report as the global logger.
void reset_logger();

}  // namespace grove::supervisor

template <>
struct fmt::formatter<grove::supervisor::report_kind> : grove::detail::named_formatter<grove::supervisor::report_kind> {};
// A report formats as format_report's line.
template <>
struct fmt::formatter<grove::supervisor::crash_report> : grove::detail::text_formatter {
  template <class Ctx>
  auto format(const grove::supervisor::crash_report& r, Ctx& ctx) const -> decltype(ctx.out()) {
    return format_text(grove::supervisor::format_report(r), ctx);
  }
};

GROVE_PUBLIC_END
