// server.cpp: grove::http::server (grove/http/server.hpp has the contract).
//
// ## Processes
// - The owner (server::pid()): traps exits, is linked to the caller for start_link, and holds the
//   server's life: it starts the acceptor, and stops everything on stop(), on its parent's exit
//   signal, or when the acceptor dies. Killed, it kills the acceptor and every connection as it
//   unwinds (owner_guard), so nothing outlives it.
// - The acceptor: owns the listener and accepts; per connection it registers a record in the
//   shared state and spawns the connection's process. Killing it closes the listener (RAII).
// - A connection: reads a request, runs the handler, writes the response, loops; unregisters and
//   closes its socket on every way out.
//
// ## Draining without losing a request
// A connection's record has a phase: idle (waiting for the first byte of a request), busy (from
// that byte until its response is written) or closing. The connection moves idle → busy with a
// CAS before it touches a new request; a stop sets `draining`, then moves each idle record to
// closing with a CAS and sends it a shutdown exit signal (it is waiting for readability, which acts
// on signals, and unwinds). So a request that has begun is never cut by the stop; a busy
// connection sees `draining` after its response (which says Connection: close) and leaves. After
// a response a connection stores idle and then reads `draining` (both seq_cst), and the stop
// stores `draining` and then reads the phases (seq_cst): one of them sees the other, so no
// connection goes back to sleep unseen. At the drain deadline what is left is killed.
//
// ## Memory per idle connection
// A keep-alive connection between requests holds no buffer: it waits with wait_readable (no
// syscall, no buffer), then reads into a 16 KiB buffer it frees again when it goes idle. So an
// idle connection costs its process (PCB, its parked stack's image: the loop's few frames), the
// parser (llhttp's 80 bytes) and the socket: bench/grove/idle_connections measures it.
#include <grove/http/server.hpp>
#include <grove/metrics.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <sys/socket.h>

#include <fmt/format.h>

#include <grove/link.hpp>
#include <grove/logger.hpp>
#include <grove/message.hpp>
#include <grove/process.hpp>
#include <grove/registry.hpp>
#include <grove/supervisor/child_spec.hpp>

#include "parser.hpp"
#include "stats.hpp"
#include "wire.hpp"

namespace grove::http {

using namespace std::chrono_literals;

namespace {

constexpr std::size_t read_chunk = 16 * 1024;
constexpr std::size_t flush_at = 64 * 1024;  // pipelined responses are written together up to this

enum phase : int { idle, busy, closing };

struct conn_record {
  grove::pid pid;
  std::atomic<int> phase{idle};  // shared: see the file comment, "Draining"
};

struct stop_request {
  grove::pid from;
  std::uint64_t tag;
  std::chrono::milliseconds drain;
};
struct stopped {
  std::uint64_t tag;
};
struct drained {};

}  // namespace

struct server::shared {
  server_options options;
  http::handler handler;
  grove::pid owner;

  std::mutex lock;
  std::list<conn_record> conns;  // guarded by lock
  bool closed = false;           // guarded by lock: every connection has been told to go; take no more
  std::atomic<bool> draining{false};  // shared: seq_cst, see the file comment
  // The listener's fd while the acceptor holds it open, else -1; guarded by lock. The owner's
  // unwinding shuts it down (owner_guard), so a killed server's port is free at once for its restart.
  int listen_fd = -1;

  internal::tally lingering;  // refusals being written (refuse())
  internal::tally accepted, refused, open, requests, in_flight, malformed, too_large, timed_out, exceptions, disconnects;
  std::array<internal::tally, 6> by_class;
  internal::latency_histogram latency;

  // The connection's way out: unregisters it and tells a draining owner when the last one has gone.
  void forget(std::list<conn_record>::iterator it) {
    grove::exit_deferral defer;  // runs in ~connection: the owner must hear of the last one even if we were killed
    bool last = false;
    {
      std::lock_guard<std::mutex> g(lock);
      conns.erase(it);
      last = conns.empty();
    }
    open.sub();
    if (last && draining.load(std::memory_order_seq_cst)) grove::send(owner, drained{});
  }
};

namespace {

using shared = server::shared;
using internal::message_parser;

// A connection's input: bytes read, not yet parsed. Unlike std::string's resize it does not zero the
// room it makes for a read (16 KiB per request: 1.7% of a keep-alive request's profile under wrk,
// `perf record -g` on build/release/bench/grove/http_hello; within the noise of wrk's figures), and it is
// freed while the connection idles.
class input_buffer {
 public:
  char* data() noexcept { return buf_.get(); }
  std::size_t size() const noexcept { return size_; }
  void clear() noexcept { size_ = 0; }
  void release() noexcept {
    buf_.reset();
    size_ = cap_ = 0;
  }
  // Room for n more bytes after size(); grow(k) then counts the k of them that were written.
  char* room(std::size_t n) {
    if (cap_ - size_ < n) {
      const std::size_t cap = std::max(cap_ * 2, size_ + n);
      auto b = std::make_unique_for_overwrite<char[]>(cap);
      if (size_) std::memcpy(b.get(), buf_.get(), size_);
      buf_ = std::move(b);
      cap_ = cap;
    }
    return buf_.get() + size_;
  }
  void grow(std::size_t k) noexcept { size_ += k; }

 private:
  std::unique_ptr<char[]> buf_;
  std::size_t size_ = 0, cap_ = 0;
};

// How long a connection that answered an error and closes goes on reading what its client still
// sends (linger_and_close).
constexpr auto linger_time = 2s;

// Closes a connection whose client may still be sending: closing with unread bytes in the socket
// makes the kernel send a reset, which can discard the answer just written before the client reads
// it (a client uploading a body the server has refused with 413 saw "connection reset" instead of
// the 413). So: stop writing (the client reads our answer, then the end), and read and drop what
// comes until the client closes or `linger_time` has passed (nginx's lingering close, which waits
// up to 30 s).
void linger_and_close(net::stream& s) {
  (void)s.shutdown_write();
  const auto until = std::chrono::steady_clock::now() + linger_time;
  char sink[4096];
  for (;;) {
    auto n = s.read_some(sink, sizeof sink, until);
    if (!n || *n == 0) break;
  }
  s.close();
}

class connection {
 public:
  connection(std::shared_ptr<shared> sh, net::stream s, std::list<conn_record>::iterator rec)
      : sh_(std::move(sh)),
        s_(std::move(s)),
        rec_(rec),
        parser_(message_parser::kind::request, {sh_->options.max_head_bytes, sh_->options.max_body_bytes}) {
    std::lock_guard<std::mutex> g(sh_->lock);
    rec_->pid = grove::self();  // the record is ours to erase: the acceptor never touches it after the spawn
  }
  ~connection() {
    s_.close();
    sh_->forget(rec_);
  }

  void run() {
    const server_options& o = sh_->options;
    // A stop or kill that marked us closing before we started (our pid was not known yet): leave.
    // seq_cst: against close_all's store, ordered by the lock the constructor took
    if (rec_->phase.load(std::memory_order_seq_cst) == closing) return;
    for (;;) {
      if (pos_ == in_.size() && !wait_for_request(o)) return;
      int expected = idle;
      // seq_cst: against the stop's CAS idle → closing (file comment, "Draining")
      if (!rec_->phase.compare_exchange_strong(expected, busy, std::memory_order_seq_cst)) return;
      if (!serve_one(o)) return;
      rec_->phase.store(idle, std::memory_order_seq_cst);
      if (sh_->draining.load(std::memory_order_seq_cst)) return;  // a stop began while we were busy
    }
  }

 private:
  // Idle: waits for the next request's first bytes without a buffer. False: close (timeout, error,
  // end-of-file).
  bool wait_for_request(const server_options& o) {
    pos_ = 0;
    in_.release();  // no buffer while idle
    std::string().swap(out_);
    const auto until = std::chrono::steady_clock::now() + o.idle_timeout;
    for (;;) {
      if (auto ec = s_.wait_readable(until)) {
        if (ec == grove::errc::timeout) sh_->timed_out.add();
        return false;
      }
      // wait_readable may return early (net.hpp): read what is there without waiting.
      switch (read_more(std::chrono::steady_clock::time_point{})) {
        case read_result::data: return true;
        case read_result::nothing_yet: continue;
        case read_result::closed: return false;
      }
    }
  }

  enum class read_result { data, nothing_yet, closed };
  read_result read_more(std::chrono::steady_clock::time_point until) {
    if (pos_ == in_.size()) {
      in_.clear();
      pos_ = 0;
    }
    auto n = s_.read_some(in_.room(read_chunk), read_chunk, until);
    if (n) in_.grow(*n);
    if (!n) return n.error() == grove::errc::timeout ? read_result::nothing_yet : read_result::closed;
    if (*n == 0) return read_result::closed;
    return read_result::data;
  }

  // One request: parse (reading as needed), handle, queue or write the response. False: close.
  bool serve_one(const server_options& o) {
    auto until = std::chrono::steady_clock::now() + o.header_timeout;
    bool head = false;
    for (;;) {
      auto [st, used] = parser_.feed(in_.data() + pos_, in_.size() - pos_);
      if (st == message_parser::state::failed) return answer_failure();
      pos_ += used;
      if (!head && parser_.head_done()) {
        head = true;
        until = std::chrono::steady_clock::now() + o.body_timeout;
        if (!meet_expectation(st == message_parser::state::complete)) return false;
      }
      if (st == message_parser::state::complete) break;
      if (!flush()) return false;  // answers to earlier pipelined requests go out before we wait
      switch (read_more(until)) {
        case read_result::data: continue;
        case read_result::nothing_yet:  // the head or body did not come in time (slowloris)
          sh_->timed_out.add();
          return answer(408, "request timeout\n", false);
        case read_result::closed: return false;  // a partial request: nobody to answer
      }
    }
    const auto arrived = std::chrono::steady_clock::now();
    sh_->requests.add();
    sh_->in_flight.add();
    request req = parser_.take_request();
    const bool head_only = req.method == "HEAD";
    response resp = call_handler(req, services::deadline::at(arrived + o.handler_timeout));
    const std::string* conn = resp.headers.find("connection");
    const bool close = !req.keep_alive || parser_.keep_alive() == false || sh_->draining.load(std::memory_order_seq_cst) ||
                       (conn && iequals(*conn, "close"));
    internal::append_response(out_, resp, close, head_only);
    count_response(resp.status);
    internal::record_latency(sh_->latency, arrived);
    sh_->in_flight.sub();
    // Pipelined requests wait in in_: their responses are written together.
    if (close || pos_ == in_.size() || out_.size() >= flush_at) {
      if (!flush()) return false;
    }
    return !close;
  }

  // A request whose head says `Expect: 100-continue` waits for our 100 (Continue) before it sends
  // its body (curl does, for large uploads, and otherwise waits a second): it gets one as soon as
  // the head has passed the limits, unless its body has come already (RFC 9110 10.1.1). A body
  // over max_body_bytes is refused with 413 before that, so the client never sends it. Another
  // expectation gets 417 and the connection closes (Go's net/http does the same). False: close.
  bool meet_expectation(bool body_here) {
    const std::string_view e = parser_.expectation();
    if (e.empty()) return true;
    if (!iequals(e, "100-continue")) return answer(417, "expectation failed\n", true);
    if (body_here) return true;
    out_ += "HTTP/1.1 100 Continue\r\n\r\n";
    return flush();
  }

  response call_handler(const request& req, const services::deadline& d) {
    try {
      return sh_->handler(req, d);
    } catch (const grove::exit_unwind&) {
      sh_->in_flight.sub();
      throw;  // killed, or grove::exit: the connection ends
    } catch (const std::exception& e) {
      report_exception(req, e.what());
    } catch (...) {
      report_exception(req, "an exception not derived from std::exception");
    }
    return response{.status = 500, .headers = {}, .body = "internal server error\n"};
  }

  void report_exception(const request& req, const char* what) {
    sh_->exceptions.add();
    grove::log(log_event{log_level::error, log_kind::service, grove::self(), sh_->options.name, {},
                         fmt::format("grove::http: handler for {} {} threw: {}", req.method, req.target, what)});
  }

  bool answer_failure() {
    switch (parser_.why()) {
      case message_parser::failure::head_too_large:
        sh_->too_large.add();
        return answer(431, "request header fields too large\n", true);
      case message_parser::failure::body_too_large:
        sh_->too_large.add();
        return answer(413, "content too large\n", true);
      case message_parser::failure::unsupported_version:
        sh_->malformed.add();
        return answer(505, "HTTP version not supported\n", true);
      case message_parser::failure::unsupported_coding:
        sh_->malformed.add();
        return answer(501, "transfer coding not implemented\n", true);
      default:
        sh_->malformed.add();
        return answer(400, fmt::format("bad request: {}\n", parser_.detail()), true);
    }
  }

  // Answers and closes. `linger`: the client may still be sending the request we refused (its
  // body, or the rest of a head): linger_and_close. A client too slow for our timeouts (408) is not
  // waited for again.
  bool answer(int status, std::string body, bool linger) {
    response r{.status = status, .headers = {}, .body = std::move(body)};
    r.headers.set("Content-Type", "text/plain");
    internal::append_response(out_, r, true, false);
    count_response(status);
    if (flush() && linger) linger_and_close(s_);
    return false;
  }

  void count_response(int status) {
    const int c = status / 100;
    if (c >= 1 && c <= 5) sh_->by_class[static_cast<std::size_t>(c)].add();
  }

  bool flush() {
    if (out_.empty()) return true;
    auto ec = s_.write_all(out_, std::chrono::steady_clock::now() + sh_->options.write_timeout);
    out_.clear();
    if (ec) {
      if (ec == grove::errc::timeout) sh_->timed_out.add();
      else sh_->disconnects.add();
      return false;
    }
    return true;
  }

  std::shared_ptr<shared> sh_;
  net::stream s_;
  std::list<conn_record>::iterator rec_;
  message_parser parser_;
  input_buffer in_;  // bytes read and not yet parsed, from pos_
  std::size_t pos_ = 0;
  std::string out_;  // responses not yet written
};

// Answers a connection the server will not serve (503 over max_connections) and closes it. The
// client has usually sent its request already, so a short-lived process writes the answer and
// lingers (linger_and_close); at most max_lingering such processes at once, past which a
// connection is closed at once (a flood gets resets, not memory).
constexpr std::uint64_t max_lingering = 64;

void refuse(const std::shared_ptr<shared>& sh, net::stream s, int status, std::string_view body) {
  std::string out;
  response r{.status = status, .headers = {}, .body = std::string(body)};
  r.headers.set("Content-Type", "text/plain");
  internal::append_response(out, r, true, false);
  if (sh->lingering.get() >= max_lingering) {
    s.close();
    return;
  }
  sh->lingering.add();
  auto spawned = grove::try_spawn(spawn_options{}, [keep = sh, s = std::move(s), out = std::move(out)]() mutable {
    struct done {
      shared& sh;
      ~done() { sh.lingering.sub(); }
    } guard{*keep};
    if (s.write_all(out, std::chrono::steady_clock::now() + 1s)) return;
    linger_and_close(s);
  });
  if (!spawned) sh->lingering.sub();  // the lambda and its socket are gone: the client sees the close
}

void accept_loop(std::shared_ptr<shared> sh, net::listener l) {
  struct fd_guard {  // the fd number is cleared before the listener closes it (reverse order of members)
    shared& sh;
    fd_guard(shared& s, int fd) : sh(s) {
      std::lock_guard<std::mutex> g(sh.lock);
      sh.listen_fd = fd;
    }
    ~fd_guard() {
      std::lock_guard<std::mutex> g(sh.lock);
      sh.listen_fd = -1;
    }
  } fd_owner{*sh, l.native_handle()};
  auto backoff = 5ms;  // Go's net/http: 5 ms doubling to 1 s on EMFILE and other temporary errors
  for (;;) {
    auto c = l.accept();
    if (!c) {
      grove::log(log_event{log_level::warning, log_kind::service, grove::self(), sh->options.name, {},
                           fmt::format("grove::http: accept failed: {}; retrying in {} ms", c.error().message(), backoff.count())});
      grove::sleep_for(backoff);
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, 1s);
      continue;
    }
    backoff = 5ms;
    sh->accepted.add();
    if (sh->open.get() >= sh->options.max_connections) {
      sh->refused.add();
      refuse(sh, std::move(*c), 503, "too many connections\n");
      continue;
    }
    std::list<conn_record>::iterator rec;
    {
      std::lock_guard<std::mutex> g(sh->lock);
      if (sh->closed) {  // the owner is going and we are about to be killed: this one is not served
        c->close();
        continue;
      }
      rec = sh->conns.emplace(sh->conns.end());
    }
    sh->open.add();
    (void)c->set_nodelay(true);  // responses are written whole: no reason to wait for more
    auto spawned = grove::try_spawn(spawn_options{}, [sh, s = std::move(*c), rec]() mutable {
      connection(sh, std::move(s), rec).run();
    });
    if (!spawned) {
      // The process limit: the lambda (and its socket) is gone; answer from here is impossible, so
      // the peer sees the close.
      sh->refused.add();
      sh->forget(rec);
      continue;
    }
  }
}

// The owner's way out: whatever happens to it, the acceptor and every connection go with it.
// Marks every connection closing and returns their pids (those started), to signal outside the
// lock: a runtime call may park the caller, which must not hold a mutex then.
std::vector<grove::pid> close_all(shared& sh, bool only_idle) {
  std::vector<grove::pid> out;
  std::lock_guard<std::mutex> g(sh.lock);
  if (!only_idle) sh.closed = true;  // an acceptor not yet dead registers no more
  for (auto& c : sh.conns) {
    int expected = idle;
    // seq_cst: against the connection's CAS idle → busy (file comment, "Draining")
    const bool now_closing = only_idle ? c.phase.compare_exchange_strong(expected, closing, std::memory_order_seq_cst)
                                       : (c.phase.store(closing, std::memory_order_seq_cst), true);
    if (now_closing && !c.pid.is_null()) out.push_back(c.pid);  // a null pid: not started yet, it leaves when it starts
  }
  return out;
}

server_stats stats_of(const shared& sh);

// server_options::metrics_name: the server's stats as Prometheus families (grove/metrics.hpp), for
// as long as its owner process lives. The collector holds the state weakly: it may outlive a
// stopped server by a scrape, and it never keeps one alive.
std::uint64_t add_metrics(const std::shared_ptr<shared>& sh) {
  if (sh->options.metrics_name.empty()) return 0;
  return metrics::add_collector([weak = std::weak_ptr<shared>(sh)](std::string& out) {
    const std::shared_ptr<shared> st = weak.lock();
    if (!st) return;
    const server_stats s = stats_of(*st);
    const std::string server = metrics::label("server", st->options.metrics_name);
    const auto d = [](auto v) { return static_cast<double>(v); };
    using metrics::kind;
    metrics::write_family(out, "grove_http_server_connections_accepted_total", kind::counter, "Connections accepted.",
                          {{server, d(s.connections_accepted)}});
    metrics::write_family(out, "grove_http_server_connections_refused_total", kind::counter,
                          "Connections refused over max_connections (503).", {{server, d(s.connections_refused)}});
    metrics::write_family(out, "grove_http_server_connections_open", kind::gauge, "Connections open.",
                          {{server, d(s.connections_open)}});
    metrics::write_family(out, "grove_http_server_requests_total", kind::counter, "Requests whose head was read.",
                          {{server, d(s.requests)}});
    metrics::write_family(out, "grove_http_server_requests_in_flight", kind::gauge,
                          "Requests in their handler or being written.", {{server, d(s.in_flight)}});
    std::vector<metrics::sample> by_class;
    for (int c = 1; c <= 5; ++c)
      by_class.push_back({server + "," + metrics::label("class", fmt::format("{}xx", c)), d(s.responses_by_class[c])});
    metrics::write_family(out, "grove_http_server_responses_total", kind::counter, "Responses written, by status class.",
                          by_class.data(), by_class.size());
    metrics::write_family(out, "grove_http_server_rejected_requests_total", kind::counter,
                          "Requests answered by the server itself: malformed (400), too large (413, 431), timed out (408).",
                          {{server + "," + metrics::label("why", "malformed"), d(s.malformed)},
                           {server + "," + metrics::label("why", "too_large"), d(s.too_large)},
                           {server + "," + metrics::label("why", "timed_out"), d(s.timed_out)}});
    metrics::write_family(out, "grove_http_server_handler_exceptions_total", kind::counter,
                          "Handlers that threw (answered 500).", {{server, d(s.handler_exceptions)}});
    metrics::write_family(out, "grove_http_server_disconnects_total", kind::counter,
                          "Clients gone before their response was written.", {{server, d(s.disconnects)}});
    metrics::write_family(out, "grove_http_server_latency_seconds", kind::gauge,
                          "Handler latency quantiles since the start (log2 buckets' upper bounds).",
                          {{server + "," + metrics::label("quantile", "0.5"), s.latency_quantile_ms(0.5) / 1e3},
                           {server + "," + metrics::label("quantile", "0.9"), s.latency_quantile_ms(0.9) / 1e3},
                           {server + "," + metrics::label("quantile", "0.99"), s.latency_quantile_ms(0.99) / 1e3}});
  });
}

struct owner_guard {
  std::shared_ptr<shared> sh;
  grove::pid acceptor;
  std::uint64_t metrics_id = 0;
  ~owner_guard() {
    if (metrics_id) metrics::remove_collector(metrics_id);
    grove::exit_deferral defer;  // a destructor: its signals must go out, however the owner ends
    {
      std::lock_guard<std::mutex> g(sh->lock);
      // Stops the listener now (Linux moves it out of LISTEN), not when the acceptor's kill is
      // handled: a supervisor restarting this server binds the same port next.
      if (sh->listen_fd >= 0) ::shutdown(sh->listen_fd, SHUT_RDWR);
    }
    grove::exit(acceptor, exit_reason::kill());
    for (grove::pid c : close_all(*sh, false)) grove::exit(c, exit_reason::kill());
  }
};

// Stops accepting, closes idle connections, waits for busy ones until `drain`, kills the rest.
void drain_and_stop(shared& sh, grove::pid acceptor, std::chrono::milliseconds drain) {
  const auto until = std::chrono::steady_clock::now() + drain;
  // 1. The listener closes with the acceptor, before anything else: no new connection after this.
  auto m = grove::monitor(acceptor);
  grove::exit(acceptor, exit_reason::kill());
  grove::receive(grove::when([&](const grove::down& d) { return d.ref == m; }, [](const grove::down&) {}));
  // 2. seq_cst: see the file comment, "Draining"
  sh.draining.store(true, std::memory_order_seq_cst);
  for (grove::pid c : close_all(sh, true)) grove::exit(c, exit_reason::shutdown());
  bool empty = false;
  {
    std::lock_guard<std::mutex> g(sh.lock);
    empty = sh.conns.empty();
  }
  // 3. Requests in flight finish until the drain deadline; then what is left is killed.
  auto wait_drained = [&](std::chrono::steady_clock::time_point by) {
    const auto left = std::max(by - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero());
    return grove::receive([](drained) { return true; }, grove::after(left, [] { return false; }));
  };
  if (empty || wait_drained(until)) return;
  const auto left = close_all(sh, false);
  if (left.empty()) return;
  for (grove::pid c : left) grove::exit(c, exit_reason::kill());
  wait_drained(std::chrono::steady_clock::now() + 1s);  // a handler that computes without runtime calls may not die
}

void owner_loop(std::shared_ptr<shared> sh, net::listener l, grove::pid parent) {
  grove::trap_exit(true);
  sh->owner = grove::self();
  const grove::pid acceptor = grove::spawn_link([sh, l = std::move(l)]() mutable { accept_loop(sh, std::move(l)); });
  owner_guard guard{sh, acceptor, add_metrics(sh)};
  for (;;) {
    bool done = false;
    grove::receive(
        [&](const stop_request& r) {
          drain_and_stop(*sh, acceptor, r.drain);
          // Off the metrics page before stop() returns: a scrape after it never shows this server.
          metrics::remove_collector(std::exchange(guard.metrics_id, 0));
          grove::send(r.from, stopped{r.tag});
          done = true;
        },
        [&](const grove::exit_signal& e) {
          // The parent (a supervisor, the caller) is going, the runtime is stopping (the null
          // pid), or the acceptor died: stop, then exit with that reason, as an OTP worker does.
          if (e.from == parent || e.from.is_null() || e.from == acceptor) {
            if (e.from != acceptor) drain_and_stop(*sh, acceptor, sh->options.default_drain);
            grove::exit(e.reason.is_normal() && e.from == acceptor ? exit_reason::shutdown() : e.reason);  // ends this process
          }
        },
        [](const drained&) {});  // a late one from an earlier drain
    if (done) return;
  }
}

}  // namespace

result<server> server::start_impl(server_options options, handler h, bool link) {
  grove::pid caller = grove::self();
  if (link && caller.is_null()) return make_error_code(grove::errc::not_in_process);
  auto l = net::listener::listen(options.address, {.backlog = options.backlog, .reuse_address = true, .reuse_port = options.reuse_port});
  if (!l) return l.error();
  auto at = l->local_address();
  if (!at) return at.error();
  auto sh = std::make_shared<shared>();
  sh->options = std::move(options);
  sh->handler = std::move(h);
  auto spawned = grove::try_spawn(spawn_options{.link = link, .trap_exit = true},
                                  [sh, l = std::move(*l), caller]() mutable { owner_loop(sh, std::move(l), caller); });
  if (!spawned) return spawned.error();
  if (!sh->options.name.empty()) {
    if (auto ec = grove::try_register_name(sh->options.name, spawned->pid)) {
      if (link) grove::unlink(spawned->pid);
      grove::exit(spawned->pid, exit_reason::kill());
      return ec;
    }
  }
  server s;
  s.pid_ = spawned->pid;
  s.address_ = *at;
  s.state_ = std::move(sh);
  return s;
}

result<server> server::start_link(server_options options, handler h) { return start_impl(std::move(options), std::move(h), true); }
result<server> server::start(server_options options, handler h) { return start_impl(std::move(options), std::move(h), false); }

bool server::stop(std::chrono::milliseconds drain) {
  if (pid_.is_null() || !grove::is_alive(pid_)) return false;
  static std::atomic<std::uint64_t> next_tag{1};  // shared: relaxed, only uniqueness matters
  const std::uint64_t tag = next_tag.fetch_add(1, std::memory_order_relaxed);
  auto m = grove::monitor(pid_);
  grove::send(pid_, stop_request{grove::self(), tag, drain});
  const bool answered = grove::receive(
      grove::when([tag](const stopped& s) { return s.tag == tag; }, [](const stopped&) { return true; }),
      grove::when([&](const grove::down& d) { return d.ref == m; }, [](const grove::down&) { return false; }),
      grove::after(drain + 2s, [] { return false; }));
  grove::demonitor(m, true);  // flush: a down that came after the answer must not stay in the caller's mailbox
  return answered;
}

server_stats server::stats() const { return state_ ? stats_of(*state_) : server_stats{}; }

namespace {
server_stats stats_of(const shared& sh) {
  server_stats s;
  s.connections_accepted = sh.accepted.get();
  s.connections_refused = sh.refused.get();
  s.connections_open = sh.open.get();
  s.requests = sh.requests.get();
  s.in_flight = sh.in_flight.get();
  for (std::size_t i = 0; i < 6; ++i) s.responses_by_class[i] = sh.by_class[i].get();
  s.malformed = sh.malformed.get();
  s.too_large = sh.too_large.get();
  s.timed_out = sh.timed_out.get();
  s.handler_exceptions = sh.exceptions.get();
  s.disconnects = sh.disconnects.get();
  s.latency_us_log2 = internal::snapshot(sh.latency);
  return s;
}
}  // namespace

double server_stats::latency_quantile_ms(double q) const noexcept { return internal::latency_quantile_ms(latency_us_log2, q); }

supervisor::child_spec server_child(std::string id, server_options options, handler h) {
  supervisor::child_spec spec;
  spec.id = std::move(id);
  // The server drains for default_drain when its supervisor stops it: give it that and a second.
  spec.shutdown = supervisor::shutdown_policy::timeout(options.default_drain + 1s);
  spec.start = [options = std::move(options), h = std::move(h)]() -> supervisor::start_return {
    auto r = server::start_link(options, h);
    if (!r) return r.error();
    return r->pid();
  };
  return spec;
}

}  // namespace grove::http
