// grove/dist/node.hpp: this runtime as a node of an Erlang cluster.
//
//   grove::dist::start({.name = "grove@127.0.0.1", .cookie = "secret"});
//   grove::send(erlang_pid, grove::term::tuple({grove::atom("hello"), grove::self()}));
//   grove::dist::send("logger", "app@127.0.0.1", grove::term::binary("started"));   // {logger, 'app@...'} ! ...
//   grove::link(erlang_pid);                    // links, monitors and exit signals work across
//   grove::dist::stop();
//
// A started node speaks the Erlang distribution protocol (OTP 23's handshake, version 6, with the
// flags OTP 25 requires and OTP 26's UNLINK_ID and V4_NC): it registers its name with EPMD, listens,
// and connects to another node on first use, as Erlang does. Erlang and Elixir nodes and other Grove
// nodes see it as an ordinary (published) node: `net_adm:ping('grove@127.0.0.1')` answers pong,
// `{name, 'grove@127.0.0.1'} ! Msg` reaches the process registered as name, gen_server calls work both
// ways (grove/dist/gen_server.hpp).
//
// Across nodes, OTP's semantics hold exactly: links (UNLINK_ID protocol), exit signals with any
// reason, monitors by pid and by name, noproc for a dead remote process, and noconnection to every
// link and monitor over a connection that goes down (the peer closed, or was silent for
// net_ticktime); from one sender to one receiver, messages and signals arrive in send order.
//
// What crosses is a grove::term (grove/term.hpp): a message from another node arrives as one (or as
// a C++ type registered for its shape, grove/dist/messages.hpp), and a message to a remote pid must be
// a term, a registered type, or a built-in one (std::string, integers, floats, bool, pid, atom).
// One that has none is dropped and reported through the logger (log_kind::distribution).
//
// Security: the cookie is checked with the protocol's MD5 challenge both ways; a peer with another
// cookie is refused. A peer that sends a malformed or oversized frame, or something the protocol
// does not allow, loses its connection (with a logged reason); the node and its processes go on. The
// protocol is not encrypted (Erlang's either, without TLS): listen on loopback or a trusted network.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <grove/message.hpp>
#include <grove/term.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::dist {

struct node_options {
  // "name@host", or "name" for name@<this host's short name> (erl -sname). The host part is how
  // other nodes reach this one: an address ("127.0.0.1") or a name they resolve.
  std::string name;
  // The magic cookie. Empty: read ~/.erlang.cookie (as erl does; it is not created if missing).
  std::string cookie;
  // Where to listen for other nodes: an address ("0.0.0.0" for every interface, as erl) and a port
  // (0: the system picks; EPMD tells other nodes which).
  std::string listen_address = "0.0.0.0";
  std::uint16_t port = 0;
  std::uint16_t epmd_port = 4369;
  // Start `epmd -port <epmd_port> -daemon` if no EPMD answers on that port (as erl does), and wait
  // (within setup_timeout) until it does.
  bool start_epmd = true;
  // A hidden node is connected only to the nodes it talks to (a C node's or a remote shell's way).
  bool hidden = false;
  // A connection whose peer has sent nothing for this long is down (net_kernel's net_ticktime; this
  // node ticks every quarter of it when it has nothing else to send).
  std::chrono::milliseconds net_ticktime{60'000};
  // How long connecting to a node may take, EPMD and the handshake included (net_setuptime).
  std::chrono::milliseconds setup_timeout{7'000};
  // A frame from a peer larger than this closes its connection (a guard against a peer that claims
  // a huge frame; Erlang has none). A message of this size or more cannot be sent either.
  std::size_t max_frame_bytes = std::size_t{256} << 20;
  // A process that sends a message to a node whose outgoing queue holds more than this (frames not
  // yet written to its socket) waits until the queue is written out, or the connection goes down:
  // OTP's busy_dist_port at its default dist_buf_busy_limit (erl +zdbbl 1024). Messages are never
  // dropped for it; signals (links, monitors, exits), foreign threads, and a process that is exiting
  // or inside an exit_deferral never wait (they queue). A dist::call's timeout starts once its
  // request is sent, as gen_server:call's does.
  std::size_t busy_limit_bytes = std::size_t{1} << 20;
};

// Makes the running runtime a node: registers with EPMD and starts listening; sends to remote pids
// and connections on first use work from then on. Call from a process or a scoped_process. Throws
// grove::error: errc::bad_argument for a bad name or no cookie, errc::already_running if this
// runtime is a node already; a std::system_error with the cause if EPMD cannot be reached or the
// name is taken there.
void start(node_options options);
// Stops being a node: every connection goes down (links and monitors across get noconnection), the
// name leaves EPMD. Remote pids stay valid values; what is sent to them after is answered as for an
// unreachable node. Call from a process or a scoped_process; a no-op if not a node.
void stop();

bool is_alive() noexcept;   // whether this runtime is a node (Erlang's is_alive/0)
std::string node_name();    // its name, or "nonode@nohost"
std::uint32_t creation();   // its creation (incarnation), 0 if not a node
// The nodes connected now (Erlang's nodes/0; hidden ones included).
std::vector<std::string> nodes();

// Connects to `node` unless connected (net_kernel:connect_node/1): true once connected, false if it
// cannot be reached or refuses (within node_options::setup_timeout). Needs a calling process.
bool connect(std::string_view node);
// net_adm:ping/1: connects and asks the node's net_kernel; true for pong.
bool ping(std::string_view node);
// Takes the connection to `node` down (erlang:disconnect_node/1): links and monitors across get
// noconnection. False if it was not connected.
bool disconnect(std::string_view node);

// {name, node} ! msg: to the process registered as `name` on `node`, which may be this node.
// Dropped if nobody holds the name there (as Erlang's). Needs a started node for another node.
template <class T>
void send(std::string_view name, std::string_view node, T&& msg);

namespace detail {
void send_node_to_name(std::string_view name, std::string_view node, grove::detail::message_node* n);
}

template <class T>
void send(std::string_view name, std::string_view node, T&& msg) {
  detail::send_node_to_name(name, node, grove::detail::make_message(std::forward<T>(msg)));
}

}  // namespace grove::dist

GROVE_PUBLIC_END
