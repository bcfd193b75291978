// grove/services/detail/common.hpp: what the service patterns' templates share. Internal; not part of
// the API.
//
// - The wire form of a reply: a handler's or task's result R travels as outcome<wire_t<R>> (void and
//   outcome<void> travel as unit; an outcome<T> travels as itself, so a handler can reply an error),
//   and the caller gets back outcome<value_t<R>>.
// - receive_by: a selective receive bounded by a deadline (no after clause for deadline::never()).
// - run_catching: runs user code, turning a std::exception into failure::from_exception. Only
//   std::exception is caught: Grove ends a process by unwinding it with an exception that is not one
//   (runtime/src/process.hpp), and catching (...) would swallow a kill.
// - send_safely: a send from a destructor that may run during an unwinding. A plain send can yield
//   at the end of a time slice and then act on an exit signal, which would throw during the
//   unwinding (std::terminate); send_after(0) never yields, so it is used while unwinding.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <utility>

#include <grove/message.hpp>
#include <grove/pid.hpp>
#include <grove/timer.hpp>

#include <grove/services/deadline.hpp>
#include <grove/services/outcome.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services::detail {

struct unit {};

template <class R>
struct reply_of {
  using value = R;
  using wire = R;
};
template <>
struct reply_of<void> {
  using value = void;
  using wire = unit;
};
template <class T>
struct reply_of<outcome<T>> {
  using value = T;
  using wire = typename reply_of<T>::wire;
};

template <class R>
using value_t = typename reply_of<R>::value;
template <class R>
using wire_t = typename reply_of<R>::wire;

// R (not void) → its wire form.
template <class R>
outcome<wire_t<R>> to_wire(R&& r) {
  using plain = std::remove_cvref_t<R>;
  if constexpr (std::is_same_v<plain, outcome<void>>) {
    if (r) return unit{};
    return r.failure();
  } else {
    return outcome<wire_t<plain>>(std::forward<R>(r));
  }
}

// The wire form back to what the caller gets.
template <class V>
outcome<V> from_wire(outcome<wire_t<V>>&& w) {
  if constexpr (std::is_void_v<V>) {
    if (w) return outcome<void>();
    return w.failure();
  } else {
    return std::move(w);
  }
}

// Calls fn(args...) and returns its result in wire form; a std::exception becomes a failure.
template <class R, class F, class... A>
outcome<wire_t<R>> run_catching(F& fn, A&&... args) {
  try {
    if constexpr (std::is_void_v<R>) {
      fn(std::forward<A>(args)...);
      return unit{};
    } else {
      return to_wire<R>(fn(std::forward<A>(args)...));
    }
  } catch (const std::exception& e) {
    return failure::from_exception(e);
  }
}

// Functions handed a deadline may take it (const deadline&) or nothing; deadline_result_t is what
// they return (no type otherwise, so overloads that need it drop out).
template <class F>
concept takes_deadline = std::is_invocable_v<F&, const deadline&>;
template <class F>
struct deadline_result {};
template <class F>
  requires takes_deadline<F>
struct deadline_result<F> {
  using type = std::invoke_result_t<F&, const deadline&>;
};
template <class F>
  requires(!takes_deadline<F> && std::is_invocable_v<F&>)
struct deadline_result<F> {
  using type = std::invoke_result_t<F&>;
};
template <class F>
using deadline_result_t = typename deadline_result<F>::type;

template <class F>
deadline_result_t<F> invoke_with_deadline(F& fn, const deadline& d) {
  if constexpr (takes_deadline<F>) {
    return fn(d);
  } else {
    return fn();
  }
}

// A selective receive that gives up at `d` (running on_timeout); with deadline::never() it waits.
template <class OnTimeout, class... H>
auto receive_by(const deadline& d, OnTimeout on_timeout, H&... handlers) {
  if (d.is_never()) return grove::receive(handlers...);
  return grove::receive(handlers..., grove::after(d.remaining(), on_timeout));
}

inline bool is_unwinding() noexcept { return std::uncaught_exceptions() > 0; }

// A send that never yields while an exception is in flight (see the file comment).
template <class T>
void send_safely(pid to, T&& msg) {
  if (is_unwinding()) {
    grove::send_after(to, std::forward<T>(msg), std::chrono::nanoseconds(0));
  } else {
    grove::send(to, std::forward<T>(msg));
  }
}

// The replies of calls, tasks and pool jobs: matched by the id of the alias they were sent to.
template <class W>
struct reply_msg {
  std::uint64_t id = 0;
  outcome<W> value;
};

}  // namespace grove::services::detail

GROVE_PUBLIC_END
