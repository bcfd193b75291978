// gen_server.cpp: OTP's gen_server protocol on terms (grove/dist/gen_server.hpp).
//
// call is OTP 24's gen:do_call: monitor the server, make an alias, send
// {'$gen_call', {self(), [alias | AliasRef]}, Request}, and take whichever comes first: a message
// {[alias | AliasRef], Reply}, the monitor's down, the timeout. Then unalias and demonitor (with
// flush), so a reply or a down that comes later finds the alias inactive and the monitor gone and is
// dropped at the door. The tag's alias is one of this node's references (messages.cpp: 5 words), so
// an Erlang server's gen:reply sends to it with ALIAS_SEND and it arrives through the same alias a
// Grove server's reply would. A name on another node is monitored by name (OTP's {Name, Node}), so
// an unregistered name answers noproc at once, as gen_server:call's does.
#include <grove/dist/gen_server.hpp>

#include <fmt/format.h>

#include <grove/dist/node.hpp>

#include "node_state.hpp"

namespace grove::dist {

using namespace grove::dist::internal;

namespace {

const atom& gen_call_tag() {
  static const atom a("$gen_call");
  return a;
}
const atom& gen_cast_tag() {
  static const atom a("$gen_cast");
  return a;
}
const atom& alias_tag() {
  static const atom a("alias");
  return a;
}

bool is_local(const server_name& s) { return s.node.empty() || s.node == node_name() || s.node == local_node_name; }

// Sends the request to `target` (a pid, or a name on a node) and waits, as the file comment says.
template <class Send>
services::outcome<term> do_call(const monitor_ref& m, Send&& send_request, const term& request, std::chrono::milliseconds timeout) {
  const alias a = make_alias();
  const term tag = term::list({term(alias_tag())}, to_term(a));
  send_request(term::tuple({term(gen_call_tag()), term::tuple({term(grove::self()), tag}), request}));
  services::outcome<term> r = grove::receive(
      grove::when([&](const term& t) { return t.is_tuple(2) && t[0] == tag; },
                  [](term t) -> services::outcome<term> { return t[1]; }),
      grove::when([&](const down& d) { return d.ref == m; },
                  [](down d) -> services::outcome<term> { return services::failure::from_exit(std::move(d.reason)); }),
      grove::after(timeout, []() -> services::outcome<term> { return grove::errc::timeout; }));
  unalias(a);
  demonitor(m, true);
  return r;
}

}  // namespace

services::outcome<term> call(pid server, const term& request, std::chrono::milliseconds timeout) {
  if (grove::self().is_null()) return grove::errc::not_in_process;
  const monitor_ref m = monitor(server);
  return do_call(m, [&](term msg) { grove::send(server, std::move(msg)); }, request, timeout);
}

services::outcome<term> call(const server_name& server, const term& request, std::chrono::milliseconds timeout) {
  if (grove::self().is_null()) return grove::errc::not_in_process;
  if (is_local(server)) {
    const pid p = grove::whereis(server.name);
    if (p.is_null()) return grove::errc::noproc;
    return call(p, request, timeout);
  }
  const monitor_ref m = monitor(server.name, server.node);
  return do_call(m, [&](term msg) { dist::send(server.name, server.node, std::move(msg)); }, request, timeout);
}

void cast(pid server, const term& request) { grove::send(server, term::tuple({term(gen_cast_tag()), request})); }

void cast(const server_name& server, const term& request) {
  const term msg = term::tuple({term(gen_cast_tag()), request});
  if (is_local(server)) {
    grove::try_send(server.name, msg);
  } else {
    dist::send(server.name, server.node, msg);
  }
}

void reply(const call_from& to, const term& reply) {
  const term msg = term::tuple({to.tag, reply});
  // OTP 24's tag [alias | Alias]: the reply goes to the alias; an older plain tag: to the caller.
  if (to.tag.type() == term::kind::list && to.tag.size() == 1 && to.tag[0] == term(alias_tag()) && to.tag.tail().is_reference()) {
    send_to_alias(to.tag.tail(), msg);
  } else {
    grove::send(to.caller, msg);
  }
}

std::optional<std::pair<term, call_from>> as_call(const term& message) {
  if (!message.is_tuple(3) || message[0] != term(gen_call_tag())) return std::nullopt;
  const term& from = message[1];
  if (!from.is_tuple(2) || !from[0].is_pid()) return std::nullopt;
  return std::pair<term, call_from>{message[2], call_from{from[0].as_pid(), from[1]}};
}

std::optional<term> as_cast(const term& message) {
  if (!message.is_tuple(2) || message[0] != term(gen_cast_tag())) return std::nullopt;
  return message[1];
}

namespace detail {
void name_server(const std::string& name, grove::pid p) {
  if (auto e = grove::try_register_name(name, p)) {
    grove::exit(p, exit_reason::kill());
    throw error(errc::name_taken, fmt::format("dist::start_gen_server: {}: {}", name, e.message()));
  }
}
}  // namespace detail

}  // namespace grove::dist
