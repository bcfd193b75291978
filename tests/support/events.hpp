// events.hpp: what the behaviour tests (supervisors, services) share beyond the fixture: a
// thread-safe log that processes write and the test reads, and a wait for a monitor's down message.
// Shared state is reached through shared_ptrs or outlives the runtime_fixture: a process's stack is
// copied out while it waits, so no process may keep a reference to another's locals.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "support/fixture.hpp"

namespace grove_test {

class event_log {
 public:
  void add(std::string e) {
    std::lock_guard<std::mutex> g(lock_);
    events_.push_back(std::move(e));
  }
  std::vector<std::string> snapshot() const {
    std::lock_guard<std::mutex> g(lock_);
    return events_;
  }
  bool has(const std::string& e) const { return count(e) > 0; }
  std::size_t count(const std::string& e) const {
    auto s = snapshot();
    return static_cast<std::size_t>(std::count(s.begin(), s.end(), e));
  }
  // The events that start with `prefix`, in order.
  std::vector<std::string> with_prefix(const std::string& prefix) const {
    std::vector<std::string> out;
    for (auto& e : snapshot())
      if (e.rfind(prefix, 0) == 0) out.push_back(e);
    return out;
  }
  void clear() {
    std::lock_guard<std::mutex> g(lock_);
    events_.clear();
  }

 private:
  mutable std::mutex lock_;
  std::vector<std::string> events_;
};

// The reason the monitored process exited with; fails the test if no down arrives within `patience`.
inline grove::exit_reason wait_down(const grove::monitor_ref& ref) {
  return grove::receive(grove::when([ref](const grove::down& d) { return d.ref == ref; }, [](grove::down d) { return d.reason; }),
                        grove::after(patience, [] {
                          FAIL("no down message");
                          return grove::exit_reason::normal();
                        }));
}

}  // namespace grove_test
