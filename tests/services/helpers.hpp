// helpers.hpp: what the services tests share, beyond support/events.hpp (the event log, wait_down):
// a clock to bound waits in seconds, and small waits on mailboxes.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "support/events.hpp"
#include "support/fixture.hpp"

#include <grove/services.hpp>

namespace svc_test {

namespace svc = grove::services;
using namespace std::chrono_literals;
using grove_test::patience;
using grove_test::event_log;
using grove_test::wait_down;

// Seconds since `start`, for the "after at least / before" checks.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Whether the caller's mailbox holds no message at all (signals excluded).
inline bool mailbox_is_empty() {
  return grove::receive([](grove::any_message) { return false; }, grove::after(0ms, [] { return true; }));
}

// A message a test sends to let a blocked process go on.
struct go {};

using grove_test::receive_one;

}  // namespace svc_test
