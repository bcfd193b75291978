// helpers.hpp: what the supervisor tests share, beyond support/events.hpp: a log of crash reports
// (thread-safe: supervisors write, the test reads), children that log their start and
// their stop, and waits on a supervisor's children. Shared state must be declared before the
// runtime_fixture, so that it outlives every process.
#pragma once

#include <algorithm>
#include <atomic>
#include <grove/supervisor.hpp>
#include <mutex>
#include <string>
#include <vector>

#include "support/events.hpp"
#include "support/fixture.hpp"

namespace sup_test {

namespace sup = grove::supervisor;
using namespace std::chrono_literals;
using grove_test::event_log;
using grove_test::wait_down;


class report_log {
 public:
  sup::logger logger() {
    return [this](const sup::crash_report& r) {
      std::lock_guard<std::mutex> g(lock_);
      reports_.push_back(r);
    };
  }
  std::vector<sup::crash_report> snapshot() const {
    std::lock_guard<std::mutex> g(lock_);
    return reports_;
  }
  std::vector<sup::crash_report> of(sup::report_kind k) const {
    std::vector<sup::crash_report> out;
    for (auto& r : snapshot())
      if (r.kind == k) out.push_back(r);
    return out;
  }
  std::size_t count(sup::report_kind k) const { return of(k).size(); }
  bool wait_for(sup::report_kind k, std::size_t n) const {
    return grove_test::wait_until([&] { return count(k) >= n; });
  }

 private:
  mutable std::mutex lock_;
  std::vector<sup::crash_report> reports_;
};

// A child that logs "start:<id>" when started and "stop:<id>" when an exit signal reaches it (it
// traps exits so that it can log, then exits with the signal's reason).
inline sup::child_spec logged_worker(const std::string& id, event_log& log,
                                     sup::restart_type restart = sup::restart_type::permanent) {
  sup::child_spec s;
  s.id = id;
  s.restart = restart;
  s.start = [id, &log]() -> grove::result<grove::pid> {
    log.add("start:" + id);
    return grove::spawn_link([id, &log] {
      grove::trap_exit(true);
      grove::receive([&](grove::exit_signal e) {
        log.add("stop:" + id);
        grove::exit(e.reason);
      });
    });
  };
  return s;
}

// A child that waits for ever (does not trap exits).
inline sup::child_spec idle_worker(const std::string& id, sup::restart_type restart = sup::restart_type::permanent) {
  struct never {};
  return sup::worker(
      id, [] { grove::receive([](never) {}); }, restart);
}

// The pid of child `id` (null if not running or not found).
inline grove::pid child_pid(grove::pid s, const std::string& id) {
  auto kids = sup::which_children(s);
  if (!kids) return {};
  for (auto& c : *kids)
    if (c.id == id) return c.pid;
  return {};
}

inline sup::child_state child_state_of(grove::pid s, const std::string& id) {
  auto kids = sup::which_children(s);
  if (kids)
    for (auto& c : *kids)
      if (c.id == id) return c.state;
  return sup::child_state::stopped;
}

// Waits until child `id` runs with a pid other than `old`; returns the new pid (null on timeout).
inline grove::pid wait_restarted(grove::pid s, const std::string& id, grove::pid old) {
  grove::pid now;
  grove_test::wait_until([&] {
    now = child_pid(s, id);
    return !now.is_null() && now != old;
  });
  return now != old ? now : grove::pid{};
}

}  // namespace sup_test
