// grove/dist/messages.hpp: which C++ values cross nodes, and as which terms.
//
// A message to a remote pid is turned into a term by the sender, a message from another node into a
// C++ value at arrival. Built in, both ways where it makes sense:
//   grove::term            itself
//   std::string            a binary (<<"text">>); arrives as a term (binaries are terms)
//   integers, double, bool integers, floats, the atoms true and false
//   grove::pid, grove::atom
//   grove::down            {'DOWN', Ref, process, Pid | {Name, Node}, Reason}
//   grove::exit_signal     {'EXIT', Pid, Reason}
// Anything else arrives as a grove::term, unless a type is registered for its shape:
//
//   struct order { std::int64_t id; std::string item; };
//   grove::dist::register_message<order>("order",                      // {order, Id, Item}
//       [](const order& o) { return grove::term::tuple({grove::atom("order"), o.id, grove::term::binary(o.item)}); },
//       [](const grove::term& t) -> std::optional<order> {
//         if (!t.is_record("order", 3) || !t[1].is_integer() || !t[2].is_binary()) return std::nullopt;
//         return order{t[1].as_int(), std::string(t[2].as_binary())};
//       });
//
// Then grove::send(remote_pid, order{...}) sends {order, 1, <<"tea">>}, and a tuple {order, ...}
// from any node arrives as an `order` if the decoder accepts it (as a grove::term if it refuses:
// nothing is lost). Register at start-up, before messages flow; registration is thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/message.hpp>
#include <grove/term.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::dist {

// Exit reasons on the wire. normal, shutdown, kill, killed and noproc are their atoms; a user reason
// whose payload is a grove::term is that term (so a reason from another node comes back unchanged),
// another user reason its name as an atom; an exception {exception, <<What>>}; max_heap_size
// {max_heap_size, <<Detail>>}. Back: those atoms are the built-in reasons, any other term a user
// reason named after it (an atom's name, a tuple's first atom, else its text) with the term as its
// payload: exit_reason::payload<grove::term>().
term to_term(const exit_reason& reason);
exit_reason to_exit_reason(const term& reason);

// The reference another node knows a monitor or an alias of this node by (a Grove process that
// forwards {'DOWN', Ref, ...} to an Erlang process uses it).
term to_term(const monitor_ref& ref);
term to_term(const alias& a);
// {'DOWN', Ref, process, Pid | {Name, Node}, Reason} and {'EXIT', Pid, Reason}.
term to_term(const down& d);
term to_term(const exit_signal& e);

// Sends to an alias given as a reference: one of an Erlang process (alias/0, or the alias of a
// monitor made with {alias, ...}: what OTP 24's gen_server:call replies to) or of a Grove one
// (to_term(alias)). Dropped if the alias is not active when it arrives.
template <class T>
void send_to_alias(const term& alias_reference, T&& msg);

namespace detail {
using to_term_fn = std::function<term(const grove::detail::message_node*)>;
using from_term_fn = std::function<grove::detail::message_node*(const term&)>;  // nullptr: not this type
void add_message_type(const grove::detail::message_type* type, std::string_view tag, to_term_fn to, from_term_fn from);
void send_node_to_alias(const term& alias_reference, grove::detail::message_node* n);
}  // namespace detail

// Registers T: `to` makes its term, `from` reads one whose first element is the atom `tag` (nullopt:
// not a T). Throws grove::error(errc::bad_argument) for an empty tag or a T registered already.
template <class T, class To, class From>
void register_message(std::string_view tag, To to, From from) {
  detail::add_message_type(
      grove::detail::type_id<T>(), tag,
      [to](const grove::detail::message_node* n) { return to(static_cast<const grove::detail::typed_node<T>*>(n)->value); },
      [from](const term& t) -> grove::detail::message_node* {
        std::optional<T> v = from(t);
        return v ? grove::detail::make_node<T>(std::move(*v)) : nullptr;
      });
}

template <class T>
void send_to_alias(const term& alias_reference, T&& msg) {
  detail::send_node_to_alias(alias_reference, grove::detail::make_message(std::forward<T>(msg)));
}

}  // namespace grove::dist

GROVE_PUBLIC_END
