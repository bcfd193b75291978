// grove/http/client.hpp: an HTTP/1.1 client with a bounded connection pool per host.
//
//   http::client backends({.max_connections_per_host = 5});      // share one: it is thread-safe
//   auto r = backends.get("http://127.0.0.1:8081/price?item=7", svc::deadline::after(1200ms));
//   if (!r) ... r.error() == svc::errc::deadline_exceeded / svc::errc::pool_full / std::errc::connection_refused
//   else if (r->status == 200) use(r->body);
//
// One call, one attempt: the client never retries on its own. Pass a services::retry_policy
// (client_options::retry, or per call) and it retries within the same deadline, each retry counted
// in the policy's stats and in the client's. The one exception is the keep-alive race: a server
// may close an idle connection just as a request goes out on it. A request that is idempotent (GET,
// HEAD, OPTIONS, TRACE, or one with an Idempotency-Key header: Go's rule) and whose reused
// connection ended before one byte of the response came is sent again at once on another
// connection (counted in stats().replays); any other request gets the error.
//
// The deadline covers everything: waiting for a pooled connection, resolving the host, connecting,
// writing the request and reading the whole response. At the deadline the call returns
// services::errc::deadline_exceeded (never later: the connection in use is closed, since a
// response may still be coming on it).
//
// The pool (a bulkhead): at most max_connections_per_host connections per host:port, in use or
// idle. A call that finds them all in use waits for one until its deadline (FIFO), or, with
// wait_for_connection = false, fails at once with services::errc::pool_full. Idle connections are
// reused (keep-alive) unless the server said Connection: close, they were idle for longer than
// idle_timeout, or the server has closed them meanwhile (checked without a syscall's wait before
// reuse). A connection in use belongs to the calling process: if that process is killed, the
// connection is closed and its slot freed.
//
// Errors: services::errc::deadline_exceeded, services::errc::pool_full, socket errors as std::errc
// (connection_refused, connection_reset, ...), http::errc (bad_message, message_too_large,
// bad_url, closed_early, resolve_failed). An HTTP error status (404, 503) is a response, not a
// failure. Interim responses (100 Continue, 103 Early Hints) before the final one are skipped, up to
// 16 of them. A server that answers before it has read the whole request (413 for a large upload)
// and closes: the call returns that answer, not the failed write's error. Calls need a calling
// process (or a scoped_process).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <grove/services/deadline.hpp>
#include <grove/services/outcome.hpp>
#include <grove/services/retry.hpp>

#include <grove/http/message.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::http {

struct client_options {
  std::size_t max_connections_per_host = 10;   // the bulkhead's size (>= 1)
  bool wait_for_connection = true;             // false: a full pool is services::errc::pool_full at once
  std::chrono::milliseconds idle_timeout{30'000};  // idle pooled connections older than this are closed
  std::size_t max_response_head_bytes = 64 * 1024;
  std::size_t max_response_body_bytes = 64 * 1024 * 1024;
  std::optional<services::retry_policy> retry{};   // none: one attempt per call
  std::string user_agent = "grove-http/0.1";
  // Not empty: the client's stats are on grove::metrics's page as grove_http_client_*{client="<name>"}
  // while any copy of the client lives.
  std::string metrics_name{};
};

// Counters since the client was made (relaxed atomics inside: a snapshot may mix moments).
struct client_stats {
  std::uint64_t requests = 0;          // calls
  std::uint64_t attempts = 0;          // attempts made (requests + retries + replays)
  std::uint64_t retries = 0;           // attempts after a failed one (only with a retry policy)
  std::uint64_t replays = 0;           // idempotent requests sent again: a reused connection closed unanswered
  std::uint64_t responses = 0;         // attempts that got a whole response (any status)
  std::size_t in_flight = 0;           // attempts under way now
  std::uint64_t connects = 0;          // connections opened
  std::uint64_t reused = 0;            // attempts that took an idle pooled connection
  std::uint64_t pool_full = 0;         // refused at once (wait_for_connection = false)
  std::uint64_t pool_waits = 0;        // attempts that waited for a connection
  std::uint64_t deadline_exceeded = 0;
  std::uint64_t connect_errors = 0;    // refused, unreachable, resolve failures
  std::uint64_t io_errors = 0;         // resets, closes before the response
  std::uint64_t protocol_errors = 0;   // malformed or too large responses
  // Attempt latency (from the call to the whole response): log2 buckets of microseconds.
  std::array<std::uint64_t, 32> latency_us_log2{};
  double latency_quantile_ms(double q) const noexcept;
};

class client {
 public:
  explicit client(client_options options = {});
  // Copies share the pools and the counters.
  client(const client&) = default;
  client& operator=(const client&) = default;

  // Sends `req` to the server at `url` ("http://host[:port]": req.target is the path) or, with
  // the url's path, replaces req.target by it.
  services::outcome<response> send(std::string_view url, request req, const services::deadline& d);
  // As send, with this policy instead of client_options::retry.
  services::outcome<response> send(std::string_view url, request req, const services::deadline& d,
                                   const services::retry_policy& policy);
  services::outcome<response> get(std::string_view url, const services::deadline& d);
  services::outcome<response> post(std::string_view url, std::string body, std::string_view content_type,
                                   const services::deadline& d);

  client_stats stats() const;
  // Idle connections now pooled for host:port (for tests and dashboards).
  std::size_t idle_connections(std::string_view host_port) const;

  struct GROVE_INTERNAL shared;  // pools and counters (client.cpp)

 private:
  services::outcome<response> send_with(std::string_view url, request req, const services::deadline& d,
                                        const services::retry_policy* policy);
  std::shared_ptr<shared> state_;
};

}  // namespace grove::http

GROVE_PUBLIC_END
