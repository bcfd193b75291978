// grove/timer.hpp: messages delivered later, and cancelling them.
//
// Timers live in one hierarchical timing wheel per worker (runtime/src/timer_wheel.hpp): a pending
// timer costs a few dozen bytes and O(1) to start or cancel. A timer never fires early; it fires
// within one wheel tick (~0.26 ms) plus scheduling delay after its deadline. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <grove/message.hpp>
#include <grove/duration.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

namespace detail {
struct timer_state;
}

// A handle on one send_after timer. Copyable; default-constructed handles name no timer.
class timer_ref {
 public:
  timer_ref() = default;
  explicit timer_ref(std::shared_ptr<detail::timer_state> s) noexcept : state_(std::move(s)) {}
  explicit operator bool() const noexcept { return state_ != nullptr; }
  const std::shared_ptr<detail::timer_state>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::timer_state> state_;
};

namespace detail {
timer_ref send_after_node(pid to, message_node* n, std::int64_t delay_ns);  // consumes n
}

// Sends `msg` to `to` after `delay` (a send to a dead pid then is a counted no-op, like any send).
// Zero or negative: at the next timer tick; too long to represent (hours::max(), grove::forever): a
// timer that never fires but can be cancelled (grove/duration.hpp). Throws
// grove::error(errc::not_running) without a runtime.
template <class T, class Rep, class Period>
timer_ref send_after(pid to, T&& msg, std::chrono::duration<Rep, Period> delay) {
  return detail::send_after_node(to, detail::make_message(std::forward<T>(msg)), detail::timeout_ns(delay));
}

// Cancels the timer: true if it had not fired (its message is destroyed undelivered), false if it
// had fired or was cancelled already.
bool cancel_timer(const timer_ref& timer) noexcept;

}  // namespace grove

GROVE_PUBLIC_END
