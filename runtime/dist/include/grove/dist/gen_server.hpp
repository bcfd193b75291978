// grove/dist/gen_server.hpp: OTP's gen_server protocol on terms, both ways across nodes.
//
//   // Grove calling an Erlang (or Grove) gen_server, as gen_server:call/3:
//   auto r = grove::dist::call({"kv", "app@127.0.0.1"}, grove::term::tuple({grove::atom("get"), 7}), 1s);
//   if (r) use(*r); else if (r.error() == grove::errc::timeout) ...
//
//   // A Grove process Erlang calls with gen_server:call({kv, 'grove@127.0.0.1'}, {get, 7}):
//   struct kv {
//     std::map<grove::term, grove::term> data;
//     grove::term handle_call(const grove::term& req, const grove::dist::call_from&) { ... return reply; }
//     void handle_cast(const grove::term& msg) { ... }           // optional: gen_server:cast
//     void handle_info(const grove::term& msg) { ... }           // optional: any other term
//   };
//   grove::pid p = grove::dist::start_gen_server<kv>({.name = "kv"});
//
// call's semantics are OTP 24's gen:call: the caller monitors the server and sends
// {'$gen_call', {self(), [alias | Ref]}, Request}, where Ref is an alias of the caller that the reply
// is sent to; it returns the reply, or after `timeout` errc::timeout (never later), or at once
// errc::noproc for a server that is not there (a dead pid, an unregistered name), or errc::exited with
// the server's exit reason if it dies during the call (noconnection if its node goes away). A reply
// that comes after the caller stopped waiting reaches a deactivated alias and is dropped: it never
// lands in the caller's mailbox. A Grove server answers Erlang's callers the same way (gen:reply:
// to the alias when the tag carries one, else to the caller's pid).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/message.hpp>
#include <grove/pid.hpp>
#include <grove/process.hpp>
#include <grove/registry.hpp>
#include <grove/services/outcome.hpp>
#include <grove/dist/messages.hpp>
#include <grove/term.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::dist {

// A server registered as `name` on `node` (empty: this node): OTP's {Name, Node}.
struct server_name {
  std::string name;
  std::string node;
};

inline constexpr std::chrono::milliseconds default_call_timeout{5000};  // gen_server's

// gen_server:call/3. Needs a calling process (errc::not_in_process otherwise).
services::outcome<term> call(pid server, const term& request, std::chrono::milliseconds timeout = default_call_timeout);
services::outcome<term> call(const server_name& server, const term& request,
                             std::chrono::milliseconds timeout = default_call_timeout);
// gen_server:cast/2: {'$gen_cast', Request}; never fails (dropped if nobody is there).
void cast(pid server, const term& request);
void cast(const server_name& server, const term& request);

// Who made a call: its pid and its tag, as gen_server's From.
struct call_from {
  grove::pid caller;
  term tag;
};
// gen_server:reply/2: replies to a call (from a handler that deferred it, or from anywhere).
void reply(const call_from& to, const term& reply);
// The parts of {'$gen_call', {Pid, Tag}, Request} and {'$gen_cast', Request}, for a hand-written loop.
std::optional<std::pair<term, call_from>> as_call(const term& message);
std::optional<term> as_cast(const term& message);

struct gen_server_options {
  std::string name;  // registered under it if not empty (start_gen_server throws errc::name_taken if taken)
  bool link = false; // linked to the caller, as gen_server:start_link
};

// Starts a process that serves B's handlers one message at a time: handle_call (returning the reply
// term, or std::optional<term>: nullopt replies later through reply()), and optionally handle_cast,
// handle_info (any other term; a down or exit_signal message arrives as its term, {'DOWN', ...} or
// {'EXIT', ...}, as in Erlang) and terminate(const exit_reason&), run when a handler throws (the
// server then exits with that exception). B is made in the new process from `args`. Throws
// grove::error(errc::name_taken) if the name is taken (the process is gone then).
template <class B, class... A>
grove::pid start_gen_server(const gen_server_options& options, A&&... args);

namespace detail {
template <class B>
void serve(B& b, const term& message) {
  if (auto c = as_call(message)) {
    if constexpr (requires { { b.handle_call(c->first, c->second) } -> std::same_as<std::optional<term>>; }) {
      if (auto r = b.handle_call(c->first, c->second)) reply(c->second, *r);
    } else {
      reply(c->second, b.handle_call(c->first, c->second));
    }
  } else if (auto m = as_cast(message)) {
    if constexpr (requires { b.handle_cast(*m); }) b.handle_cast(*m);
  } else {
    if constexpr (requires { b.handle_info(message); }) b.handle_info(message);
  }
}
void name_server(const std::string& name, grove::pid p);
}  // namespace detail

template <class B, class... A>
grove::pid start_gen_server(const gen_server_options& options, A&&... args) {
  auto body = [... args = std::forward<A>(args)]() mutable {
    B b(std::move(args)...);
    for (;;) {
      try {
        grove::receive([&](term m) { detail::serve(b, m); }, [&](down d) { detail::serve(b, to_term(d)); },
                       [&](exit_signal e) { detail::serve(b, to_term(e)); }, [](any_message) {});
      } catch (const std::exception& e) {
        if constexpr (requires(const exit_reason& r) { b.terminate(r); }) b.terminate(grove::detail::exception_reason(e));
        throw;
      }
    }
  };
  const grove::pid p = options.link ? grove::spawn_link(std::move(body)) : grove::spawn(std::move(body));
  if (!options.name.empty()) detail::name_server(options.name, p);
  return p;
}

}  // namespace grove::dist

GROVE_PUBLIC_END
