// crash_report.cpp: formatting crash reports, and the global logger (grove/supervisor/crash_report.hpp).
//
// The global logger sits behind a mutex, with a version number beside it: each supervisor keeps the
// logger it last read and the version it read, and takes the mutex only when the version has moved
// (otherwise one acquire load per report), so a supervisor restarting a child a million
// times a second does not bounce a lock between workers.
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <grove/supervisor/crash_report.hpp>
#include <memory>
#include <mutex>

#include "protocol.hpp"

namespace grove::supervisor {

namespace {

struct global_logger {
  std::mutex lock;
  std::shared_ptr<const logger> current = std::make_shared<const logger>(&log_report);  // guarded by lock
  std::atomic<std::uint64_t> version{1};  // shared: bumped (release) after `current` changes
};

global_logger& global() {
  static global_logger g;
  return g;
}

std::string who(const crash_report& r) {
  return r.supervisor_name.empty() ? fmt::format("supervisor {}", r.supervisor)
                                   : fmt::format("supervisor {} {}", r.supervisor_name, r.supervisor);
}

std::string window(const crash_report& r) {
  return fmt::format("restarts {} of {} in {} ms", r.restarts_in_window, r.intensity, r.period.count());
}

}  // namespace

const char* to_string(report_kind kind) noexcept {
  switch (kind) {
    case report_kind::child_crashed:
      return "child_crashed";
    case report_kind::child_restarted:
      return "child_restarted";
    case report_kind::start_failed:
      return "start_failed";
    case report_kind::restart_failed:
      return "restart_failed";
    case report_kind::shutdown_error:
      return "shutdown_error";
    case report_kind::gave_up:
      return "gave_up";
    case report_kind::auto_shutdown:
      return "auto_shutdown";
  }
  return "unknown";
}

std::string format_report(const crash_report& r) {
  switch (r.kind) {
    case report_kind::child_crashed:
      return fmt::format("{}: child '{}' {} crashed: {}; {}", who(r), r.child_id, r.child, r.reason, window(r));
    case report_kind::child_restarted:
      return fmt::format("{}: child '{}' restarted as {}; {}", who(r), r.child_id, r.child, window(r));
    case report_kind::start_failed:
      return fmt::format("{}: child '{}' failed to start: {}", who(r), r.child_id, r.exception);
    case report_kind::restart_failed:
      return fmt::format("{}: child '{}' failed to restart: {}; {}", who(r), r.child_id, r.exception, window(r));
    case report_kind::shutdown_error:
      return fmt::format("{}: child '{}' {} did not stop cleanly: {}", who(r), r.child_id, r.child, r.reason);
    case report_kind::gave_up:
      return fmt::format(
          "{}: gave up: {} restarts in {} ms exceed intensity {} (last: child '{}' {}: {}); stopping "
          "all children, exiting shutdown",
          who(r), r.restarts_in_window, r.period.count(), r.intensity, r.child_id, r.child, r.reason);
    case report_kind::auto_shutdown:
      return fmt::format(
          "{}: significant child '{}' {} ended ({}); auto_shutdown: stopping all children, exiting "
          "shutdown",
          who(r), r.child_id, r.child, r.reason);
  }
  return who(r) + ": unknown report";
}

namespace {
// Whether the report is of a child's own failure, whose reason's throw site it shows. Not a give-up
// nor a failed restart: their reason is the earlier crash's, already shown with that crash's report.
bool is_crash(report_kind kind) noexcept {
  return kind == report_kind::child_crashed || kind == report_kind::start_failed || kind == report_kind::shutdown_error;
}
}  // namespace

void print_report(const crash_report& report) {
  std::string out = format_report(report);
  out += '\n';
  if (const stack_trace* site = report.reason.throw_site(); site && is_crash(report.kind))
    out.append("    thrown at:\n").append(site->to_string("      "));
  std::fwrite(out.data(), 1, out.size(), stderr);  // one write per report: reports from many supervisors do not mix
}

void log_report(const crash_report& report) {
  const bool progress = report.kind == report_kind::child_restarted;
  grove::log_event e{progress ? grove::log_level::info : grove::log_level::error, grove::log_kind::supervisor,
                     report.supervisor, report.supervisor_name, report.reason, format_report(report)};
  // A crash's exception: its type, and where it was thrown (with grove::throw_traces linked), which
  // the default logger prints under the line.
  if (is_crash(report.kind)) {
    e.exception_type = report.reason.exception_type();
    if (const stack_trace* site = report.reason.throw_site()) e.throw_site = *site;
  }
  grove::log(e);
}

void set_logger(logger l) {
  global_logger& g = global();
  auto next = std::make_shared<const logger>(std::move(l));
  std::lock_guard<std::mutex> guard(g.lock);
  g.current = std::move(next);
  g.version.fetch_add(1, std::memory_order_release);  // release: a reader that sees it reads the new logger
}

void reset_logger() { set_logger(&log_report); }

namespace internal {

bool global_logger_changed(std::uint64_t& seen_version, std::shared_ptr<const logger>& out) {
  global_logger& g = global();
  if (g.version.load(std::memory_order_acquire) == seen_version) return false;  // acquire: pairs with set_logger
  std::lock_guard<std::mutex> guard(g.lock);
  out = g.current;
  seen_version = g.version.load(std::memory_order_relaxed);  // under the lock: consistent with `current`
  return true;
}

}  // namespace internal

}  // namespace grove::supervisor
