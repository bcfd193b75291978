// log_capture.hpp: collects what Grove reports through its logger (grove/logger.hpp) while it lives,
// instead of printing it; restores the default logger when destroyed.
#pragma once

#include <mutex>
#include <vector>

#include <grove/logger.hpp>

namespace grove_test {

class log_capture {
 public:
  log_capture() {
    grove::set_logger([this](const grove::log_event& e) {
      std::lock_guard<std::mutex> g(lock_);
      events_.push_back(e);
    });
  }
  ~log_capture() { grove::reset_logger(); }
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;

  std::vector<grove::log_event> all() const {
    std::lock_guard<std::mutex> g(lock_);
    return events_;
  }
  std::vector<grove::log_event> of(grove::log_kind kind) const {
    std::lock_guard<std::mutex> g(lock_);
    std::vector<grove::log_event> out;
    for (auto& e : events_)
      if (e.kind == kind) out.push_back(e);
    return out;
  }

 private:
  mutable std::mutex lock_;
  std::vector<grove::log_event> events_;  // guarded by lock_
};

}  // namespace grove_test
