// signal_nodes.hpp: the signals a process can receive, as mailbox nodes.
//
// A signal is a message_node whose type descriptor is marked `is_signal` (grove/detail/message_node.hpp),
// so it travels in the same queue as the messages from the same sender and arrives in send order.
// The receiver acts on it itself (signal_handling.cpp); receive never matches one. The kinds:
//   link{from}            add `from` to the receiver's links
//   unlink{from}          remove it
//   monitor{from, ref}    remember that `from` monitors the receiver under `ref`
//   demonitor{from, ref}  forget it
//   down{from, ref, why}  a process the receiver monitors under `ref` has exited
//   exit{from, why, link} an exit signal, sent directly or through a link
//   info{request}         answer process_info (introspection.cpp)
//   alias{id, message}    a message sent to one of the receiver's aliases
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include <grove/detail/message_node.hpp>
#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>

namespace grove::internal {

using detail::message_node;

struct info_request;  // introspection.hpp

struct link_signal { pid from; };
struct unlink_signal { pid from; };
struct exit_signal_node { pid from; exit_reason reason; bool via_link; };
struct monitor_signal { pid from; std::uint64_t ref; };
struct demonitor_signal { pid from; std::uint64_t ref; };
struct down_signal { pid from; std::uint64_t ref; exit_reason reason; };
struct info_signal { std::shared_ptr<info_request> request; };
struct alias_delivery {  // a message sent to an alias; owns `message` until delivered or dropped
  std::uint64_t alias;
  message_node* message;
  alias_delivery(std::uint64_t a, message_node* m) : alias(a), message(m) {}
  alias_delivery(alias_delivery&& o) noexcept : alias(o.alias), message(std::exchange(o.message, nullptr)) {}
  ~alias_delivery() {
    if (message) detail::destroy_node(message);
  }
};

template <class T>
inline constexpr detail::message_type signal_type{&detail::type_name_of<T>, &detail::destroy_typed<T>, true};

// A new signal node of kind T. Throws std::bad_alloc.
template <class T, class... A>
message_node* make_signal(A&&... a) {
  message_node* n = detail::make_node<T>(T{std::forward<A>(a)...});
  n->type = &signal_type<T>;
  return n;
}

// The signal's value if n is a signal of kind T, else nullptr.
template <class T>
T* signal_as(message_node* n) noexcept {
  return n->type == &signal_type<T> ? &static_cast<detail::typed_node<T>*>(n)->value : nullptr;
}

}  // namespace grove::internal
