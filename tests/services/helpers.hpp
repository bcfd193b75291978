// helpers.hpp: what the services tests share: a thread-safe event log (behaviours write, the test
// reads), a clock to bound waits in seconds, and small waits on monitors and mailboxes. Shared state
// is reached through shared_ptrs captured by value: a process's stack is copied out while it waits,
// so no process may keep a reference to another's locals.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/fixture.hpp"

#include <grove/services.hpp>

namespace svc_test {

namespace svc = grove::services;
using namespace std::chrono_literals;
using grove_test::patience;

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
  bool has(const std::string& e) const {
    for (auto& x : snapshot())
      if (x == e) return true;
    return false;
  }

 private:
  mutable std::mutex lock_;
  std::vector<std::string> events_;
};

// Seconds since `start`, for the "after at least / before" checks.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The reason the monitored process exited with (fails the test after `patience`).
inline grove::exit_reason wait_down(const grove::monitor_ref& ref) {
  return grove::receive(grove::when([ref](const grove::down& d) { return d.ref == ref; }, [](grove::down d) { return d.reason; }),
                        grove::after(patience, [] {
                          FAIL("no down message");
                          return grove::exit_reason::normal();
                        }));
}

// Whether the caller's mailbox holds no message at all (signals excluded).
inline bool mailbox_is_empty() {
  return grove::receive([](grove::any_message) { return false; }, grove::after(0ms, [] { return true; }));
}

// A message a test sends to let a blocked process go on.
struct go {};

// Receives one T (fails the test after `patience`).
template <class T>
T receive_one() {
  auto got = grove::receive([](T v) { return std::optional<T>(std::move(v)); },
                            grove::after(patience, [] { return std::optional<T>(); }));
  REQUIRE_MESSAGE(got.has_value(), "no message of the expected type");
  return std::move(*got);
}

}  // namespace svc_test
