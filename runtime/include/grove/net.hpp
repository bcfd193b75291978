// grove/net.hpp: TCP, UDP and Unix-domain sockets for processes.
//
//   auto l = grove::net::listener::listen(grove::net::address::loopback(8080)).value();
//   grove::spawn([l = std::move(l)]() mutable {
//     for (;;) {
//       auto s = l.accept();                                    // parks this process, not a worker
//       if (!s) continue;                                       // EMFILE, ...: the listener goes on
//       grove::spawn([s = std::move(*s)]() mutable {            // a process per connection
//         char buf[4096];
//         while (auto n = s.read_some(buf, sizeof buf, 30s))    // 30 s without a byte: timeout
//           if (*n == 0 || s.write_all(buf, *n, 5s)) break;     // 0: the peer closed
//       });
//     }
//   });
//
// Every blocking operation parks the calling process until the socket is ready (grove/io.hpp: one
// epoll for the runtime, readiness-based, so a buffer on the stack is safe) and takes an `until`: a
// duration from now, a steady_clock time point (services::deadline::when()), or nothing (no limit).
// It returns by then with errc::timeout, never later. Errors are std::error_codes: the socket's
// errno in std::generic_category (ECONNRESET, EPIPE, ECONNREFUSED, EMFILE, ... each its own code;
// compare with std::errc::connection_reset etc.), grove::errc::timeout, grove::errc::end_of_file
// (read_exact before all bytes came), grove::errc::not_in_process outside a process. Nothing here
// raises SIGPIPE or changes a signal's handling: writes use MSG_NOSIGNAL.
//
// Sockets own their fd (move-only) and close it when destroyed, so a process that is killed while
// it waits in accept, connect or read leaves nothing open (resources_in_use().fds counts them). One
// process reads a socket at a time, and one writes (another waiting in the same direction gets
// EBUSY); a socket may be moved to another process, as a message. Call from a process or a
// scoped_process.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <grove/duration.hpp>
#include <grove/errc.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::net {

// When a blocking socket operation gives up: a duration from now, a time point, or never.
class until {
 public:
  until() noexcept = default;  // never
  template <class Rep, class Period>
  until(std::chrono::duration<Rep, Period> d) noexcept : timeout_ns_(grove::detail::timeout_ns(d)), relative_(true) {}  // NOLINT
  until(std::chrono::steady_clock::time_point t) noexcept;  // NOLINT
  // Steady-clock nanoseconds (saturated; never: 2^63 - 1), for a deadline taken now.
  std::uint64_t deadline_ns() const noexcept;

 private:
  std::int64_t timeout_ns_ = grove::detail::never_ns;  // relative: from now; else absolute
  bool relative_ = true;
};

// An IPv4, IPv6 or Unix-domain socket address.
class address {
 public:
  address() noexcept;  // unspecified (family AF_UNSPEC)
  // "127.0.0.1:8080", "[::1]:8080", "unix:/path/to/socket" (a numeric host only: no name lookup).
  static result<address> parse(std::string_view text);
  static address loopback(std::uint16_t port, bool ipv6 = false) noexcept;
  static address any(std::uint16_t port, bool ipv6 = false) noexcept;  // 0.0.0.0 / ::
  static result<address> unix_path(std::string_view path);             // ENAMETOOLONG past 107 bytes
  static address from(const sockaddr* sa, socklen_t len) noexcept;

  int family() const noexcept;
  std::uint16_t port() const noexcept;  // 0 for a Unix address
  std::string to_string() const;        // the form parse() reads
  const sockaddr* data() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
  socklen_t size() const noexcept { return size_; }

 private:
  sockaddr_storage storage_;
  socklen_t size_ = 0;
};

namespace detail {
// An owned, non-blocking fd registered with the runtime's poller for its life.
class socket_handle {
 public:
  socket_handle() noexcept = default;
  ~socket_handle() { close(); }
  socket_handle(socket_handle&& o) noexcept;
  socket_handle& operator=(socket_handle&& o) noexcept;
  socket_handle(const socket_handle&) = delete;
  socket_handle& operator=(const socket_handle&) = delete;

  // Takes fd (made non-blocking) and registers it. On failure closes fd and returns the error.
  static result<socket_handle> adopt(int fd);
  int fd() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  void close() noexcept;
  // Waits for readiness in one direction until the deadline.
  std::error_code wait(bool writable, std::uint64_t deadline_ns) const;
  // A read that returned less than it asked (the socket was empty then), and whether the reads
  // since may skip a recv and wait first (net.cpp, stream::read_some).
  void note_emptied(bool emptied) const noexcept;
  bool may_wait_first() const noexcept;

 private:
  int fd_ = -1;
  void* state_ = nullptr;               // its io_state in the runtime's table
  std::shared_ptr<void> runtime_;       // keeps that runtime's state (and the table) alive
};
}  // namespace detail

// A connected stream socket (TCP or Unix).
class stream {
 public:
  stream() noexcept = default;
  // Connects, waiting until the connection is made or `u`: ECONNREFUSED, ENETUNREACH, errc::timeout.
  static result<stream> connect(const address& to, until u = {});

  // Reads what is there, at most n bytes, waiting until some arrive or `u`. 0: the peer closed.
  result<std::size_t> read_some(void* buf, std::size_t n, until u = {});
  // Waits until the socket may have something to read (data, the peer's end-of-file, an error)
  // without reading it, so a connection that is idle most of the time needs no buffer meanwhile.
  // It may return early (a readiness that an earlier read already used up): the read after it
  // then waits, as any read does. No syscall of its own.
  std::error_code wait_readable(until u = {});
  // Reads exactly n bytes (errc::end_of_file if the peer closes first; what came is in buf).
  std::error_code read_exact(void* buf, std::size_t n, until u = {});
  // Writes all n bytes (partial writes are continued), waiting while the socket is full.
  std::error_code write_all(const void* buf, std::size_t n, until u = {});
  std::error_code write_all(std::string_view text, until u = {}) { return write_all(text.data(), text.size(), u); }
  // Writes what the socket takes now of the parts, in order, with one syscall and never waits: the
  // bytes written, which may stop anywhere in the parts, and 0 when the socket is full (or the
  // parts are empty). Empty parts are skipped; at most the first 16 non-empty ones go in one call.
  // The peer gone: EPIPE or ECONNRESET (never SIGPIPE). For a thread that must not park (it holds
  // a lock, or is not a process) and keeps what did not go for later.
  result<std::size_t> try_write(std::span<const std::string_view> parts) noexcept;
  // No more writes: the peer reads end-of-file.
  std::error_code shutdown_write() noexcept;
  void close() noexcept { h_.close(); }
  bool is_open() const noexcept { return static_cast<bool>(h_); }

  std::error_code set_nodelay(bool on) noexcept;    // TCP_NODELAY
  std::error_code set_keepalive(bool on) noexcept;  // SO_KEEPALIVE
  result<address> local_address() const;
  result<address> peer_address() const;
  int native_handle() const noexcept { return h_.fd(); }

 private:
  friend class listener;
  explicit stream(detail::socket_handle h) noexcept : h_(std::move(h)) {}
  detail::socket_handle h_;
};

// A listening stream socket (TCP or Unix).
class listener {
 public:
  struct options {
    int backlog = 1024;          // listen(2)'s
    bool reuse_address = true;   // SO_REUSEADDR (TCP)
    bool reuse_port = false;     // SO_REUSEPORT (TCP)
  };
  listener() noexcept = default;
  // EADDRINUSE, EACCES, EMFILE, ... A Unix address's file must not exist yet.
  static result<listener> listen(const address& at, options o);
  static result<listener> listen(const address& at) { return listen(at, options{}); }
  // The next connection, waiting until one comes or `u`. EMFILE/ENFILE: the connection stays in the
  // backlog and the listener is intact; accept again once fds are free.
  result<stream> accept(until u = {});
  void close() noexcept { h_.close(); }
  bool is_open() const noexcept { return static_cast<bool>(h_); }
  result<address> local_address() const;
  int native_handle() const noexcept { return h_.fd(); }

 private:
  detail::socket_handle h_;
};

// A datagram socket (UDP, or a Unix datagram socket).
class datagram_socket {
 public:
  datagram_socket() noexcept = default;
  static result<datagram_socket> bind(const address& at);
  // Sends one datagram (EMSGSIZE if it is too large), waiting while the socket's buffer is full.
  std::error_code send_to(const void* buf, std::size_t n, const address& to, until u = {});
  // Receives one datagram into buf (truncated to n: MSG_TRUNC semantics are not reported), with its sender.
  result<std::pair<std::size_t, address>> receive_from(void* buf, std::size_t n, until u = {});
  void close() noexcept { h_.close(); }
  result<address> local_address() const;
  int native_handle() const noexcept { return h_.fd(); }

 private:
  detail::socket_handle h_;
};

// The addresses of a host name (getaddrinfo: /etc/hosts, DNS), for a port: IPv4 and IPv6, in the
// resolver's order. A numeric host ("127.0.0.1", "::1") needs no lookup. The lookup runs on a
// blocking thread (grove/blocking.hpp) while the caller waits until `u`; at `u` the caller gets
// errc::timeout and a lookup still running finishes on its own, its answer dropped. A name that
// does not resolve: an error in resolve_category() (getaddrinfo's EAI_* code and gai_strerror's
// words). Needs a calling process.
result<std::vector<address>> resolve(std::string_view host, std::uint16_t port, until u = {});
const std::error_category& resolve_category() noexcept;

}  // namespace grove::net

GROVE_PUBLIC_END
