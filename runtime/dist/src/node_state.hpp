// node_state.hpp: a running node and its connections (designs in node.cpp and connection.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <grove/dist/node.hpp>
#include <grove/logger.hpp>
#include <grove/net.hpp>
#include <grove/pid.hpp>
#include <grove/remote.hpp>
#include <grove/term.hpp>

#include "control.hpp"
#include "external_format.hpp"
#include "handshake.hpp"

namespace grove::dist::internal {

class node_state;

// A monitor a local process holds on a remote one (or on a name there).
struct outgoing_monitor {
  pid watcher;      // local
  pid target;       // remote, or remote::name_target(node) for a monitor by name
  std::string name; // the name, for a monitor by name
};

// A monitor a remote process holds on a local one, under a local ref id.
struct incoming_monitor {
  pid target;        // local
  pid watcher;       // remote
  term reference;    // the watcher's reference (its node's)
  term monitored_as; // what the watcher named: the target's pid or its registered name (an atom)
};

// One node we talk to: the connection's state, its outgoing frames, its two processes (a writer and
// a reader, sharing the socket), and what OTP says must be answered if it goes down: the links and
// monitors that cross it.
class connection : public std::enable_shared_from_this<connection> {
 public:
  enum class state { connecting, up, closed };

  connection(std::shared_ptr<node_state> node, std::uint32_t slot, std::string peer_name);
  ~connection();

  std::uint32_t slot() const noexcept { return slot_; }
  std::uint64_t id() const noexcept { return id_; }                   // unique per connection (attempt)
  std::uint64_t created_ns() const noexcept { return created_ns_; }   // steady-clock ns
  const std::string& peer_name() const noexcept { return peer_name_; }
  state current() const;
  std::uint64_t peer_flags() const;

  // Any thread; never blocks, never throws. Sends a frame: written at once when nobody is writing
  // and nothing is queued, else queued (dropped once closed), waking the writer when needed.
  void enqueue(std::string_view frame) noexcept;
  // The same for a frame's body (control.hpp's append_frame_body) whose atoms are `refs`: its header
  // is written as it takes its place on the wire, from what the peer's atom cache holds by then.
  // Only once uses_atom_cache().
  void enqueue(const frame_atoms& refs, std::string_view body) noexcept;
  // Process context: a gate for the calling process if more than `limit` bytes wait to be written
  // (node_options::busy_limit_bytes), registered to be opened once they are written or the
  // connection is down; else null. Never throws (out of memory: no wait).
  std::shared_ptr<remote::send_gate> gate_if_busy(std::size_t limit) noexcept;
  // The peer agreed to distribution headers (set once, at establish).
  bool uses_atom_cache() const noexcept {
    // relaxed: it only picks between two encodings the peer reads alike; enqueue's lock orders the rest
    return atom_cache_agreed_.load(std::memory_order_relaxed);
  }

  // Registers `p` to get a connection_settled message (with this connection's id) when a
  // connecting connection comes up or fails; returns the state now (p is registered only while
  // connecting).
  state add_waiter(pid p);

  // The process that may establish this connection now (a connector, or an incoming handshake).
  pid attempt_owner() const;
  void set_attempt_owner(pid p);
  // A connector's claim: true if the connection is connecting and nobody owns the attempt yet (an
  // incoming handshake may have taken it over before the connector started).
  bool claim_attempt(pid connector);

  // Process context. The handshake succeeded: starts the writer and the reader on `s`. False (and
  // nothing started) if `owner` is no longer the attempt's owner or the connection is closed.
  bool establish(std::shared_ptr<net::stream> s, const peer& them, pid owner);
  // Any thread. Closes the connection once: the socket shuts, its processes end, and every link and
  // monitor across it is answered with noconnection. `reason` is logged.
  void down(const std::string& reason) noexcept;

  // ---- Bookkeeping, from the router (outgoing) and the reader (incoming) ----
  // Those that add return false (or nullopt) once the connection is closed: the caller then answers
  // as for an unreachable node itself.
  bool record_link(pid local, pid remote);
  void forget_link(pid local, pid remote);  // an exit through the link went either way
  std::optional<std::uint64_t> start_unlink(pid local, pid remote);  // our UNLINK_ID: its id
  bool unlink_pending(pid local, pid remote) const;
  void unlink_acked(pid local, pid remote, std::uint64_t id);
  bool record_outgoing_monitor(std::uint64_t ref, outgoing_monitor m);
  std::optional<outgoing_monitor> take_outgoing_monitor(std::uint64_t ref);
  // An incoming monitor, under a fresh local ref id (returned), found again by (watcher, reference).
  std::optional<std::uint64_t> record_incoming_monitor(incoming_monitor m);
  std::optional<incoming_monitor> take_incoming_monitor(std::uint64_t id);
  std::optional<std::pair<std::uint64_t, incoming_monitor>> take_incoming_monitor(pid watcher, const term& reference);

 private:
  struct process_guard;
  void writer_main();
  void write_loop();
  void reader_main();
  void read_loop();
  void handle_frame(std::string_view bytes);
  void reply_frame(std::initializer_list<term> control, const term* payload);
  void place(const frame_atoms* refs, std::string_view body) noexcept;
  static void open_gates(const std::vector<std::pair<pid, std::uint64_t>>& waiters) noexcept;

  std::shared_ptr<node_state> node_;
  const std::uint32_t slot_;
  const std::string peer_name_;
  const std::uint64_t id_;
  const std::uint64_t created_ns_;

  mutable std::mutex lock_;
  state state_ = state::connecting;                 // guarded by lock_
  std::string out_;                                 // guarded by lock_: frames for the writer, back to back
  bool wake_pending_ = false;                       // guarded by lock_: a wake is on its way to the writer
  bool writing_ = false;                            // guarded by lock_: someone holds the socket's write side
  std::uint64_t last_direct_ns_ = 0;                // guarded by lock_: when a sender last wrote itself
  std::uint64_t reads_at_direct_ = 0;               // guarded by lock_: reads_ when a sender last wrote itself
  // Reads from the socket that returned data: written by the reader alone (a load and a store),
  // read by senders as a hint (place: a frame sent after the peer's answer is a conversation's turn).
  std::atomic<std::uint64_t> reads_{0};
  std::size_t in_flight_ = 0;                       // guarded by lock_: bytes the writer took and is writing
  std::vector<std::pair<pid, std::uint64_t>> busy_waiters_;  // guarded by lock_: gated senders, their gates' tokens
  // Whether out_ and in_flight_ held more than the busy limit when lock_ was last released: a hint
  // read without the lock (gate_if_busy's fast path), exact under it.
  std::atomic<bool> over_limit_{false};
  bool pass_through_ = false;                       // guarded by lock_: the peer agreed to no headers (set at establish)
  pid writer_, reader_, owner_;                     // guarded by lock_
  std::vector<pid> waiters_;                        // guarded by lock_: dist::connect callers
  std::uint64_t peer_flags_ = 0;                    // guarded by lock_ (set once, at establish)
  std::atomic<bool> atom_cache_agreed_{false};      // set once, at establish (uses_atom_cache)
  sent_atom_cache sent_atoms_;                      // guarded by lock_: what the peer's atom cache holds
  std::unique_ptr<atom_cache> cache_;               // reader only: the peer's atom cache, if agreed
  std::shared_ptr<net::stream> stream_;             // guarded by lock_
  std::set<std::pair<pid, pid>> links_;             // guarded by lock_: (local, remote)
  std::map<std::pair<pid, pid>, std::uint64_t> unlinking_;  // guarded by lock_: our unacknowledged UNLINK_IDs
  std::uint64_t next_unlink_id_ = 1;                // guarded by lock_
  std::unordered_map<std::uint64_t, outgoing_monitor> outgoing_;  // guarded by lock_: by our ref id
  std::unordered_map<std::uint64_t, incoming_monitor> incoming_;  // guarded by lock_: by local ref id
  std::map<std::pair<pid, term>, std::uint64_t> incoming_ids_;    // guarded by lock_: (watcher, ref) -> id
};

// A started node: its identity, its connections by node slot, and the router the runtime calls.
class node_state final : public remote::router, public std::enable_shared_from_this<node_state> {
 public:
  node_state(node_options o, identity me, std::string alive, std::string host);

  const node_options options;
  const identity me;
  const std::string alive;  // the name before '@'
  const std::string host;   // after it
  codec_context ctx;        // set at start, then read-only
  pid net_kernel, acceptor; // set at start, then read-only
  std::optional<net::stream> epmd;  // the registration, kept open; closed at stop (owner: start/stop)

  // The connection to the node in `slot`, or nullptr.
  std::shared_ptr<connection> find(std::uint32_t slot) const;
  // The connection to the node in `slot`, made (connecting; the net_kernel process is asked to start
  // a connector) if there is none. nullptr once the node is stopping. Never throws.
  std::shared_ptr<connection> find_or_connect(std::uint32_t slot) noexcept;
  // Process context (an incoming handshake): what to answer `peer_name`, and the connection it will
  // establish ("ok", "ok_simultaneous"), or none ("nok", "alive", "not_allowed").
  std::pair<std::string, std::shared_ptr<connection>> accept_decision(const std::string& peer_name, pid handshake);
  // After "alive" was answered true: replaces the live connection.
  std::shared_ptr<connection> replace(const std::string& peer_name, pid handshake);
  void forget(const connection* c) noexcept;  // a closed connection leaves the table
  std::vector<std::shared_ptr<connection>> all() const;
  void stop_all(const std::string& reason) noexcept;

  // Sends the frame of `control` (and `payload`) on `c`, built with this node's context in a buffer
  // of the calling thread. Throws grove::error(errc::bad_argument) past max_frame_bytes.
  void transmit(connection& c, std::initializer_list<term> control, const term* payload = nullptr) const;

  // ---- remote::router ----
  void send(pid from, pid to, grove::detail::message_node* message) noexcept override;
  void link(pid from, pid to) noexcept override;
  void unlink(pid from, pid to) noexcept override;
  void exit(pid from, pid to, const exit_reason& reason, bool via_link) noexcept override;
  void monitor(pid watcher, pid target, std::uint64_t ref, std::string_view name) noexcept override;
  void demonitor(pid watcher, pid target, std::uint64_t ref) noexcept override;
  void down(pid from, pid watcher, std::uint64_t ref, const exit_reason& reason) noexcept override;
  std::shared_ptr<remote::send_gate> busy(pid to) noexcept override;
  // The same for a send to a name or an alias on the node in `slot`.
  std::shared_ptr<remote::send_gate> busy_slot(std::uint32_t slot) noexcept;

  // Sends to {name, node} and to an alias reference (dist::send, dist::send_to_alias).
  void send_to_name(pid from, std::uint32_t node_slot, std::string_view name, grove::detail::message_node* n) noexcept;
  void send_to_alias(pid from, const term& reference, grove::detail::message_node* n) noexcept;

 private:
  mutable std::shared_mutex table_lock_;
  std::unordered_map<std::uint32_t, std::shared_ptr<connection>> table_;  // guarded by table_lock_
  bool stopping_ = false;                                                 // guarded by table_lock_
};

// The message net_kernel gets to start a connector for a connecting connection.
struct connect_request {
  std::shared_ptr<connection> conn;
};
// What wakes a connection's writer.
struct writer_wake {};
// What opens a busy connection's gate for one waiting sender (connection::gate_if_busy).
struct gate_open {
  std::uint64_t token;
};
// What a dist::connect caller waits for: the attempt it joined (connection::id) came up or failed.
struct connection_settled {
  std::uint64_t attempt;
  bool up;
};

// Reports a distribution event through the logger.
void report(log_level level, std::string text) noexcept;

// References this node makes: monitors (3 words: id low, id high, 1), aliases (5 words: id low, id
// high, 2, owner index, owner serial), make_ref (3 words, kind 3).
reference monitor_reference(std::uint64_t id);
std::optional<std::uint64_t> monitor_id_of(const reference& r);
reference alias_reference(const alias& a);
std::optional<alias> alias_of(const reference& r);

// A message node's term for the wire; nullopt (after a report) if its type has none.
std::optional<term> wire_term(const grove::detail::message_node* n);
// The message node a term from the wire arrives as (a registered type, else the term). Throws bad_alloc.
grove::detail::message_node* arrived_message(term t);

}  // namespace grove::dist::internal
