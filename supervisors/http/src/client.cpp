// client.cpp: grove::http::client (grove/http/client.hpp has the contract).
//
// ## The pool of one host
// `open` counts the host's connections, in use or idle; it never passes the maximum. A caller takes
// an idle connection (the most recently used: its server is the least likely to have closed it),
// else a slot to open one (open + 1), else waits in a FIFO of waiters. Whoever gives a connection
// back hands it, or, if it is not reusable, its slot, straight to the oldest waiter (under the
// pool's lock, then a message wakes the waiter), so a waiter never races a newcomer for it. A
// waiter whose deadline passes, or that is killed, leaves the queue under the same lock, and gives
// back whatever was handed to it meanwhile: no slot is ever lost, which the tests check by
// killing waiters and callers at every step.
//
// ## One attempt
// checkout → (resolve, connect: a new slot) → write the request → read the response → give back
// (reusable if both sides keep the connection alive). Every wait takes the call's deadline; at the
// deadline the connection is closed (a late response could otherwise be read by the next user).
#include <grove/http/client.hpp>

#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <grove/io.hpp>
#include <grove/message.hpp>
#include <grove/metrics.hpp>
#include <grove/net.hpp>
#include <grove/process.hpp>

#include "parser.hpp"
#include "stats.hpp"
#include "wire.hpp"

namespace grove::http {

namespace {

using clock = std::chrono::steady_clock;
constexpr std::size_t read_chunk = 16 * 1024;

struct url_parts {
  std::string host;       // without brackets
  std::uint16_t port = 80;
  std::string host_port;  // the pool's key and the Host header
  std::string target;     // empty if the URL has no path
};

std::optional<url_parts> parse_url(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (url.size() < scheme.size() || !iequals(url.substr(0, scheme.size()), scheme)) return std::nullopt;
  url.remove_prefix(scheme.size());
  const std::size_t slash = url.find_first_of("/?");
  std::string_view authority = url.substr(0, slash);
  url_parts out;
  if (slash != std::string_view::npos) {
    out.target = std::string(url.substr(slash));
    if (out.target.front() == '?') out.target.insert(out.target.begin(), '/');
  }
  if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
  std::string_view host = authority, port;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = authority.substr(1, close - 1);
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
    }
  } else if (const std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return std::nullopt;
  if (!port.empty()) {
    unsigned p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc() || end != port.data() + port.size() || p == 0 || p > 65535) return std::nullopt;
    out.port = static_cast<std::uint16_t>(p);
  }
  out.host = std::string(host);
  out.host_port = std::string(authority);
  return out;
}

net::until until_of(const services::deadline& d) { return d.is_never() ? net::until{} : net::until{d.when()}; }

struct pool_ready {
  std::uint64_t tag;
};

}  // namespace

struct client::shared {
  shared() = default;
  shared(const shared&) = delete;
  shared& operator=(const shared&) = delete;
  // The metrics collector reads this state through a plain pointer: removing it waits for a
  // scrape that runs it (grove/metrics.hpp), so it never reads a freed client.
  ~shared() {
    if (metrics_id) metrics::remove_collector(metrics_id);
  }
  std::uint64_t metrics_id = 0;
  client_stats stats() const;
  void write_metrics(std::string& out) const;

  struct waiter {
    grove::pid pid;
    std::uint64_t tag = 0;
    std::optional<net::stream> handed;  // an idle connection given to it
    bool slot = false;                  // or a slot to open one
  };
  struct idle_conn {
    net::stream s;
    clock::time_point since;
  };
  struct host_pool {
    std::mutex lock;
    std::vector<idle_conn> idle;             // guarded by lock; most recent last
    std::size_t open = 0;                    // guarded by lock: in use + idle
    std::deque<std::shared_ptr<waiter>> waiters;  // guarded by lock
  };

  client_options options;
  mutable std::mutex pools_lock;
  std::unordered_map<std::string, std::unique_ptr<host_pool>> pools;  // guarded by pools_lock; never erased
  std::atomic<std::uint64_t> next_tag{1};  // relaxed: uniqueness only

  internal::tally requests, attempts, retries, replays, responses, in_flight, connects, reused, pool_full, pool_waits, deadline_exceeded,
      connect_errors, io_errors, protocol_errors;
  internal::latency_histogram latency;

  host_pool& pool_for(const std::string& key) {
    std::lock_guard<std::mutex> g(pools_lock);
    auto& p = pools[key];
    if (!p) p = std::make_unique<host_pool>();
    return *p;
  }

  // Gives a connection (reusable or not: then closed) back to its pool: to the oldest waiter, or to
  // the idle list, or frees its slot.
  void give_back(host_pool& p, std::optional<net::stream> s, bool reusable) {
    // Often in a destructor (a lease of a killed caller): the waiter must be woken all the same.
    grove::exit_deferral defer;
    std::optional<net::stream> to_close;
    if (!reusable && s) {
      to_close = std::move(s);
      s.reset();
    }
    std::shared_ptr<waiter> woken;
    {
      std::lock_guard<std::mutex> g(p.lock);
      if (!p.waiters.empty()) {
        woken = std::move(p.waiters.front());
        p.waiters.pop_front();
        if (s) woken->handed = std::move(s);
        else woken->slot = true;
      } else if (s) {
        p.idle.push_back({std::move(*s), clock::now()});
      } else {
        --p.open;
      }
    }
    // After the lock (a send may park the caller, which must not hold a mutex then). The waiter
    // finds its hand-over under the lock even if this message comes after its deadline.
    if (woken) grove::send(woken->pid, pool_ready{woken->tag});
    // to_close closes here: its fd may be reused by the next open at once, which is fine
  }
};

namespace {

using shared = client::shared;

bool peer_closed(const net::stream& s) {
  char b;
  const ssize_t r = ::recv(s.native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r >= 0) return true;  // EOF or unsolicited bytes
  const int e = io::last_errno();  // never plain errno in a process (grove/io.hpp)
  return e != EAGAIN && e != EWOULDBLOCK;  // an error
}

// A connection of a host's pool held by one attempt: given back on every way out.
class lease {
 public:
  lease(shared& sh, shared::host_pool& p) : sh_(sh), p_(p) {}
  lease(const lease&) = delete;
  ~lease() {
    if (held_) sh_.give_back(p_, std::move(s_), false);
  }
  // Takes a connection or a slot, waiting until `d`. False with `why` set otherwise.
  bool acquire(const services::deadline& d, services::failure& why);
  void give_back(bool reusable) {
    held_ = false;
    sh_.give_back(p_, std::move(s_), reusable);
  }
  std::optional<net::stream>& stream() { return s_; }
  bool reused() const noexcept { return reused_; }

 private:
  bool take_idle();  // under p_.lock
  shared& sh_;
  shared::host_pool& p_;
  std::optional<net::stream> s_;
  bool held_ = false;
  bool reused_ = false;
};

bool lease::take_idle() {
  while (!p_.idle.empty()) {
    shared::idle_conn c = std::move(p_.idle.back());
    p_.idle.pop_back();
    if (clock::now() - c.since > sh_.options.idle_timeout || peer_closed(c.s)) {
      --p_.open;  // c closes as it goes
      continue;
    }
    s_ = std::move(c.s);
    reused_ = true;
    return true;
  }
  return false;
}

bool lease::acquire(const services::deadline& d, services::failure& why) {
  std::shared_ptr<shared::waiter> w;
  {
    std::lock_guard<std::mutex> g(p_.lock);
    if (take_idle()) return held_ = true;
    if (p_.open < sh_.options.max_connections_per_host) {
      ++p_.open;
      return held_ = true;  // a slot: the caller connects
    }
    if (!sh_.options.wait_for_connection) {
      sh_.pool_full.add();
      why = services::errc::pool_full;
      return false;
    }
    w = std::make_shared<shared::waiter>();
    w->pid = grove::self();
    w->tag = sh_.next_tag.fetch_add(1, std::memory_order_relaxed);
    p_.waiters.push_back(w);
  }
  sh_.pool_waits.add();
  // Waits for the hand-over (or the deadline). On every way out, unwinding included, the waiter
  // leaves the queue and keeps, or gives back, what it was handed.
  struct leave_queue {
    lease& l;
    std::shared_ptr<shared::waiter>& w;
    bool got = false;
    ~leave_queue() {
      std::optional<net::stream> give;
      bool slot = false;
      {
        std::lock_guard<std::mutex> g(l.p_.lock);
        auto& q = l.p_.waiters;
        if (auto it = std::find(q.begin(), q.end(), w); it != q.end()) q.erase(it);
        if (w->handed || w->slot) {
          if (got) {
            l.s_ = std::move(w->handed);
            l.reused_ = static_cast<bool>(l.s_);
            l.held_ = true;
            return;
          }
          give = std::move(w->handed);
          slot = w->slot;
        }
      }
      if (give || slot) l.sh_.give_back(l.p_, std::move(give), static_cast<bool>(give));
    }
  } leave{*this, w};
  const auto left = d.is_never() ? std::chrono::nanoseconds(grove::detail::never_ns)
                                 : std::chrono::duration_cast<std::chrono::nanoseconds>(d.remaining());
  const std::uint64_t tag = w->tag;
  auto ready = [tag](const pool_ready& r) { return r.tag == tag; };
  const bool woken = grove::receive(grove::when(ready, [](const pool_ready&) { return true; }), grove::after(left, [] { return false; }));
  {
    std::lock_guard<std::mutex> g(p_.lock);
    auto& q = p_.waiters;  // out of the queue now: nothing can be handed to us after this
    if (auto it = std::find(q.begin(), q.end(), w); it != q.end()) q.erase(it);
    leave.got = w->handed || w->slot;  // handed over, even if the deadline came just after
  }
  if (leave.got && !woken)  // handed over after the deadline: its message must not stay in our mailbox
    grove::receive(grove::when(ready, [](const pool_ready&) {}), grove::after(std::chrono::seconds(0), [] {}));
  if (leave.got) return true;  // leave's destructor moves it into the lease
  why = services::errc::deadline_exceeded;
  return false;
}

services::failure from_net(const std::error_code& ec) {
  if (ec == grove::errc::timeout) return services::errc::deadline_exceeded;
  return services::failure(ec);
}

}  // namespace

client::client(client_options options) : state_(std::make_shared<shared>()) {
  if (options.max_connections_per_host == 0) options.max_connections_per_host = 1;
  state_->options = std::move(options);
  if (!state_->options.metrics_name.empty()) {
    const shared* sh = state_.get();
    state_->metrics_id = metrics::add_collector([sh](std::string& out) { sh->write_metrics(out); });
  }
}

services::outcome<response> client::send(std::string_view url, request req, const services::deadline& d) {
  return send_with(url, std::move(req), d, state_->options.retry ? &*state_->options.retry : nullptr);
}

services::outcome<response> client::send(std::string_view url, request req, const services::deadline& d,
                                         const services::retry_policy& policy) {
  return send_with(url, std::move(req), d, &policy);
}

services::outcome<response> client::get(std::string_view url, const services::deadline& d) { return send(url, request{}, d); }

services::outcome<response> client::post(std::string_view url, std::string body, std::string_view content_type,
                                         const services::deadline& d) {
  request r;
  r.method = "POST";
  r.body = std::move(body);
  r.headers.set("Content-Type", content_type);
  return send(url, std::move(r), d);
}

namespace {

// One attempt on one connection. `unanswered` is set when it failed on a reused connection that
// ended (closed, reset, or refused the write) before one byte of the response came: the server
// closed it as it went idle, and send_with may replay the request. Such a failure is not counted
// here; send_with counts it as a replay or an I/O error.
services::outcome<response> attempt(shared& sh, const url_parts& u, const request& req, const services::deadline& d,
                                    bool& unanswered) {
  sh.attempts.add();
  sh.in_flight.add();
  struct in_flight_guard {
    shared& sh;
    ~in_flight_guard() { sh.in_flight.sub(); }
  } in_flight{sh};
  const auto t0 = clock::now();
  auto count = [&](services::failure f) -> services::outcome<response> {
    if (f.code == services::errc::deadline_exceeded) sh.deadline_exceeded.add();
    return f;
  };
  if (d.has_passed()) return count(services::errc::deadline_exceeded);

  lease l(sh, sh.pool_for(u.host_port));
  services::failure why;
  if (!l.acquire(d, why)) return count(why);
  if (l.reused()) sh.reused.add();
  if (!l.stream()) {  // a slot: resolve and connect
    auto addrs = net::resolve(u.host, u.port, until_of(d));
    if (!addrs) {
      if (addrs.error() == grove::errc::timeout) return count(services::errc::deadline_exceeded);
      sh.connect_errors.add();
      return count(services::failure(make_error_code(errc::resolve_failed)));
    }
    std::error_code last;
    for (const auto& a : *addrs) {
      auto s = net::stream::connect(a, until_of(d));
      if (s) {
        (void)s->set_nodelay(true);
        l.stream() = std::move(*s);
        break;
      }
      last = s.error();
      if (last == grove::errc::timeout) break;
    }
    if (!l.stream()) {
      if (last != grove::errc::timeout) sh.connect_errors.add();
      return count(from_net(last));
    }
    sh.connects.add();
  }
  net::stream& s = *l.stream();

  std::string out;
  internal::append_request(out, req, u.host_port);
  // A server may answer before it has read the whole request (a 413 for a body it will not take)
  // and close, and our write then fails: its answer may still be in the socket, so a failed write
  // is followed by a read (Go's transport does the same), and only without an answer is the
  // write's error the call's. A connection whose request was not all written is never reused.
  std::error_code write_error;
  if (auto ec = s.write_all(out, until_of(d))) {
    if (ec == grove::errc::timeout) return count(from_net(ec));
    write_error = ec;
  }
  const bool reused = l.reused();
  bool got_bytes = false;
  const auto ended = [&](services::failure f) -> services::outcome<response> {
    if (reused && !got_bytes) {
      unanswered = true;
      return f;
    }
    sh.io_errors.add();
    return count(f);
  };
  internal::message_parser p(internal::message_parser::kind::response,
                             {sh.options.max_response_head_bytes, sh.options.max_response_body_bytes});
  if (req.method == "HEAD") p.expect_no_body();
  std::string buf(read_chunk, '\0');
  using state = internal::message_parser::state;
  for (;;) {
    auto n = s.read_some(buf.data(), buf.size(), until_of(d));
    if (!n) {
      if (write_error) return ended(from_net(write_error));
      if (n.error() == grove::errc::timeout) return count(from_net(n.error()));
      return ended(from_net(n.error()));
    }
    state st;
    bool extra = false;  // bytes after the whole response that nobody asked for
    if (*n == 0) {
      st = p.finish();
      if (st != state::complete) {  // the peer closed before the whole response came
        if (write_error) return ended(from_net(write_error));
        return ended(services::failure(make_error_code(errc::closed_early)));
      }
    } else {
      got_bytes = true;
      auto r = p.feed(buf.data(), *n);
      st = r.st;
      extra = st == state::complete && r.used != *n;
    }
    if (st == state::failed) {
      if (write_error) return ended(from_net(write_error));
      sh.protocol_errors.add();
      const bool big = p.why() == internal::message_parser::failure::head_too_large ||
                       p.why() == internal::message_parser::failure::body_too_large;
      return count(services::failure(make_error_code(big ? errc::message_too_large : errc::bad_message)));
    }
    if (st == state::complete) {
      const bool keep = p.keep_alive() && req.keep_alive && !extra && !write_error;
      response resp = p.take_response();
      const std::string* conn = resp.headers.find("connection");
      l.give_back(keep && !(conn && iequals(*conn, "close")));
      sh.responses.add();
      internal::record_latency(sh.latency, t0);
      return resp;
    }
  }
}

}  // namespace

services::outcome<response> client::send_with(std::string_view url, request req, const services::deadline& d,
                                              const services::retry_policy* policy) {
  shared& sh = *state_;
  sh.requests.add();
  auto u = parse_url(url);
  if (!u) return services::failure(make_error_code(errc::bad_url));
  if (!u->target.empty()) req.target = u->target;
  if (!req.headers.contains("user-agent") && !sh.options.user_agent.empty()) req.headers.set("User-Agent", sh.options.user_agent);
  // An idempotent request whose reused connection ended before any of the response came is
  // replayed at once on another connection (RFC 9112 9.3.1 allows it; Go's transport does the
  // same, for the same methods): the server closed that connection as it went idle, and the race
  // between its close and our request is one no caller can avoid. Each replay drops one pooled
  // connection and a new one is never replayed, so at most max_connections_per_host of them.
  const bool replayable = req.method == "GET" || req.method == "HEAD" || req.method == "OPTIONS" ||
                          req.method == "TRACE" || req.headers.contains("idempotency-key") ||
                          req.headers.contains("x-idempotency-key");
  auto once = [&](const services::deadline& dd) -> services::outcome<response> {
    for (std::size_t replays = 0;; ++replays) {
      bool unanswered = false;
      auto r = attempt(sh, *u, req, dd, unanswered);
      if (!unanswered) return r;
      if (!replayable || replays >= sh.options.max_connections_per_host) {
        sh.io_errors.add();
        return r;
      }
      sh.replays.add();
    }
  };
  if (!policy) return once(d);
  unsigned tries = 0;
  return services::retry(*policy, d, [&](const services::deadline& dd) {
    if (tries++ > 0) sh.retries.add();
    return once(dd);
  });
}

client_stats client::stats() const { return state_->stats(); }

client_stats client::shared::stats() const {
  const shared& sh = *this;
  client_stats s;
  s.requests = sh.requests.get();
  s.attempts = sh.attempts.get();
  s.retries = sh.retries.get();
  s.replays = sh.replays.get();
  s.responses = sh.responses.get();
  s.in_flight = sh.in_flight.get();
  s.connects = sh.connects.get();
  s.reused = sh.reused.get();
  s.pool_full = sh.pool_full.get();
  s.pool_waits = sh.pool_waits.get();
  s.deadline_exceeded = sh.deadline_exceeded.get();
  s.connect_errors = sh.connect_errors.get();
  s.io_errors = sh.io_errors.get();
  s.protocol_errors = sh.protocol_errors.get();
  s.latency_us_log2 = internal::snapshot(sh.latency);
  return s;
}

std::size_t client::idle_connections(std::string_view host_port) const {
  shared& sh = *state_;
  std::lock_guard<std::mutex> g(sh.pools_lock);
  auto it = sh.pools.find(std::string(host_port));
  if (it == sh.pools.end()) return 0;
  std::lock_guard<std::mutex> g2(it->second->lock);
  return it->second->idle.size();
}

// client_options::metrics_name: the stats as Prometheus families, on the scraping thread.
void client::shared::write_metrics(std::string& out) const {
  const client_stats s = stats();
  const std::string name = metrics::label("client", options.metrics_name);
  const auto d = [](auto v) { return static_cast<double>(v); };
  using metrics::kind;
  metrics::write_family(out, "grove_http_client_requests_total", kind::counter, "Calls made.", {{name, d(s.requests)}});
  metrics::write_family(out, "grove_http_client_attempts_total", kind::counter, "Attempts made (calls and retries).",
                        {{name, d(s.attempts)}});
  metrics::write_family(out, "grove_http_client_retries_total", kind::counter, "Attempts after a failed one.",
                        {{name, d(s.retries)}});
  metrics::write_family(out, "grove_http_client_replays_total", kind::counter,
                        "Idempotent requests replayed after a reused connection closed unanswered.", {{name, d(s.replays)}});
  metrics::write_family(out, "grove_http_client_responses_total", kind::counter, "Attempts that got a whole response.",
                        {{name, d(s.responses)}});
  metrics::write_family(out, "grove_http_client_in_flight", kind::gauge, "Attempts under way.", {{name, d(s.in_flight)}});
  metrics::write_family(out, "grove_http_client_connects_total", kind::counter, "Connections opened.", {{name, d(s.connects)}});
  metrics::write_family(out, "grove_http_client_reused_total", kind::counter, "Attempts on an idle pooled connection.",
                        {{name, d(s.reused)}});
  metrics::write_family(out, "grove_http_client_pool_waits_total", kind::counter, "Attempts that waited for a connection.",
                        {{name, d(s.pool_waits)}});
  metrics::write_family(out, "grove_http_client_failures_total", kind::counter, "Attempts that failed, by why.",
                        {{name + "," + metrics::label("why", "pool_full"), d(s.pool_full)},
                         {name + "," + metrics::label("why", "deadline_exceeded"), d(s.deadline_exceeded)},
                         {name + "," + metrics::label("why", "connect"), d(s.connect_errors)},
                         {name + "," + metrics::label("why", "io"), d(s.io_errors)},
                         {name + "," + metrics::label("why", "protocol"), d(s.protocol_errors)}});
  metrics::write_family(out, "grove_http_client_latency_seconds", kind::gauge,
                        "Attempt latency quantiles since the start (log2 buckets' upper bounds).",
                        {{name + "," + metrics::label("quantile", "0.5"), s.latency_quantile_ms(0.5) / 1e3},
                         {name + "," + metrics::label("quantile", "0.9"), s.latency_quantile_ms(0.9) / 1e3},
                         {name + "," + metrics::label("quantile", "0.99"), s.latency_quantile_ms(0.99) / 1e3}});
}

double client_stats::latency_quantile_ms(double q) const noexcept { return internal::latency_quantile_ms(latency_us_log2, q); }

}  // namespace grove::http
