// node.cpp: a Grove runtime as a node of an Erlang cluster (grove/dist/node.hpp).
//
// ## What runs
//   - net_kernel: a process registered as "net_kernel", as on every Erlang node: it answers
//     net_adm:ping's {is_auth, Node} call, and starts a connector for each connection the router
//     opens (the router runs inside senders' runtime calls, where it may not spawn or park).
//   - acceptor: accepts connections from other nodes and hands each socket to a handshake process.
//   - per handshake: a process that runs the protocol's steps (handshake.cpp) with
//     node_options::setup_timeout on every read, so a peer that stalls or lies ties up nothing else.
//   - per connection: a writer and a reader (connection.cpp).
// The EPMD registration is a socket held open for the node's life; closing it unregisters the name.
//
// ## The router (grove/remote.hpp)
// The runtime calls it for everything addressed to a remote pid, in the sender's thread: it turns
// the message or signal into a frame (the sender pays for encoding, in parallel with other senders),
// records what a lost connection must answer (links and monitors, connection.cpp), and queues the
// frame on the node's connection, opening one if there is none (connect on first use, as Erlang).
// It never blocks, parks or throws: a message with no term form, or past max_frame_bytes, is
// reported and dropped; out of memory drops what it was building.
//
// ## Connecting, and simultaneous connects (erl_dist_protocol, "Distribution Handshake")
// A connection is in the node's table from its first use, first `connecting` (frames queue), then
// `up`, and leaves it when it goes down. Exactly one process may establish a connecting connection,
// its attempt's owner: the connector for an attempt of ours, the handshake process for one of the
// peer's. When both nodes connect at once, each acceptor sees a connecting connection to the other:
// the node whose name is greater (compared as bytes, as OTP) wins, so its acceptor answers
// "ok_simultaneous", kills its own connector and takes the attempt over, while the other answers
// "nok", and its connector, told "nok", leaves the attempt to the incoming handshake (and fails it
// only if none completes within setup_timeout). A node that connects while we hold an up connection
// to it gets "alive"; answered "true" (it restarted, or its old connection's loss has not reached us
// yet), the old connection goes down with noconnection and the new one replaces it.
//
// ## Start and stop
// start: check the name and cookie, listen, register with EPMD (starting `epmd -port P -daemon` if none
// answers and start_epmd is set, as erl does; its creation comes back), install the router, start
// net_kernel and the acceptor. stop: remove the router (waiting out calls in progress), take every
// connection down (noconnection to links and monitors across), end the processes, unregister.
// Rejected: a node object the application owns (a runtime is one node, as in Erlang; a global per
// program keeps dist::send and the router simple), and hidden state in the runtime (the runtime
// knows only the router's interface).
#include <grove/dist/gen_server.hpp>
#include <grove/dist/messages.hpp>
#include <grove/dist/node.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include <grove/introspection.hpp>
#include <grove/process.hpp>
#include <grove/registry.hpp>
#include <grove/scoped_process.hpp>

#include "epmd.hpp"
#include "node_state.hpp"

extern char** environ;

namespace grove::dist::internal {

namespace {

std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::mutex g_lock;
std::shared_ptr<node_state> g_node;  // guarded by g_lock: the running node, if any

std::shared_ptr<node_state> running_node() {
  std::lock_guard<std::mutex> g(g_lock);
  return g_node;
}

const atom& empty_atom() {
  static const atom a("");
  return a;
}

// ---- the connector: an attempt of ours ----

// Fails the attempt if its owner ends without establishing it (a throw, a kill): an attempt without
// a process would stay connecting for ever.
struct attempt_guard {
  connection& conn;
  pid owner;
  attempt_guard(connection& c, pid p) : conn(c), owner(p) {}
  attempt_guard(const attempt_guard&) = delete;
  attempt_guard& operator=(const attempt_guard&) = delete;
  ~attempt_guard() {
    if (conn.current() == connection::state::connecting && conn.attempt_owner() == owner)
      conn.down("the process making the connection ended");
  }
};

void run_connector(std::shared_ptr<node_state> node, std::shared_ptr<connection> conn) {
  const pid me = grove::self();
  if (!conn->claim_attempt(me)) return;  // the peer's own attempt took this connection over first
  attempt_guard guard(*conn, me);
  const auto deadline = std::chrono::steady_clock::now() + node->options.setup_timeout;
  const std::string& peer_name = conn->peer_name();
  const auto at = peer_name.find('@');
  const auto fail = [&](const std::string& why) {
    if (conn->attempt_owner() == me) conn->down(why);
  };
  if (at == std::string::npos || at == 0 || at + 1 == peer_name.size()) {
    fail("not a node name (name@host)");
    return;
  }
  const std::string alive = peer_name.substr(0, at), host = peer_name.substr(at + 1);
  auto addresses = net::resolve(host, node->options.epmd_port, deadline);
  if (!addresses || addresses->empty()) {
    fail(fmt::format("its host {} does not resolve: {}", host, addresses ? "no address" : addresses.error().message()));
    return;
  }
  const net::address epmd_at = addresses->front();
  auto port = port_of(epmd_at, alive, deadline);
  if (!port) {
    fail(port.error() == grove::errc::no_such_name ? fmt::format("EPMD at {} does not know {}", epmd_at.to_string(), alive)
                                                   : fmt::format("EPMD at {}: {}", epmd_at.to_string(), port.error().message()));
    return;
  }
  auto targets = net::resolve(host, *port, deadline);
  if (!targets || targets->empty()) {
    fail(fmt::format("its host {} does not resolve", host));
    return;
  }
  const net::address to = targets->front();
  auto s = net::stream::connect(to, deadline);
  if (!s) {
    fail(fmt::format("connecting to {}: {}", to.to_string(), s.error().message()));
    return;
  }
  s->set_nodelay(true);
  std::string why;
  const std::string status = send_name_and_receive_status(*s, node->me, deadline, why);
  if (status.empty()) {
    fail(why);
    return;
  }
  if (status == "nok") {
    // Its attempt to us wins (its name is greater): its handshake takes this connection over. Wait
    // to be killed by it, or fail the attempt if none completes in time.
    grove::receive(grove::after(node->options.setup_timeout, [] {}));
    fail("a simultaneous connect whose other half never came");
    return;
  }
  if (status == "alive") {
    // It holds a connection from an earlier us: that one is gone.
    if (!answer_alive(*s, true, deadline, why)) {
      fail(why);
      return;
    }
  } else if (status != "ok" && status != "ok_simultaneous") {
    fail(fmt::format("the peer refused: {}", status));
    return;
  }
  peer them;
  if (!complete_as_initiator(*s, node->me, peer_name, them, deadline, why)) {
    fail(why);
    return;
  }
  conn->establish(std::make_shared<net::stream>(std::move(*s)), them, me);
}

// ---- a handshake: an attempt of the peer's ----

void run_incoming_handshake(std::shared_ptr<node_state> node, std::shared_ptr<net::stream> s) {
  const pid me = grove::self();
  const auto deadline = std::chrono::steady_clock::now() + node->options.setup_timeout;
  std::string why;
  peer them;
  if (!receive_name(*s, them, deadline, why)) {
    report(log_level::warning, fmt::format("grove::dist: {} refused a connection: {}", node->me.name, why));
    return;
  }
  auto [status, conn] = node->accept_decision(them.name, me);
  std::optional<attempt_guard> guard;
  if (conn) guard.emplace(*conn, me);
  if (!send_status(*s, status, deadline, why)) {
    if (conn) conn->down(why);
    return;
  }
  if (status == "alive") {
    bool go_on = false;
    if (!receive_alive_answer(*s, go_on, deadline, why) || !go_on) return;
    conn = node->replace(them.name, me);
    if (conn) guard.emplace(*conn, me);
  }
  if (!conn) return;  // "nok", "not_allowed": nothing more to say
  if (!complete_as_acceptor(*s, node->me, them, deadline, why)) {
    report(log_level::warning, fmt::format("grove::dist: {} refused {}: {}", node->me.name, them.name, why));
    if (conn->attempt_owner() == me) conn->down(why);
    return;
  }
  conn->establish(std::move(s), them, me);
}

// ---- net_kernel ----

void run_net_kernel(std::shared_ptr<node_state> node) {
  static const atom is_auth("is_auth"), yes("yes");
  for (;;) {
    grove::receive(
        [&](connect_request r) {
          auto conn = r.conn;
          grove::spawn([node, conn] { run_connector(node, conn); });
        },
        [&](term t) {
          if (auto call = as_call(t)) {
            if (call->first.is_tuple(2) && call->first[0] == term(is_auth)) reply(call->second, term(yes));
          }
        },
        [](any_message) {});
  }
}

void run_acceptor(std::shared_ptr<node_state> node, net::listener l) {
  for (;;) {
    auto s = l.accept();
    if (!s) {
      // EMFILE and its kind: the connection waits in the backlog; try again shortly.
      grove::receive(grove::after(std::chrono::milliseconds(100), [] {}));
      continue;
    }
    s->set_nodelay(true);
    auto shared = std::make_shared<net::stream>(std::move(*s));
    try {
      grove::spawn([node, shared] { run_incoming_handshake(node, shared); });
    } catch (const std::exception& e) {
      report(log_level::error, fmt::format("grove::dist: could not start a handshake: {}", e.what()));
    }
  }
}

// ---- start's pieces ----

std::string short_host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h(buf);
  return h.substr(0, h.find('.'));
}

std::string read_cookie_file() {
  const char* home = std::getenv("HOME");
  if (!home) return {};
  std::ifstream in(std::string(home) + "/.erlang.cookie");
  std::string cookie;
  std::getline(in, cookie);
  while (!cookie.empty() && (cookie.back() == '\n' || cookie.back() == '\r' || cookie.back() == ' ')) cookie.pop_back();
  return cookie;
}

bool valid_alive(std::string_view alive) {
  if (alive.empty() || alive.size() > 255) return false;
  for (char c : alive)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// `epmd -port P -daemon`, as erl starts it: waits for the command, which returns once the daemon
// has forked, before it listens (epmd.c binds in the forked child), so the caller retries.
bool start_epmd_daemon(std::uint16_t port) {
  const std::string port_text = std::to_string(port);
  const char* argv[] = {"epmd", "-port", port_text.c_str(), "-daemon", nullptr};
  ::pid_t child = 0;
  if (::posix_spawnp(&child, "epmd", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0) return false;
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

// ---- node_state ----

node_state::node_state(node_options o, identity m, std::string a, std::string h)
    : options(std::move(o)), me(std::move(m)), alive(std::move(a)), host(std::move(h)) {}

std::shared_ptr<connection> node_state::find(std::uint32_t slot) const {
  std::shared_lock<std::shared_mutex> g(table_lock_);
  auto it = table_.find(slot);
  return it == table_.end() ? nullptr : it->second;
}

std::shared_ptr<connection> node_state::find_or_connect(std::uint32_t slot) noexcept {
  std::shared_ptr<connection> made;
  try {
    if (auto c = find(slot)) {
      // An attempt that should have ended long ago (its connector never started, or hangs past
      // its deadline) goes, and this send starts a new one.
      const auto limit = static_cast<std::uint64_t>(std::chrono::nanoseconds(2 * options.setup_timeout).count()) + 1'000'000'000;
      if (c->current() != connection::state::connecting || steady_ns() - c->created_ns() < limit) return c;
      c->down("the connection attempt outlived twice setup_timeout");
    }
    {
      std::unique_lock<std::shared_mutex> g(table_lock_);
      if (stopping_) return nullptr;
      if (auto it = table_.find(slot); it != table_.end()) return it->second;
      made = std::make_shared<connection>(shared_from_this(), slot, remote::node_name(slot));
      table_.emplace(slot, made);
    }
    remote::deliver_message(net_kernel, grove::detail::make_node<connect_request>(connect_request{made}));
    return made;
  } catch (...) {
    if (made) made->down("out of memory starting the connection");  // and it leaves the table
    return nullptr;  // the node cannot be reached now
  }
}

std::pair<std::string, std::shared_ptr<connection>> node_state::accept_decision(const std::string& peer_name, pid handshake) {
  const std::uint32_t slot = remote::node_slot(peer_name);
  pid connector_to_stop;
  std::pair<std::string, std::shared_ptr<connection>> out;
  {
    std::unique_lock<std::shared_mutex> g(table_lock_);
    if (stopping_ || peer_name == me.name) return {"not_allowed", nullptr};
    auto it = table_.find(slot);
    if (it == table_.end()) {
      auto c = std::make_shared<connection>(shared_from_this(), slot, peer_name);
      c->set_attempt_owner(handshake);
      table_.emplace(slot, c);
      return {"ok", c};
    }
    auto& c = it->second;
    switch (c->current()) {
      case connection::state::up: return {"alive", nullptr};
      case connection::state::closed: return {"not_allowed", nullptr};  // leaving the table now
      case connection::state::connecting:
        if (peer_name > me.name) {  // theirs wins: ours stops, this handshake takes the attempt over
          connector_to_stop = c->attempt_owner();
          c->set_attempt_owner(handshake);
          out = {"ok_simultaneous", c};
        } else {
          out = {"nok", nullptr};
        }
    }
  }
  if (!connector_to_stop.is_null() && connector_to_stop != handshake)
    remote::deliver_exit(connector_to_stop, pid(), exit_reason::kill(), false);
  return out;
}

std::shared_ptr<connection> node_state::replace(const std::string& peer_name, pid handshake) {
  const std::uint32_t slot = remote::node_slot(peer_name);
  if (auto old = find(slot)) old->down("the peer connected again (it restarted, or its side of this connection is gone)");
  std::unique_lock<std::shared_mutex> g(table_lock_);
  if (stopping_ || table_.count(slot)) return nullptr;
  auto c = std::make_shared<connection>(shared_from_this(), slot, peer_name);
  c->set_attempt_owner(handshake);
  table_.emplace(slot, c);
  return c;
}

void node_state::forget(const connection* c) noexcept {
  std::unique_lock<std::shared_mutex> g(table_lock_);
  auto it = table_.find(c->slot());
  if (it != table_.end() && it->second.get() == c) table_.erase(it);
}

std::vector<std::shared_ptr<connection>> node_state::all() const {
  std::shared_lock<std::shared_mutex> g(table_lock_);
  std::vector<std::shared_ptr<connection>> out;
  for (auto& [slot, c] : table_) out.push_back(c);
  return out;
}

void node_state::stop_all(const std::string& reason) noexcept {
  std::vector<std::shared_ptr<connection>> conns;
  {
    std::unique_lock<std::shared_mutex> g(table_lock_);
    stopping_ = true;
    for (auto& [slot, c] : table_) conns.push_back(c);
  }
  for (auto& c : conns) c->down(reason);
}

void node_state::transmit(connection& c, std::initializer_list<term> control, const term* payload) const {
  // The calling thread's buffers: frames are built without an allocation each (no park happens
  // between building and queueing, so the buffers are this call's). The atoms' list is 6 KB: on
  // the sender's stack it would not leave room for the sender's own frames in the smallest stack a
  // runtime allows (16 KiB; tests/dist/interop_test.cpp, "the smallest stack").
  thread_local std::string scratch;
  thread_local frame_atoms refs;
  scratch.clear();
  if (c.uses_atom_cache()) {
    refs.clear();
    append_frame_body(scratch, control, payload, ctx, refs, options.max_frame_bytes);
    c.enqueue(refs, scratch);
  } else {
    append_frame(scratch, control, payload, ctx, options.max_frame_bytes);
    c.enqueue(scratch);
  }
  if (scratch.capacity() > (std::size_t{1} << 20)) std::string().swap(scratch);  // after a large message
}

// ---- remote::router ----

void node_state::send(pid from, pid to, grove::detail::message_node* message) noexcept {
  grove::detail::node_owner owner(message);
  try {
    if (to.node() == ctx.node_slot) return;  // a process of an earlier incarnation of this node: gone
    std::optional<term> msg = wire_term(message);
    if (!msg) return;
    if (auto c = find_or_connect(to.node())) {
      if (from.is_null()) {
        transmit(*c, {op::send, term(empty_atom()), term(to)}, &*msg);
      } else {
        transmit(*c, {op::send_sender, term(from), term(to)}, &*msg);
      }
    }
  } catch (const error& e) {
    try {
      report(log_level::error, fmt::format("grove::dist: a message from {} to {} dropped: {}", from, to, e.what()));
    } catch (...) {
    }
  } catch (...) {
    // Out of memory: the message is lost, as one to an unreachable node.
  }
}

void node_state::link(pid from, pid to) noexcept {
  try {
    if (to.node() == ctx.node_slot) {
      remote::deliver_exit(from, to, exit_reason::noproc(), true);
      return;
    }
    auto c = find_or_connect(to.node());
    if (!c || !c->record_link(from, to)) {
      remote::deliver_exit(from, to, remote::noconnection(), true);
      return;
    }
    transmit(*c, {op::link, term(from), term(to)});
  } catch (...) {
  }
}

void node_state::unlink(pid from, pid to) noexcept {
  try {
    if (auto c = find(to.node()))
      if (auto id = c->start_unlink(from, to)) transmit(*c, {op::unlink_id, term(*id), term(from), term(to)});
  } catch (...) {
  }
}

void node_state::exit(pid from, pid to, const exit_reason& reason, bool via_link) noexcept {
  try {
    if (to.node() == ctx.node_slot) return;
    const term why = to_term(reason);
    const pid sender = from.is_null() ? net_kernel : from;
    if (via_link) {
      auto c = find(to.node());
      if (!c) return;  // the link went with its connection
      c->forget_link(from, to);
      transmit(*c, {op::payload_exit, term(sender), term(to)}, &why);
    } else if (auto c = find_or_connect(to.node())) {
      transmit(*c, {op::payload_exit2, term(sender), term(to)}, &why);
    }
  } catch (...) {
  }
}

void node_state::monitor(pid watcher, pid target, std::uint64_t ref, std::string_view name) noexcept {
  try {
    if (target.node() == ctx.node_slot) {
      remote::deliver_down(watcher, target, ref, exit_reason::noproc());
      return;
    }
    auto c = find_or_connect(target.node());
    if (!c || !c->record_outgoing_monitor(ref, {watcher, target, std::string(name)})) {
      remote::deliver_down(watcher, target, ref, remote::noconnection());
      return;
    }
    const term what = name.empty() ? term(target) : term(atom(name));
    transmit(*c, {op::monitor_p, term(watcher), what, term(monitor_reference(ref))});
  } catch (...) {
  }
}

void node_state::demonitor(pid watcher, pid target, std::uint64_t ref) noexcept {
  try {
    if (auto c = find(target.node()))
      if (auto m = c->take_outgoing_monitor(ref)) {
        const term what = m->name.empty() ? term(target) : term(atom(m->name));
        transmit(*c, {op::demonitor_p, term(watcher), what, term(monitor_reference(ref))});
      }
  } catch (...) {
  }
}

void node_state::down(pid from, pid watcher, std::uint64_t ref, const exit_reason& reason) noexcept {
  (void)from;
  try {
    if (auto c = find(watcher.node()))
      if (auto m = c->take_incoming_monitor(ref)) {
        const term why = to_term(reason);
        transmit(*c, {op::payload_monitor_p_exit, m->monitored_as, term(watcher), m->reference}, &why);
      }
  } catch (...) {
  }
}

std::shared_ptr<remote::send_gate> node_state::busy(pid to) noexcept { return busy_slot(to.node()); }

std::shared_ptr<remote::send_gate> node_state::busy_slot(std::uint32_t slot) noexcept {
  if (!remote::sender_may_wait()) return nullptr;  // a foreign thread, or a process that must not park now
  try {
    if (auto c = find(slot)) return c->gate_if_busy(options.busy_limit_bytes);
  } catch (...) {
  }
  return nullptr;
}

void node_state::send_to_name(pid from, std::uint32_t node_slot, std::string_view name, grove::detail::message_node* n) noexcept {
  grove::detail::node_owner owner(n);
  try {
    std::optional<term> msg = wire_term(n);
    if (!msg) return;
    if (auto c = find_or_connect(node_slot))
      transmit(*c, {op::reg_send, term(from.is_null() ? net_kernel : from), term(empty_atom()), term(atom(name))}, &*msg);
  } catch (const error& e) {
    try {
      report(log_level::error, fmt::format("grove::dist: a message to {{{}, {}}} dropped: {}", name, remote::node_name(node_slot), e.what()));
    } catch (...) {
    }
  } catch (...) {
  }
}

void node_state::send_to_alias(pid from, const term& reference, grove::detail::message_node* n) noexcept {
  grove::detail::node_owner owner(n);
  try {
    std::optional<term> msg = wire_term(n);
    if (!msg) return;
    if (auto c = find_or_connect(reference.as_reference().node))
      transmit(*c, {op::alias_send, term(from.is_null() ? net_kernel : from), reference}, &*msg);
  } catch (const error& e) {
    try {
      report(log_level::error, fmt::format("grove::dist: a message to alias {} dropped: {}", reference.to_string(100), e.what()));
    } catch (...) {
    }
  } catch (...) {
  }
}

}  // namespace grove::dist::internal

namespace grove::dist {

using namespace grove::dist::internal;

void start(node_options options) {
  if (options.name.empty()) throw error(errc::bad_argument, "dist::start: a node needs a name");
  if (options.name.find('@') == std::string::npos) options.name += "@" + short_host_name();
  const auto at = options.name.find('@');
  const std::string alive = options.name.substr(0, at), host = options.name.substr(at + 1);
  if (!valid_alive(alive) || host.empty() || options.name.size() > 255)
    throw error(errc::bad_argument, fmt::format("dist::start: {} is not a node name (name@host; name of letters, digits, _ and -)", options.name));
  if (options.cookie.empty()) options.cookie = read_cookie_file();
  if (options.cookie.empty())
    throw error(errc::bad_argument, "dist::start: no cookie (node_options::cookie, or ~/.erlang.cookie)");
  if (options.net_ticktime < std::chrono::milliseconds(1000))
    throw error(errc::bad_argument, "dist::start: net_ticktime under a second");
  {
    std::lock_guard<std::mutex> g(g_lock);
    if (g_node) {
      if (remote::this_node() == g_node->me.name)
        throw error(errc::already_running, fmt::format("dist::start: this runtime is node {} already", g_node->me.name));
      g_node.reset();  // left over from a runtime that stopped without dist::stop()
    }
  }
  auto listen_at = net::address::parse(options.listen_address.find(':') == std::string::npos
                                           ? fmt::format("{}:{}", options.listen_address, options.port)
                                           : fmt::format("[{}]:{}", options.listen_address, options.port));
  if (!listen_at) throw error(errc::bad_argument, fmt::format("dist::start: listen_address {} is not an address", options.listen_address));
  auto listener = net::listener::listen(*listen_at);
  if (!listener) throw std::system_error(listener.error(), fmt::format("dist::start: listening on {}", listen_at->to_string()));
  const std::uint16_t port = listener->local_address().value().port();
  const auto deadline = std::chrono::steady_clock::now() + options.setup_timeout;
  const net::address epmd_at = net::address::loopback(options.epmd_port);
  auto reg = register_node(epmd_at, alive, port, options.hidden, deadline);
  if (!reg && reg.error() == std::errc::connection_refused && options.start_epmd && start_epmd_daemon(options.epmd_port)) {
    // The daemon listens a few milliseconds after `epmd -daemon` returns (and when several nodes
    // start at once, the one epmd that wins the port does): ask again until it answers or the
    // setup deadline passes, 5 ms apart at first, at most 100 ms.
    auto pause = std::chrono::milliseconds(5);
    while (!reg && reg.error() == std::errc::connection_refused && std::chrono::steady_clock::now() + pause < deadline) {
      grove::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(100));
      reg = register_node(epmd_at, alive, port, options.hidden, deadline);
    }
  }
  if (!reg) {
    if (reg.error() == errc::name_taken)
      throw std::system_error(reg.error(), fmt::format("dist::start: EPMD has a node named {} on this host already", alive));
    throw std::system_error(reg.error(), fmt::format("dist::start: registering with EPMD at {}", epmd_at.to_string()));
  }
  identity me{options.name, dflag::offered | (options.hidden ? 0 : dflag::published), reg->creation, options.cookie};
  auto node = std::make_shared<node_state>(options, me, alive, host);
  node->ctx.node_name = options.name;
  node->ctx.node_slot = remote::node_slot(options.name);
  node->ctx.creation = reg->creation;
  node->ctx.max_depth = depth_for_stack(grove::system_info().stack_bytes);  // what the reader's stack allows
  node->epmd.emplace(std::move(reg->connection));
  node->net_kernel = grove::spawn([node] { run_net_kernel(node); });
  if (auto e = grove::try_register_name("net_kernel", node->net_kernel)) {
    grove::exit(node->net_kernel, exit_reason::kill());
    throw std::system_error(e, "dist::start: the name net_kernel is taken in this runtime");
  }
  remote::set_router(node.get(), options.name, reg->creation);
  node->acceptor = grove::spawn([node, l = std::move(*listener)]() mutable { run_acceptor(node, std::move(l)); });
  {
    std::lock_guard<std::mutex> g(g_lock);
    g_node = node;
  }
  report(log_level::info, fmt::format("grove::dist: node {} started (port {}, creation {})", options.name, port, reg->creation));
}

void stop() {
  std::shared_ptr<node_state> node;
  {
    std::lock_guard<std::mutex> g(g_lock);
    node.swap(g_node);
  }
  if (!node) return;
  remote::set_router(nullptr);  // waits out router calls in progress
  node->stop_all("this node stopped");
  for (pid p : {node->acceptor, node->net_kernel}) {
    const monitor_ref m = grove::monitor(p);
    grove::exit(p, exit_reason::kill());
    grove::receive(grove::when([&](const down& d) { return d.ref == m; }, [](down) {}));
  }
  if (node->epmd) node->epmd->close();  // EPMD forgets the name
  report(log_level::info, fmt::format("grove::dist: node {} stopped", node->me.name));
}

bool is_alive() noexcept { return running_node() != nullptr; }

std::string node_name() {
  auto node = running_node();
  return node ? node->me.name : std::string(local_node_name);
}

std::uint32_t creation() {
  auto node = running_node();
  return node ? node->me.creation : 0;
}

std::vector<std::string> nodes() {
  std::vector<std::string> out;
  if (auto node = running_node())
    for (auto& c : node->all())
      if (c->current() == connection::state::up) out.push_back(c->peer_name());
  return out;
}

bool connect(std::string_view name) {
  auto node = running_node();
  if (!node) return false;
  if (name == node->me.name) return true;
  auto c = node->find_or_connect(remote::node_slot(name));
  if (!c) return false;
  switch (c->add_waiter(grove::self())) {
    case connection::state::up: return true;
    case connection::state::closed: return false;
    case connection::state::connecting: break;
  }
  const std::uint64_t attempt = c->id();
  // The attempt may outlast this wait (a simultaneous connect's other half): then its answer comes
  // later, to nobody who waits for it, and is dropped here as unmatched mail would not be.
  const bool up = grove::receive(grove::when([attempt](const connection_settled& s) { return s.attempt == attempt; },
                                             [](connection_settled s) { return s.up; }),
                                 grove::after(node->options.setup_timeout + std::chrono::seconds(1), [] { return false; }));
  while (grove::receive([](connection_settled) { return true; }, grove::after(std::chrono::milliseconds(0), [] { return false; }))) {
  }
  return up;
}

bool ping(std::string_view name) {
  if (!connect(name)) return false;
  static const atom is_auth("is_auth"), yes("yes");
  auto r = call(server_name{"net_kernel", std::string(name)}, term::tuple({term(is_auth), term(atom(node_name()))}),
                std::chrono::duration_cast<std::chrono::milliseconds>(running_node() ? running_node()->options.setup_timeout
                                                                                     : std::chrono::seconds(7)));
  return r && *r == term(yes);
}

bool disconnect(std::string_view name) {
  auto node = running_node();
  if (!node) return false;
  auto c = node->find(remote::node_slot(name));
  if (!c || c->current() == connection::state::closed) return false;
  c->down("disconnect()");
  return true;
}

namespace detail {

void send_node_to_name(std::string_view name, std::string_view node_name_, grove::detail::message_node* n) {
  grove::detail::node_owner owner(n);  // freed if node_slot throws (an empty or oversized node name)
  auto node = running_node();
  if (!node || node_name_ == node->me.name || node_name_ == local_node_name) {
    grove::detail::send_node_to_name(name, owner.release());  // on this node: dropped if nobody holds the name
    return;
  }
  const std::uint32_t slot = remote::node_slot(node_name_);
  node->send_to_name(grove::self(), slot, name, owner.release());
  if (auto gate = node->busy_slot(slot)) {
    node.reset();  // the gate holds what it needs
    gate->wait();
  }
}

void send_node_to_alias(const term& alias_reference, grove::detail::message_node* n) {
  if (!alias_reference.is_reference()) {
    grove::detail::destroy_node(n);
    throw error(errc::bad_argument, "dist::send_to_alias: not a reference");
  }
  const grove::reference& r = alias_reference.as_reference();
  if (r.node == 0) {
    if (auto a = alias_of(r)) {
      grove::detail::send_node_to_alias(*a, n);
    } else {
      grove::detail::destroy_node(n);  // not an alias of this node
    }
    return;
  }
  auto node = running_node();
  if (!node) {
    grove::detail::destroy_node(n);
    return;
  }
  node->send_to_alias(grove::self(), alias_reference, n);
  if (auto gate = node->busy_slot(r.node)) {
    node.reset();  // the gate holds what it needs
    gate->wait();
  }
}

}  // namespace detail

}  // namespace grove::dist
