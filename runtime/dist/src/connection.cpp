// connection.cpp: one connection to another node, once the handshake is done.
//
// ## Processes and ownership
// Two processes share the socket: the writer writes, the reader reads (grove/net.hpp allows one of
// each). Everything else about the connection is in this object, under its mutex, touched by
// whoever holds it for a few instructions and never across a park.
//
// ## Outgoing frames
// The router runs in the sender's thread and encodes there (senders encode in parallel). Then:
//   - in a conversation's turn (the reader has read from the peer since a sender last wrote
//     itself, or no sender has for direct_pause_ns), with nothing queued and nobody writing, the
//     sender takes the write side and writes its frame with one non-blocking send: a turn costs
//     one syscall and no hand-off (what does not go out waits at the front of the queue for the
//     writer);
//   - otherwise it appends the frame to `out_`, one byte buffer, and wakes the writer if nobody
//     has; the writer takes the whole buffer and writes it (a stream of small frames costs a
//     syscall per batch, not per message).
// Whoever writes holds `writing_`; frames leave in the order their senders queued or wrote them, so
// what one sender sends to one receiver arrives in order. A frame's distribution header, which says
// what the peer's atom cache gains (control.hpp, "Atoms sent through the cache"), is written under
// the lock as the frame takes its place, so the peer reads headers in the order they were made.
// Measured (`python3 bench/harness/dist_send.py`, bench/RESULTS.md): writing every frame through
// the writer process cost a round trip a hand-off (4.9 K round trips/s against 7.9 K written
// directly), and writing every frame directly cost a stream a syscall per message (0.56 M
// messages/s against 2.4-2.6 M with the pause). The pause alone sent a round trip faster than it
// through the writer: Grove -> Grove round trips (`build/release/bench/grove/dist_send --mode 1`,
// 50,000, five runs alternating, 2026-12-06) 35-44 K/s with it, 42-49 K/s once a read also opens
// a turn.
// Rejected: a mailbox message to the writer per frame (a node and a wake each), and blocking
// writes in the sender (a sender would wait on the socket).
//
// ## A peer that reads slower than we write
// A process that sends a message while more than node_options::busy_limit_bytes wait to be written
// (out_ and the batch the writer is writing) waits at a gate (remote::send_gate, asked for by the
// runtime after the send: grove/remote.hpp) until the writer has written the queue out, or the
// connection is down: OTP's busy_dist_port, at its default limit of 1 MiB. Nothing is dropped, and
// the queue's memory is bounded by the limit plus one message per sender (foreign threads, and the
// signals the runtime routes, never wait). Measured (`bench/grove/dist_send` to an Erlang sink,
// 1,000,000 1 KB binaries, /usr/bin/time): peak RSS of the sender 15 MB with the gate, 993 MB
// without it, at the same rate within noise (`--busy_limit_kib`; bench/RESULTS.md).
//
// ## What a lost connection must answer
// The links across (local, remote), monitors held here on remote processes (by our ref id) and
// monitors held there on local ones (by a local ref id, with the watcher's reference to answer
// with). The router adds and removes them as it sends; the reader as signals arrive.
//
// ## The link protocol (OTP 23.3's UNLINK_ID, mandatory in OTP 26)
// A local process's link set is the runtime's; this side keeps what the wire protocol adds: our
// unacknowledged UNLINK_IDs. A LINK that arrives while one of ours to that process is outstanding is
// ignored (the peer will take our UNLINK_ID after its LINK, and both end unlinked); an UNLINK_ID is
// acknowledged at once, before the unlink reaches the local process, so the ack precedes anything
// that process sends after; an exit through a link the local process no longer has is dropped by
// the runtime itself (grove/link.hpp: unlink's guarantee).
//
// ## Going down (down())
// Once: the state becomes closed, the connection leaves the node's table (the next send to that
// node connects again, as in Erlang), the socket is shut (the reader and the writer wake with an
// error and end), and with the lock released, every local process linked across gets exit
// {remote, noconnection} through the link, every monitor held across gets down{noconnection}, and
// every monitor held from across is forgotten by its target. Frames still queued are dropped (they
// were sent to a node that went away). The reason is logged: the peer closed, no data for
// net_ticktime, a write that could not finish within it, a malformed frame, disconnect(), stop().
//
// ## A hostile peer
// A frame longer than max_frame_bytes, one that does not decode (external_format.cpp refuses what
// is malformed), a control message the protocol does not have or with the wrong shape, a signal
// addressed to a pid of another node: each takes this connection down with the reason, and nothing
// else. The reader's buffer grows to the frame being read and no further.
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include <grove/dist/messages.hpp>
#include <grove/logger.hpp>
#include <grove/process.hpp>
#include <grove/registry.hpp>

#include "node_state.hpp"

namespace grove::dist::internal {

namespace {

constexpr std::size_t batch_bytes = 256 * 1024;
// The pause after which a sender writes its frame itself (connection::enqueue): longer than the gap
// between a stream's sends (a microsecond or less), shorter than a round trip between two nodes here
// (~35 µs one way at best, bench/harness/dist_send.py).
constexpr std::uint64_t direct_pause_ns = 20'000;

std::uint64_t clock_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}
constexpr std::size_t read_chunk_bytes = 64 * 1024;

std::uint32_t be32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return std::uint32_t{u[0]} << 24 | std::uint32_t{u[1]} << 16 | std::uint32_t{u[2]} << 8 | u[3];
}

[[noreturn]] void malformed(const std::string& what) { throw error(errc::bad_argument, what); }

// A term in a malformed frame, for the report: at most 100 characters of it.
std::string excerpt(const term& t) { return t.to_string(100); }

void need_arity(const term& c, std::size_t n) {
  if (c.size() != n) malformed(fmt::format("control message {} of arity {} (not {})", c[0].as_int(), c.size(), n));
}

}  // namespace

namespace {
std::atomic<std::uint64_t> next_connection_id{1};  // relaxed: uniqueness is all it gives
}

connection::connection(std::shared_ptr<node_state> node, std::uint32_t slot, std::string peer_name)
    : node_(std::move(node)),
      slot_(slot),
      peer_name_(std::move(peer_name)),
      id_(next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      created_ns_(clock_ns()) {}

connection::~connection() = default;

connection::state connection::current() const {
  std::lock_guard<std::mutex> g(lock_);
  return state_;
}

std::uint64_t connection::peer_flags() const {
  std::lock_guard<std::mutex> g(lock_);
  return peer_flags_;
}

connection::state connection::add_waiter(pid p) {
  std::lock_guard<std::mutex> g(lock_);
  if (state_ == state::connecting) waiters_.push_back(p);
  return state_;
}

namespace {
void notify(const std::vector<pid>& waiters, std::uint64_t attempt, bool up) noexcept {
  for (pid w : waiters) {
    try {
      remote::deliver_message(w, grove::detail::make_node<connection_settled>(connection_settled{attempt, up}));
    } catch (...) {
      // Out of memory: that caller waits out its timeout.
    }
  }
}
}  // namespace

pid connection::attempt_owner() const {
  std::lock_guard<std::mutex> g(lock_);
  return owner_;
}

void connection::set_attempt_owner(pid p) {
  std::lock_guard<std::mutex> g(lock_);
  owner_ = p;
}

bool connection::claim_attempt(pid connector) {
  std::lock_guard<std::mutex> g(lock_);
  if (state_ != state::connecting || !owner_.is_null()) return false;
  owner_ = connector;
  return true;
}

void connection::enqueue(std::string_view frame) noexcept { place(nullptr, frame); }

void connection::enqueue(const frame_atoms& refs, std::string_view body) noexcept { place(&refs, body); }

void connection::place(const frame_atoms* refs, std::string_view frame) noexcept {
  // With refs, `frame` is a body and its header goes before it (control.hpp, "Atoms sent through
  // the cache"), built here under the lock. The calling thread's buffer: no park happens before
  // this call returns.
  thread_local std::string head;
  head.clear();
  pid wake;
  std::shared_ptr<net::stream> direct;  // set: this thread writes the frame itself (see "Outgoing frames")
  std::string converted;
  try {
    std::lock_guard<std::mutex> g(lock_);
    if (state_ == state::closed) return;  // sent to a node that went away: dropped
    if (pass_through_ && !refs) {  // a peer that did not agree to headers (control.hpp)
      converted = to_pass_through(frame, node_->ctx);
      frame = converted;
    }
    // Written at once only in a conversation's next turn: after the peer sent something, or after
    // a pause. Frames that follow each other closely with nothing read between (a stream) are
    // queued, and the writer sends them a batch per syscall.
    const std::uint64_t now = clock_ns();
    const std::uint64_t reads = reads_.load(std::memory_order_relaxed);  // a hint: either path is correct
    const bool turn = reads != reads_at_direct_ || now - last_direct_ns_ >= direct_pause_ns;
    if (state_ == state::up && !writing_ && out_.empty() && stream_ && turn) {
      if (refs) append_frame_head(head, *refs, frame.size(), sent_atoms_, node_->ctx);
      writing_ = true;
      last_direct_ns_ = now;
      reads_at_direct_ = reads;
      direct = stream_;
    } else {
      if (refs) {
        // Room first: once the header is built the peer's cache is taken as changed, so nothing may
        // fail between that and the frame's place in out_.
        const std::size_t bound = refs->head_bytes_at_most();
        head.reserve(bound);
        out_.reserve(out_.size() + bound + frame.size());
        append_frame_head(head, *refs, frame.size(), sent_atoms_, node_->ctx);
        out_.append(head);
      }
      out_.append(frame);
      if (out_.size() + in_flight_ > node_->options.busy_limit_bytes) over_limit_.store(true, std::memory_order_relaxed);  // see gate_if_busy
      if (!writing_ && !wake_pending_ && !writer_.is_null()) {
        wake_pending_ = true;
        wake = writer_;
      }
    }
  } catch (...) {
    return;  // out of memory: the frame is lost, as a message to an unreachable node
  }
  if (direct) {
    // One non-blocking send: all of it goes (the usual case), or the rest waits for the writer.
    const std::string_view parts[2] = {head, frame};
    const auto n = direct->try_write(parts);
    const std::size_t sent = n ? *n : 0;  // an error: the writer's next write meets it too
    try {
      std::lock_guard<std::mutex> g(lock_);
      writing_ = false;
      if (sent < head.size() + frame.size() && state_ != state::closed) {  // before anything queued meanwhile
        std::string rest = sent < head.size() ? head.substr(sent) : std::string();
        rest.append(frame.substr(sent < head.size() ? 0 : sent - head.size()));
        out_.insert(0, rest);
      }
      if (!out_.empty() && !wake_pending_ && !writer_.is_null()) {
        wake_pending_ = true;
        wake = writer_;
      }
    } catch (...) {
      // Out of memory keeping the rest: the stream is cut mid-frame, and the peer's atom cache may
      // lack what this frame's header set; nothing after it could be read right.
      down("out of memory keeping the unsent part of a frame");
      return;
    }
  }
  if (!wake.is_null()) {
    try {
      remote::deliver_message(wake, grove::detail::make_node<writer_wake>());
    } catch (...) {
      std::lock_guard<std::mutex> g(lock_);  // no wake went: let the next frame try
      wake_pending_ = false;
    }
  }
}

namespace {
// A sender's wait for a busy connection: its token's gate_open, which the writer sends once the
// queue is written out and down() sends when the connection goes.
class busy_gate final : public remote::send_gate {
 public:
  busy_gate(std::shared_ptr<connection> c, std::uint64_t token) : conn_(std::move(c)), token_(token) {}
  void wait() override {
    grove::receive(grove::when([t = token_](const gate_open& g) { return g.token == t; }, [](gate_open) {}));
  }

 private:
  std::shared_ptr<connection> conn_;  // kept for the wait's length (the gate names it)
  std::uint64_t token_;
};
}  // namespace

std::atomic<std::uint64_t> next_gate_token{1};  // relaxed: uniqueness is all it gives (a gate_open never opens another gate)

std::shared_ptr<remote::send_gate> connection::gate_if_busy(std::size_t limit) noexcept {
  // relaxed: a stale "no" lets one more message queue (the bound moves by one message per sender);
  // a stale "yes" is checked again under the lock.
  if (!over_limit_.load(std::memory_order_relaxed)) return nullptr;
  try {
    std::lock_guard<std::mutex> g(lock_);
    // Only once up: a sender held while connecting would wait out setup_timeout for every attempt
    // to a node that does not answer (what is queued meanwhile is bounded by setup_timeout).
    if (state_ != state::up || out_.size() + in_flight_ <= limit) return nullptr;
    const std::uint64_t token = next_gate_token.fetch_add(1, std::memory_order_relaxed);
    auto gate = std::make_shared<busy_gate>(shared_from_this(), token);
    busy_waiters_.emplace_back(grove::self(), token);
    return gate;
  } catch (...) {
    return nullptr;  // out of memory: this sender goes on
  }
}

void connection::open_gates(const std::vector<std::pair<pid, std::uint64_t>>& waiters) noexcept {
  for (const auto& [p, token] : waiters) {
    try {
      remote::deliver_message(p, grove::detail::make_node<gate_open>(gate_open{token}));
    } catch (...) {
      // Out of memory: that sender waits on until its process is killed (the gate cannot be
      // opened without a message), as a process whose reply was lost.
    }
  }
}

bool connection::establish(std::shared_ptr<net::stream> s, const peer& them, pid owner) {
  {
    std::lock_guard<std::mutex> g(lock_);
    if (state_ != state::connecting || owner_ != owner) return false;
    state_ = state::up;
    peer_flags_ = them.flags;
    stream_ = std::move(s);
    atom_cache_agreed_.store((them.flags & dflag::dist_hdr_atom_cache) != 0, std::memory_order_relaxed);  // see uses_atom_cache
    if (!(them.flags & dflag::dist_hdr_atom_cache)) {
      pass_through_ = true;
      try {
        out_ = to_pass_through(out_, node_->ctx);  // what was queued while connecting
      } catch (...) {
        out_.clear();  // cannot happen for frames this node built; dropped rather than sent malformed
      }
    }
  }
  auto self = shared_from_this();
  std::vector<pid> waiters;
  pid wake;
  try {
    const pid w = grove::spawn([self] { self->writer_main(); });
    const pid r = grove::spawn([self] { self->reader_main(); });
    std::lock_guard<std::mutex> g(lock_);
    writer_ = w;
    reader_ = r;
    owner_ = pid();
    // Frames queued while the writer had no pid (connecting, or between up and now) got no wake:
    // send one, or they would wait for the first tick.
    if (!out_.empty() && !wake_pending_) {
      wake_pending_ = true;
      wake = w;
    }
    waiters.swap(waiters_);
  } catch (const std::exception& e) {
    down(fmt::format("could not start its processes: {}", e.what()));
    return false;
  }
  if (!wake.is_null()) {
    try {
      remote::deliver_message(wake, grove::detail::make_node<writer_wake>());
    } catch (...) {
      std::lock_guard<std::mutex> g(lock_);  // no wake went: the next frame sends one
      wake_pending_ = false;
    }
  }
  notify(waiters, id_, true);
  report(log_level::info, fmt::format("grove::dist: {} connected to {}", node_->me.name, peer_name_));
  return true;
}

void connection::down(const std::string& reason) noexcept {
  std::set<std::pair<pid, pid>> links;
  std::unordered_map<std::uint64_t, outgoing_monitor> outgoing;
  std::unordered_map<std::uint64_t, incoming_monitor> incoming;
  std::shared_ptr<net::stream> s;
  pid procs[3];
  std::vector<pid> waiters;
  std::vector<std::pair<pid, std::uint64_t>> gated;
  state was;
  {
    std::lock_guard<std::mutex> g(lock_);
    if (state_ == state::closed) return;
    was = state_;
    state_ = state::closed;
    links.swap(links_);
    outgoing.swap(outgoing_);
    incoming.swap(incoming_);
    incoming_ids_.clear();
    unlinking_.clear();
    out_.clear();
    s = stream_;
    procs[0] = writer_;
    procs[1] = reader_;
    procs[2] = owner_;
    waiters.swap(waiters_);
    gated.swap(busy_waiters_);
    in_flight_ = 0;
  }
  open_gates(gated);  // what they sent is dropped with the rest: they go on
  node_->forget(this);
  notify(waiters, id_, false);
  if (s && s->is_open()) ::shutdown(s->native_handle(), SHUT_RDWR);  // wakes the reader and the writer
  const pid me = grove::self();
  for (pid p : procs)
    if (!p.is_null() && p != me) remote::deliver_exit(p, pid(), exit_reason::kill(), false);
  try {
    const exit_reason lost = remote::noconnection();
    for (const auto& [local, far] : links) remote::deliver_exit(local, far, lost, true);
    for (const auto& [id, m] : outgoing) remote::deliver_down(m.watcher, m.target, id, lost);
    for (const auto& [id, m] : incoming) remote::deliver_demonitor(m.target, m.watcher, id);
    report(was == state::up ? log_level::warning : log_level::info,
           fmt::format("grove::dist: connection {} {} {}: {}", node_->me.name, was == state::up ? "to" : "attempt to",
                       peer_name_, was == state::up ? "down, " + reason : "failed, " + reason));
  } catch (...) {
    // Out of memory while answering: what is left unanswered is lost.
  }
}

// ---- bookkeeping ----

bool connection::record_link(pid local, pid remote) {
  std::lock_guard<std::mutex> g(lock_);
  if (state_ == state::closed) return false;
  links_.emplace(local, remote);
  unlinking_.erase({local, remote});  // a LINK sent clears an outstanding unlink (the protocol's rule)
  return true;
}

void connection::forget_link(pid local, pid remote) {
  std::lock_guard<std::mutex> g(lock_);
  links_.erase({local, remote});
}

std::optional<std::uint64_t> connection::start_unlink(pid local, pid remote) {
  std::lock_guard<std::mutex> g(lock_);
  if (state_ == state::closed) return std::nullopt;
  links_.erase({local, remote});
  const std::uint64_t id = next_unlink_id_++;
  unlinking_[{local, remote}] = id;
  return id;
}

bool connection::unlink_pending(pid local, pid remote) const {
  std::lock_guard<std::mutex> g(lock_);
  return unlinking_.count({local, remote}) != 0;
}

void connection::unlink_acked(pid local, pid remote, std::uint64_t id) {
  std::lock_guard<std::mutex> g(lock_);
  auto it = unlinking_.find({local, remote});
  if (it != unlinking_.end() && it->second == id) unlinking_.erase(it);
}

bool connection::record_outgoing_monitor(std::uint64_t ref, outgoing_monitor m) {
  std::lock_guard<std::mutex> g(lock_);
  if (state_ == state::closed) return false;
  outgoing_.emplace(ref, std::move(m));
  return true;
}

std::optional<outgoing_monitor> connection::take_outgoing_monitor(std::uint64_t ref) {
  std::lock_guard<std::mutex> g(lock_);
  auto it = outgoing_.find(ref);
  if (it == outgoing_.end()) return std::nullopt;
  outgoing_monitor m = std::move(it->second);
  outgoing_.erase(it);
  return m;
}

std::optional<std::uint64_t> connection::record_incoming_monitor(incoming_monitor m) {
  const std::uint64_t id = remote::new_ref();
  std::lock_guard<std::mutex> g(lock_);
  if (state_ == state::closed) return std::nullopt;
  incoming_ids_[{m.watcher, m.reference}] = id;
  incoming_.emplace(id, std::move(m));
  return id;
}

std::optional<incoming_monitor> connection::take_incoming_monitor(std::uint64_t id) {
  std::lock_guard<std::mutex> g(lock_);
  auto it = incoming_.find(id);
  if (it == incoming_.end()) return std::nullopt;
  incoming_monitor m = std::move(it->second);
  incoming_.erase(it);
  incoming_ids_.erase({m.watcher, m.reference});
  return m;
}

std::optional<std::pair<std::uint64_t, incoming_monitor>> connection::take_incoming_monitor(pid watcher, const term& reference) {
  std::lock_guard<std::mutex> g(lock_);
  auto by_ref = incoming_ids_.find({watcher, reference});
  if (by_ref == incoming_ids_.end()) return std::nullopt;
  const std::uint64_t id = by_ref->second;
  incoming_ids_.erase(by_ref);
  auto it = incoming_.find(id);
  if (it == incoming_.end()) return std::nullopt;
  std::pair<std::uint64_t, incoming_monitor> out{id, std::move(it->second)};
  incoming_.erase(it);
  return out;
}

// ---- the writer ----

// Ends its connection when its process ends, however it ends (a throw, a kill from outside): a
// connection whose reader or writer is gone would stay up and never read, or never write.
struct connection::process_guard {
  connection& c;
  const char* who;
  ~process_guard() { c.down(fmt::format("its {} ended", who)); }
};

void connection::writer_main() {
  process_guard guard{*this, "writer"};
  try {
    write_loop();
  } catch (const std::bad_alloc&) {
    down("out of memory writing to the peer");
  }
}

void connection::write_loop() {
  const auto tick = std::max(node_->options.net_ticktime / 4, std::chrono::milliseconds(1));
  const auto write_limit = std::max(node_->options.net_ticktime, std::chrono::milliseconds(1000));
  std::shared_ptr<net::stream> s;
  {
    std::lock_guard<std::mutex> g(lock_);
    s = stream_;
  }
  std::string frames;  // what this writer took from out_, written as one buffer
  const auto write = [&](std::string_view bytes) {
    if (auto e = s->write_all(bytes, write_limit)) {
      down(e == errc::timeout ? fmt::format("the peer took nothing for {} ms", write_limit.count())
                              : fmt::format("write: {}", e.message()));
      return false;
    }
    return true;
  };
  // A tick goes out between frames only: it takes the write side as a batch does.
  const auto write_tick = [&] {
    {
      std::lock_guard<std::mutex> g(lock_);
      if (writing_ || !out_.empty()) return true;  // someone is writing, or frames are coming: no tick needed
      writing_ = true;
    }
    const bool ok = write(std::string_view("\0\0\0\0", 4));
    std::lock_guard<std::mutex> g(lock_);
    writing_ = false;
    return ok;
  };
  for (;;) {
    bool busy = false;
    {
      std::lock_guard<std::mutex> g(lock_);
      if (state_ == state::closed) return;
      if (writing_) {
        busy = true;  // a sender is in its one non-blocking send: a few microseconds
      } else {
        frames.clear();
        frames.swap(out_);
        wake_pending_ = false;
        writing_ = !frames.empty();
        in_flight_ = frames.size();
      }
    }
    if (busy) {
      grove::yield();
      continue;
    }
    if (frames.empty()) {
      const bool woke = grove::receive([](writer_wake) { return true; }, grove::after(tick, [] { return false; }));
      if (!woke && !write_tick()) return;  // a tick: we are alive
      continue;
    }
    const bool ok = write(frames);
    std::vector<std::pair<pid, std::uint64_t>> gated;
    {
      std::lock_guard<std::mutex> g(lock_);
      writing_ = false;
      in_flight_ = 0;
      // Busy no more once what the gated senders saw queued is written: they go on (OTP resumes
      // suspended senders when the queue falls below the limit).
      if (out_.size() <= node_->options.busy_limit_bytes) gated.swap(busy_waiters_);
      over_limit_.store(out_.size() > node_->options.busy_limit_bytes, std::memory_order_relaxed);  // see gate_if_busy
    }
    open_gates(gated);
    if (!ok) return;
    if (frames.capacity() > batch_bytes * 16) std::string().swap(frames);  // after a large message
  }
}

// ---- the reader ----

void connection::reader_main() {
  process_guard guard{*this, "reader"};
  try {
    read_loop();
  } catch (const std::bad_alloc&) {
    down("out of memory reading from the peer");
  }
}

void connection::read_loop() {
  const std::size_t max_frame = node_->options.max_frame_bytes;
  if (peer_flags() & dflag::dist_hdr_atom_cache) cache_ = std::make_unique<atom_cache>();
  const auto silence = node_->options.net_ticktime;
  std::shared_ptr<net::stream> s;
  {
    std::lock_guard<std::mutex> g(lock_);
    s = stream_;
  }
  std::string buf(read_chunk_bytes, '\0');
  std::size_t begin = 0, end = 0;
  for (;;) {
    std::size_t want = 4;  // bytes the next frame needs in the buffer
    while (end - begin >= 4) {
      const std::size_t len = be32(buf.data() + begin);
      if (len == 0) {  // a tick
        begin += 4;
        continue;
      }
      if (len > max_frame) {
        down(fmt::format("the peer sent a frame of {} bytes, past max_frame_bytes ({})", len, max_frame));
        return;
      }
      if (end - begin - 4 < len) {
        want = 4 + len;
        break;
      }
      try {
        handle_frame(std::string_view(buf.data() + begin + 4, len));
      } catch (const error& e) {
        down(fmt::format("a malformed frame from the peer: {}", e.what()));
        return;
      } catch (const std::bad_alloc&) {
        down("out of memory reading a frame");
        return;
      }
      begin += 4 + len;
    }
    // Room for the next read: move what is left to the front, grow to the frame being read, and give
    // back the room a large frame took once it is read.
    if (begin == end) {
      begin = end = 0;
      if (buf.size() > 16 * read_chunk_bytes) std::string(read_chunk_bytes, '\0').swap(buf);
    } else if (begin > 0) {
      std::memmove(buf.data(), buf.data() + begin, end - begin);
      end -= begin;
      begin = 0;
    }
    // Grow toward the frame being read as its bytes come, doubling: a length claimed is not memory
    // given until the peer sends it.
    if (buf.size() < want) buf.resize(std::min(want, std::max(buf.size() * 2, end + read_chunk_bytes)));
    if (buf.size() - end < read_chunk_bytes / 4 && buf.size() < want + read_chunk_bytes) buf.resize(end + read_chunk_bytes);
    auto n = s->read_some(buf.data() + end, buf.size() - end, silence);
    if (!n) {
      down(n.error() == errc::timeout ? fmt::format("no data from the peer for net_ticktime ({} ms)", silence.count())
                                      : fmt::format("read: {}", n.error().message()));
      return;
    }
    if (*n == 0) {
      down("the peer closed the connection");
      return;
    }
    end += *n;
    reads_.store(reads_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // only we write it
  }
}

void connection::reply_frame(std::initializer_list<term> control, const term* payload) {
  node_->transmit(*this, control, payload);
}

void connection::handle_frame(std::string_view bytes) {
  frame f = read_frame(bytes, node_->ctx, cache_.get());
  const term& c = f.control;
  const std::int64_t kind = c[0].as_int();
  const auto payload = [&]() -> term& {
    if (!f.has_payload) malformed(fmt::format("control message {} without its payload", kind));
    return f.payload;
  };
  // A pid the peer names as ours: a local pid, or nullopt for one of an earlier incarnation of this
  // node (gone: OTP drops what is sent to it and answers a link or a monitor with noproc). A pid
  // of a third node is refused.
  const auto ours = [&](const term& t, const char* what) -> std::optional<pid> {
    if (!t.is_pid()) malformed(fmt::format("a {} that is not a pid: {}", what, excerpt(t)));
    const pid p = t.as_pid();
    if (!p.is_remote()) return p;
    if (p.node() == node_->ctx.node_slot) return std::nullopt;
    malformed(fmt::format("a {} of another node: {}", what, p));
  };
  // A pid the peer names as its own process: it must be of the peer's node (OTP refuses a signal
  // whose sender is of another node than the connection's).
  const auto theirs = [&](const term& t, const char* what) -> pid {
    if (!t.is_pid()) malformed(fmt::format("a {} that is not a pid: {}", what, excerpt(t)));
    const pid p = t.as_pid();
    if (!p.is_remote() || p.node() != slot_) malformed(fmt::format("a {} not of {}: {}", what, peer_name_, p));
    return p;
  };
  const term noproc(atom("noproc"));
  switch (kind) {
    case op::send:
    case op::send_tt:
    case op::send_sender:
    case op::send_sender_tt: {  // {2, Unused, To} + Msg, {22, From, To} + Msg (and with a trace token)
      need_arity(c, kind == op::send || kind == op::send_sender ? 3 : 4);
      const auto to = ours(c[2], "send's target");  // before the message node exists: it may throw
      if (to) remote::deliver_message(*to, arrived_message(std::move(payload())));
      return;
    }
    case op::reg_send:
    case op::reg_send_tt: {  // {6, From, Unused, ToName} + Msg
      need_arity(c, kind == op::reg_send ? 4 : 5);
      if (!c[3].is_atom()) malformed("a REG_SEND to a name that is not an atom");
      const pid to = grove::whereis(c[3].as_atom().name());
      if (!to.is_null()) remote::deliver_message(to, arrived_message(std::move(payload())));  // else dropped, as Erlang's
      return;
    }
    case op::alias_send:
    case op::alias_send_tt: {  // {33, From, Alias} + Msg
      need_arity(c, kind == op::alias_send ? 3 : 4);
      if (!c[2].is_reference()) malformed("an ALIAS_SEND to something that is not a reference");
      if (auto a = alias_of(c[2].as_reference())) remote::deliver_to_alias(*a, arrived_message(std::move(payload())));
      return;  // not an alias of ours: dropped, as to an inactive alias
    }
    case op::link: {  // {1, From, To}
      need_arity(c, 3);
      const pid from = theirs(c[1], "LINK's sender");
      const auto to = ours(c[2], "LINK's target");
      if (!to) {
        reply_frame({op::payload_exit, c[2], c[1]}, &noproc);  // an earlier incarnation's process
        return;
      }
      if (unlink_pending(*to, from)) return;  // the peer will take our UNLINK_ID next: both end unlinked
      if (!record_link(*to, from)) return;
      remote::deliver_link(*to, from);
      return;
    }
    case op::unlink_id: {  // {35, Id, From, To}
      need_arity(c, 4);
      const pid from = theirs(c[2], "UNLINK_ID's sender");
      const auto to = ours(c[3], "UNLINK_ID's target");
      if (to && !unlink_pending(*to, from)) forget_link(*to, from);
      reply_frame({op::unlink_id_ack, c[1], c[3], c[2]}, nullptr);  // first, then the unlink
      if (to) remote::deliver_unlink(*to, from);
      return;
    }
    case op::unlink: {  // {4, From, To}: the old protocol
      need_arity(c, 3);
      const pid from = theirs(c[1], "UNLINK's sender");
      if (const auto to = ours(c[2], "UNLINK's target")) {
        forget_link(*to, from);
        remote::deliver_unlink(*to, from);
      }
      return;
    }
    case op::unlink_id_ack: {  // {36, Id, From, To}
      need_arity(c, 4);
      if (c[1].type() != term::kind::integer) malformed("an UNLINK_ID_ACK whose id is not an integer");
      const pid from = theirs(c[2], "UNLINK_ID_ACK's sender");
      if (const auto to = ours(c[3], "UNLINK_ID_ACK's target"))
        unlink_acked(*to, from, static_cast<std::uint64_t>(c[1].as_int()));
      return;
    }
    case op::exit:
    case op::exit_tt:
    case op::payload_exit:
    case op::payload_exit_tt:
    case op::exit2:
    case op::exit2_tt:
    case op::payload_exit2:
    case op::payload_exit2_tt: {
      // {3, From, To, Reason}, {13, From, To, Token, Reason}, {24, From, To} + Reason, {25, From, To, Token} + Reason;
      // the same for exit/2: 8, 18, 26, 27.
      const bool via_link = kind == op::exit || kind == op::exit_tt || kind == op::payload_exit || kind == op::payload_exit_tt;
      const bool has_payload = kind == op::payload_exit || kind == op::payload_exit_tt || kind == op::payload_exit2 ||
                               kind == op::payload_exit2_tt;
      const bool traced = kind == op::exit_tt || kind == op::payload_exit_tt || kind == op::exit2_tt || kind == op::payload_exit2_tt;
      need_arity(c, 3 + (traced ? 1 : 0) + (has_payload ? 0 : 1));
      const pid from = theirs(c[1], "exit's sender");
      const auto to = ours(c[2], "exit's target");
      const term& reason = has_payload ? payload() : c[c.size() - 1];
      if (!to) return;  // to a process of an earlier incarnation: nothing to do
      if (via_link) forget_link(*to, from);
      remote::deliver_exit(*to, from, to_exit_reason(reason), via_link);
      return;
    }
    case op::monitor_p: {  // {19, From, ToProc, Ref}
      need_arity(c, 4);
      const pid watcher = theirs(c[1], "MONITOR_P's watcher");
      if (!c[3].is_reference()) malformed("a MONITOR_P whose reference is not one");
      pid target;
      if (c[2].is_atom()) {
        target = grove::whereis(c[2].as_atom().name());
      } else if (const auto t = ours(c[2], "MONITOR_P's target")) {
        target = *t;
      }
      if (target.is_null()) {  // nobody holds the name, or an earlier incarnation's process: noproc at once
        reply_frame({op::payload_monitor_p_exit, c[2], c[1], c[3]}, &noproc);
        return;
      }
      if (auto id = record_incoming_monitor({target, watcher, c[3], c[2]})) remote::deliver_monitor(target, watcher, *id);
      return;
    }
    case op::demonitor_p: {  // {20, From, ToProc, Ref}
      need_arity(c, 4);
      const pid watcher = theirs(c[1], "DEMONITOR_P's watcher");
      if (auto m = take_incoming_monitor(watcher, c[3])) remote::deliver_demonitor(m->second.target, watcher, m->first);
      return;
    }
    case op::monitor_p_exit:
    case op::payload_monitor_p_exit: {  // {21, FromProc, ToPid, Ref, Reason}, {28, FromProc, ToPid, Ref} + Reason
      need_arity(c, kind == op::monitor_p_exit ? 5 : 4);
      if (!c[3].is_reference()) malformed("a MONITOR_P_EXIT whose reference is not one");
      (void)ours(c[2], "MONITOR_P_EXIT's watcher");  // checked: the recorded watcher is the one told
      const term& reason = kind == op::monitor_p_exit ? c[4] : payload();
      if (auto id = monitor_id_of(c[3].as_reference()))
        if (auto m = take_outgoing_monitor(*id)) remote::deliver_down(m->watcher, m->target, *id, to_exit_reason(reason));
      return;  // a monitor we no longer hold (demonitored meanwhile): nothing to do
    }
    case op::spawn_request:
    case op::spawn_request_tt: {  // {29, ReqId, From, GroupLeader, MFA, Opts} + Args: no Erlang code here
      if (c.size() < 6) malformed("a SPAWN_REQUEST of the wrong arity");
      reply_frame({op::spawn_reply, c[1], c[2], 0, term(atom("notsup"))}, nullptr);
      return;
    }
    case op::node_link:
    case op::group_leader:
      return;  // nothing to do: Grove processes have no group leaders
    default: malformed(fmt::format("unknown control message {}", kind));
  }
}

}  // namespace grove::dist::internal
