// grove/message.hpp: sending messages and receiving them selectively.
//
//   grove::send(pid, any_movable_value);
//   grove::receive(
//       [](const ping& p) { ... },                                // matches by type
//       grove::when([](int n) { return n > 0; }, [](int n) { ... }),  // type plus a guard
//       grove::after(std::chrono::milliseconds(100), [] { ... }));    // optional timeout, last
//
// receive takes the oldest message that some handler accepts, trying handlers in order, and runs
// that handler with the message moved into it. Messages no handler accepts stay in the mailbox, in
// order, for a later receive. Without `after` it waits until a message matches; after(0) polls; a
// receive of an after clause alone waits for its timeout. receive returns the common type of the
// clauses' results (std::common_type: int and long give long; void only with void).
//
// What matches what: a handler takes a message whose type is exactly its parameter's, without const
// and reference; there are no conversions, so an int sent is never taken by a long handler. A send
// sends its value's decayed type, except that a string literal or a C string (const char*, and the
// wide ones) is sent as the std::basic_string it spells. Converted rather than refused: the sender
// means the text (Erlang's "hello" is a value), every handler written for text takes std::string,
// and the pointer would dangle once the sender's frame is gone (a parked process's stack is copied
// out and its slot reused); the cost is the copy std::string("hello") makes anyway. A null C string
// throws grove::error(errc::bad_argument). Refused at compile time (detail/message_checks.hpp): raw
// object pointers, std::string_view, std::span and std::reference_wrapper, also as a type argument
// of a pair, tuple, optional or container; grove::raw{p} sends one on purpose, and
// grove::allow_borrowed_message<T> lets a type of yours through. Messages that pile up unmatched are
// reported once (runtime_config::unmatched_mail_warning) and listed by process_info.
//
// Ordering: a send happens-before the receive that returns its message; from one sender to one
// receiver, messages (and signals) arrive in the order sent. Nothing is ordered across senders.
// A send to a dead pid (or the null pid) is a counted no-op (system_info().dead_letters).
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <grove/detail/message_checks.hpp>
#include <grove/detail/message_node.hpp>
#include <grove/duration.hpp>
#include <grove/errc.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// An alias: a name under which a process receives messages only while the alias is active (OTP 24's
// process aliases). A request/reply protocol makes one per request and deactivates it when it stops
// waiting, so a reply that comes too late is dropped instead of landing in the caller's mailbox.
struct alias {
  grove::pid owner;
  std::uint64_t id = 0;
  explicit operator bool() const noexcept { return id != 0; }
  friend bool operator==(const alias&, const alias&) noexcept = default;
};

// Makes a new active alias of the calling process. Throws grove::error(errc::not_in_process).
alias make_alias();
// Deactivates one of the caller's aliases: messages sent to it later (or still in flight) are
// dropped. False if it was not an active alias of the caller.
bool unalias(const alias& a);

namespace detail {
void send_node(pid to, message_node* n);  // consumes n; may unwind a process killed meanwhile
void send_node_to_alias(const alias& to, message_node* n);  // consumes n
bool send_node_to_name(std::string_view name, message_node* n);  // consumes n; false: no such name

using match_fn = int (*)(void* matcher, const message_node* n);
inline constexpr std::int64_t wait_forever = never_ns;
struct matched {
  message_node* node;  // removed from the mailbox; nullptr on timeout
  int handler;
};
// Scans the caller's mailbox, oldest first, for a message match() accepts (it returns a handler's
// index, or -1), waiting up to timeout_ns (0 polls, wait_forever waits: see grove/duration.hpp). Throws
// grove::error(errc::not_in_process) outside a process; unwinds the process if an exit signal kills it.
matched receive_node(match_fn match, void* matcher, std::int64_t timeout_ns);
}  // namespace detail

namespace detail {
// The node a send of msg puts in the mailbox (message_checks.hpp: outgoing_t, the compile-time
// refusals). Throws grove::error(errc::bad_argument) for a null C string.
template <class T>
message_node* make_message(T&& msg) {
  using M = outgoing_t<T>;
  if constexpr (!(std::is_move_constructible_v<M> && !is_borrowed<M>)) {
    (void)check_sendable<M>();  // one static_assert says which rule
    return nullptr;
  } else if constexpr (is_c_string<T>) {
    using A = std::remove_reference_t<T>;
    if constexpr (std::is_array_v<A>) {
      // Up to the first terminator, and never past the array: a char buffer need not hold one.
      using C = std::remove_const_t<std::remove_extent_t<A>>;
      constexpr std::size_t n = std::extent_v<A>;
      const C* end = std::char_traits<C>::find(msg, n, C());
      return make_node<M>(msg, end ? static_cast<std::size_t>(end - msg) : n);
    } else {
      if (msg == nullptr) throw error(errc::bad_argument, "grove::send: a null C string");
      return make_node<M>(msg);
    }
  } else {
    return make_node<M>(std::forward<T>(msg));
  }
}
}  // namespace detail

// Sends `msg` to `to`. Never blocks, never throws for a dead target. Thread-safe.
template <class T>
void send(pid to, T&& msg) {
  detail::send_node(to, detail::make_message(std::forward<T>(msg)));
}

// Sends to an alias: delivered to its owner if the alias is still active when the owner takes it
// in, dropped otherwise. Never blocks, never throws for a dead or inactive target.
template <class T>
void send(const alias& to, T&& msg) {
  detail::send_node_to_alias(to, detail::make_message(std::forward<T>(msg)));
}

// Sends to the process registered as `name`; throws grove::error(errc::no_such_name) if none is
// (Erlang's badarg).
template <class T>
void send(std::string_view name, T&& msg) {
  if (!detail::send_node_to_name(name, detail::make_message(std::forward<T>(msg)))) throw error(errc::no_such_name);
}
// As send by name, but returns false instead of throwing.
template <class T>
bool try_send(std::string_view name, T&& msg) {
  return detail::send_node_to_name(name, detail::make_message(std::forward<T>(msg)));
}

// Matches any message; holds it until destroyed. Use it last, as Erlang's `_ ->` clause.
class any_message {
 public:
  explicit any_message(detail::message_node* n) noexcept : node_(n) {}
  any_message(any_message&& o) noexcept : node_(std::exchange(o.node_, nullptr)) {}
  any_message& operator=(any_message&& o) noexcept {
    std::swap(node_, o.node_);
    return *this;
  }
  ~any_message() {
    if (node_) detail::destroy_node(node_);
  }
  // The C++ type's (mangled) name.
  const char* type_name() const noexcept { return node_->type->name(); }
  template <class T>
  bool is() const noexcept {
    return node_->type == detail::type_id<T>();
  }
  template <class T>
  T* get() noexcept {
    return is<T>() ? &static_cast<detail::typed_node<T>*>(node_)->value : nullptr;
  }

 private:
  detail::message_node* node_;
};

namespace detail {
template <class G, class F>
struct guarded {
  G guard;
  F handler;
};
template <class F>
struct after_clause {
  std::int64_t timeout_ns;
  F handler;
};

template <class H>
struct handler_traits {
  using message = std::remove_cvref_t<typename callable_shape<H>::first>;
  using ret = typename callable_shape<H>::ret;
  static bool guard(H&, const message&) { return true; }
  static H& fn(H& h) { return h; }
};
template <class G, class F>
struct handler_traits<guarded<G, F>> {
  using message = std::remove_cvref_t<typename callable_shape<F>::first>;
  using ret = typename callable_shape<F>::ret;
  static bool guard(guarded<G, F>& h, const message& m) { return static_cast<bool>(h.guard(m)); }
  static F& fn(guarded<G, F>& h) { return h.handler; }
};

template <class Handlers, class Seq>
struct matcher;
template <class Handlers, std::size_t... I>
struct matcher<Handlers, std::index_sequence<I...>> {
  // The index of the first handler that accepts n, or -1.
  static int match(void* p, [[maybe_unused]] const message_node* n) {  // unused with no handler (after alone)
    [[maybe_unused]] auto& hs = *static_cast<Handlers*>(p);
    int found = -1;
    (void)((accepts<I>(hs, n) ? (found = static_cast<int>(I), true) : false) || ...);
    return found;
  }
  template <std::size_t J>
  static bool accepts(Handlers& hs, const message_node* n) {
    using h_t = std::remove_reference_t<std::tuple_element_t<J, Handlers>>;
    using m_t = typename handler_traits<h_t>::message;
    if constexpr (std::is_same_v<m_t, any_message>) {
      return !n->type->is_signal;
    } else {
      if (n->type != type_id<m_t>()) return false;
      return handler_traits<h_t>::guard(std::get<J>(hs), static_cast<const typed_node<m_t>*>(n)->value);
    }
  }
};

template <std::size_t I, class Handlers>
decltype(auto) invoke_handler(Handlers& hs, message_node* n) {
  using h_t = std::remove_reference_t<std::tuple_element_t<I, Handlers>>;
  using m_t = typename handler_traits<h_t>::message;
  auto& fn = handler_traits<h_t>::fn(std::get<I>(hs));
  if constexpr (std::is_same_v<m_t, any_message>) {
    return fn(any_message(n));
  } else {
    node_owner owner(n);  // frees the node when the handler is done, also on throw
    return fn(std::move(static_cast<typed_node<m_t>*>(n)->value));
  }
}

template <class R, class Handlers, std::size_t... I>
R dispatch(Handlers& hs, matched m, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    (void)((m.handler == static_cast<int>(I) ? (invoke_handler<I>(hs, m.node), true) : false) || ...);
  } else {
    alignas(R) unsigned char storage[sizeof(R)];
    R* out = nullptr;
    (void)((m.handler == static_cast<int>(I) ? (out = ::new (storage) R(invoke_handler<I>(hs, m.node)), true)
                                             : false) ||
           ...);
    struct destroy_out {
      R* p;
      ~destroy_out() { p->~R(); }
    } guard{out};
    return std::move(*out);
  }
}

template <class Handlers, std::size_t... I>
matched receive_with(Handlers& hs, std::int64_t timeout_ns, std::index_sequence<I...>) {
  return receive_node(&matcher<Handlers, std::index_sequence<I...>>::match, &hs, timeout_ns);
}
}  // namespace detail

// A guarded handler: matches a message of the handler's type for which guard(message) is true.
template <class G, class F>
detail::guarded<std::decay_t<G>, std::decay_t<F>> when(G&& guard, F&& handler) {
  return {std::forward<G>(guard), std::forward<F>(handler)};
}

// The timeout clause of receive: runs `handler` if nothing matched within `timeout` (measured from
// the call to receive). Zero or negative polls; a timeout too long to represent (milliseconds::max(),
// grove::forever) waits for ever (grove/duration.hpp).
template <class Rep, class Period, class F>
detail::after_clause<std::decay_t<F>> after(std::chrono::duration<Rep, Period> timeout, F&& handler) {
  return {detail::timeout_ns(timeout), std::forward<F>(handler)};
}
template <class Rep, class Period>
auto after(std::chrono::duration<Rep, Period> timeout) {
  return after(timeout, [] {});
}

// See the file comment. Call from a process or a scoped_process. A misuse stops at one
// static_assert that names it (detail/message_checks.hpp): a generic, argument-less or
// multi-argument handler, a non-callable, a bad guard, an after clause not last, results with no
// common type.
template <class... H>
auto receive(H&&... handlers) {
  constexpr std::size_t n = sizeof...(H);
  constexpr auto problem = detail::first_problem<std::decay_t<H>...>();
  if constexpr (n == 0) {
    static_assert(n > 0, "grove::receive needs at least one clause");
    return;
  } else if constexpr (problem != detail::clause_problem::none) {
    (void)detail::report_clause_problem<problem>();
    return;
  } else if constexpr (!detail::results_check<typename detail::clause_result<std::decay_t<H>>::type...>::ok) {
    (void)detail::results_check<typename detail::clause_result<std::decay_t<H>>::type...>::report();
    return;
  } else {
    using R = typename detail::results_check<typename detail::clause_result<std::decay_t<H>>::type...>::type;
    auto all = std::forward_as_tuple(handlers...);
    if constexpr (detail::is_after<std::decay_t<std::tuple_element_t<n - 1, std::tuple<H...>>>>) {
      auto message_handlers = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::tie(std::get<I>(all)...);
      }(std::make_index_sequence<n - 1>{});
      auto& timeout = std::get<n - 1>(all);
      using handlers_t = decltype(message_handlers);
      using seq = std::make_index_sequence<n - 1>;
      detail::matched m = detail::receive_with(message_handlers, timeout.timeout_ns, seq{});
      if (!m.node) {
        if constexpr (std::is_void_v<R>) {
          timeout.handler();
          return;
        } else {
          return static_cast<R>(timeout.handler());
        }
      }
      return detail::dispatch<R, handlers_t>(message_handlers, m, seq{});
    } else {
      using handlers_t = decltype(all);
      using seq = std::make_index_sequence<n>;
      detail::matched m = detail::receive_with(all, detail::wait_forever, seq{});
      return detail::dispatch<R, handlers_t>(all, m, seq{});
    }
  }
}

}  // namespace grove

GROVE_PUBLIC_END
