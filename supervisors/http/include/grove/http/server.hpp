// grove/http/server.hpp: an HTTP/1.1 server, a process per connection.
//
//   auto srv = http::server::start_link({.address = net::address::loopback(8080)},
//       [](const http::request& req, const svc::deadline& d) {
//         auto user = svc::call(users, get{req.target}, d);     // the request's deadline travels on
//         if (!user) return http::response{.status = 503};
//         return http::response{.status = 200, .body = user->name};
//       }).value();
//   ...
//   srv.stop(5s);   // stop accepting, let requests in flight finish for up to 5 s, close the rest
//
// Each connection is a process that reads a request, calls the handler in that process (so the
// handler may block, call servers, make HTTP calls: it parks the process, not a worker), writes the
// response and goes on with the next request on the same connection (keep-alive; pipelined
// requests are answered in order). A target in absolute form ("http://host/path", as sent to a
// proxy) reaches the handler in origin form ("/path"). The handler gets the request's deadline:
// handler_timeout from the moment the request's head came. A handler that throws gets the client a
// 500 (the exception is logged); a handler that calls grove::exit ends the connection. Every
// response carries Date unless the handler set one.
//
// Limits, each with its answer (and the connection closed after it, since what follows cannot be
// trusted; except after a 408 the server first reads and drops what the client still sends, for
// up to 2 s, so that its answer is not lost to a reset): a malformed request 400 (an HTTP/1.1
// request without Host, or any with two, or whitespace before a field's colon, included); a
// version other than HTTP/1.x 505; a transfer coding other than chunked 501; a head (request line
// and header fields) over max_head_bytes 431; a body over max_body_bytes 413 (at once from
// Content-Length, before reading the body); a head that has not fully come header_timeout after
// its first byte 408 (slowloris); a connection with no request for idle_timeout is closed
// silently; over max_connections, a new connection gets 503 and is closed. A request with
// `Expect: 100-continue` (curl sends it for large uploads) gets a 100 (Continue) once its head
// has passed these limits, or their answer without one; another expectation 417. A client that
// goes away before its response costs nothing but the handler's work (stats().disconnects).
//
// The server is a process (pid()) that traps exits and is linked to its caller (start_link) or not
// (start); it, its acceptor and its connections live in the runtime like any processes (killable,
// monitorable, shown by introspection). It stops: on stop(drain), or when its parent's exit signal
// reaches it (a supervisor stopping it) or the runtime stops, then with default_drain (server_child
// gives the child spec a shutdown timeout a second above it), or killed (then every connection is
// killed at once). A stop
// closes the listener first, then idle connections; requests in flight finish (their responses
// carry "Connection: close") until the drain deadline, when what is left is killed.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <grove/errc.hpp>
#include <grove/net.hpp>
#include <grove/pid.hpp>
#include <grove/services/deadline.hpp>

#include <grove/http/message.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::supervisor {
struct child_spec;
}

namespace grove::http {

using handler = std::function<response(const request&, const services::deadline&)>;

struct server_options {
  net::address address = net::address::loopback(0);   // port 0: a free port (local_address() says which)
  int backlog = 1024;
  bool reuse_port = false;                              // SO_REUSEPORT
  std::size_t max_head_bytes = 16 * 1024;               // 431 past it
  std::size_t max_body_bytes = 1024 * 1024;             // 413 past it
  std::chrono::milliseconds header_timeout{10'000};     // 408 past it (from the head's first byte)
  std::chrono::milliseconds body_timeout{30'000};       // 408 past it (from the end of the head)
  std::chrono::milliseconds idle_timeout{60'000};       // a connection with no request: closed
  std::chrono::milliseconds handler_timeout{30'000};    // the handler's deadline
  std::chrono::milliseconds write_timeout{30'000};      // a client that does not read its response: closed
  std::size_t max_connections = 10'000;                 // 503 past it
  std::chrono::milliseconds default_drain{5'000};       // for a stop by exit signal
  std::string name{};                                   // registered name of the server process, if set
  // If set, the server's stats are on grove::metrics's page (grove/metrics.hpp) while it runs, as
  // grove_http_server_*{server="<metrics_name>"}.
  std::string metrics_name{};
};

// Counters since the start (relaxed atomics inside: a snapshot may mix moments).
struct server_stats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_refused = 0;  // over max_connections (503)
  std::size_t connections_open = 0;
  std::uint64_t requests = 0;             // requests whose head was read
  std::size_t in_flight = 0;              // in their handler or being written now
  std::array<std::uint64_t, 6> responses_by_class{};  // [1]..[5]: 1xx..5xx written
  std::uint64_t malformed = 0;            // 400; 501 and 505 (a transfer coding or HTTP version not spoken)
  std::uint64_t too_large = 0;            // 413 and 431
  std::uint64_t timed_out = 0;            // 408, and idle connections closed
  std::uint64_t handler_exceptions = 0;   // 500 for a handler that threw
  std::uint64_t disconnects = 0;          // clients gone before their response was written
  // Handler latency (from the head's arrival to the response written): log2 buckets of
  // microseconds, bucket i counting [2^i, 2^(i+1)) µs (bucket 0 also under 1 µs).
  std::array<std::uint64_t, 32> latency_us_log2{};
  // The q-quantile (0..1) of the latency histogram, in ms (the bucket's upper bound); 0 if empty.
  double latency_quantile_ms(double q) const noexcept;
};

class server {
 public:
  // Listens and starts serving. Errors: the listen's (EADDRINUSE, EACCES, ...), errc::not_running,
  // errc::not_in_process (start_link needs a caller to link to), errc::already_registered (name).
  static result<server> start_link(server_options options, handler h);
  static result<server> start(server_options options, handler h);

  server() = default;
  grove::pid pid() const noexcept { return pid_; }
  const net::address& local_address() const noexcept { return address_; }
  server_stats stats() const;

  // Graceful stop (see the file comment); returns when every connection has closed, or
  // drain + 1 s at the latest. False if the server was not running. From a process or a
  // scoped_process.
  bool stop(std::chrono::milliseconds drain = std::chrono::seconds(5));

  struct GROVE_INTERNAL shared;  // the server's state, shared by its processes (server.cpp)

 private:
  static result<server> start_impl(server_options options, handler h, bool link);

  grove::pid pid_;
  net::address address_;
  std::shared_ptr<shared> state_;
};

// A supervisor child spec that start_links a server with these options and handler at each
// (re)start. Needs grove::supervisors.
supervisor::child_spec server_child(std::string id, server_options options, handler h);

}  // namespace grove::http

GROVE_PUBLIC_END
