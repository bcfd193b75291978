// logger.cpp: the program's one logging hook (grove/logger.hpp).
//
// The current logger is a shared_ptr behind a mutex: log() copies the pointer under the lock and
// calls it outside, so a logger that is slow or reports again does not hold anyone else up, and
// set_logger never waits for a call in progress. Reports are rare (crashes nobody watches, warnings),
// so the lock is uncontended; the supervisors, which report on every restart, keep their own cached
// copy of their logger (supervisors/src/crash_report.cpp).
#include <grove/logger.hpp>

#include <cstdio>
#include <memory>
#include <mutex>

namespace grove {

namespace {

void print_line(const log_event& e) {
  std::string out = e.text;
  out += '\n';
  if (!e.throw_site.empty()) out.append("    thrown at:\n").append(e.throw_site.to_string("      "));
  std::fwrite(out.data(), 1, out.size(), stderr);  // one write per event: events from many threads do not mix
}

struct global_logger {
  std::mutex lock;
  std::shared_ptr<const logger> current = std::make_shared<const logger>(&print_line);  // guarded by lock
};

global_logger& global() {
  static global_logger g;
  return g;
}

}  // namespace

const char* to_string(log_level level) noexcept {
  switch (level) {
    case log_level::error: return "error";
    case log_level::warning: return "warning";
    case log_level::info: return "info";
  }
  return "unknown";
}

const char* to_string(log_kind kind) noexcept {
  switch (kind) {
    case log_kind::crash_report: return "crash_report";
    case log_kind::trace: return "trace";
    case log_kind::top_socket: return "top_socket";
    case log_kind::exit_swallowed: return "exit_swallowed";
    case log_kind::max_heap_size: return "max_heap_size";
    case log_kind::stop: return "stop";
    case log_kind::out_of_memory: return "out_of_memory";
    case log_kind::supervisor: return "supervisor";
    case log_kind::service: return "service";
    case log_kind::unmatched_mail: return "unmatched_mail";
    case log_kind::distribution: return "distribution";
  }
  return "unknown";
}

void set_logger(logger l) {
  auto next = std::make_shared<const logger>(std::move(l));
  global_logger& g = global();
  std::lock_guard<std::mutex> guard(g.lock);
  g.current = std::move(next);
}

void reset_logger() { set_logger(&print_line); }

void log(const log_event& event) noexcept {
  std::shared_ptr<const logger> l;
  {
    global_logger& g = global();
    std::lock_guard<std::mutex> guard(g.lock);
    l = g.current;
  }
  if (!l || !*l) return;
  try {
    (*l)(event);
  } catch (...) {
    // A logger's failure is not the reporter's: dropped (grove/logger.hpp).
  }
}

}  // namespace grove
