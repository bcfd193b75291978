// net.cpp: sockets for processes (grove/net.hpp), on the runtime's poller (io.cpp).
//
// Every operation is the same loop: make the non-blocking syscall; on EAGAIN wait for readiness in
// that direction (the socket's io_state, registered edge-triggered for the socket's life) until the
// deadline; try again. The deadline is taken once, when the operation starts, so retries never
// extend it. EINTR retries at once. The syscall runs while the process runs on its own stack, so
// the caller's buffer may live there (io.cpp, "Readiness, not completion").
#include <grove/net.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <netdb.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include <grove/blocking.hpp>
#include <grove/io.hpp>
#include <grove/message.hpp>
#include <grove/process.hpp>

#include "clock.hpp"
#include "io.hpp"
#include "receive.hpp"
#include "resources.hpp"
#include "scheduler.hpp"

namespace grove::net {

using namespace grove::internal;

namespace {

std::error_code errno_code(int e) { return {e, std::generic_category()}; }
std::error_code last_error() { return errno_code(io::last_errno()); }  // never plain errno: grove/io.hpp

}  // namespace

// ---- until ----

until::until(std::chrono::steady_clock::time_point t) noexcept : relative_(false) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  timeout_ns_ = ns < 0 ? 0 : ns;
}

std::uint64_t until::deadline_ns() const noexcept {
  if (relative_) return deadline_after_ns(timeout_ns_);
  const auto d = static_cast<std::uint64_t>(timeout_ns_);
  return d >= never_deadline_ns ? never_deadline_ns : d;
}

// ---- address ----

address::address() noexcept : storage_{} { storage_.ss_family = AF_UNSPEC; }

address address::from(const sockaddr* sa, socklen_t len) noexcept {
  address a;
  if (len > static_cast<socklen_t>(sizeof a.storage_)) len = sizeof a.storage_;
  std::memcpy(&a.storage_, sa, static_cast<std::size_t>(len));
  a.size_ = len;
  return a;
}

address address::loopback(std::uint16_t port, bool ipv6) noexcept {
  address a;
  if (ipv6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.storage_);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(port);
    s6->sin6_addr = in6addr_loopback;
    a.size_ = sizeof(sockaddr_in6);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.storage_);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.size_ = sizeof(sockaddr_in);
  }
  return a;
}

address address::any(std::uint16_t port, bool ipv6) noexcept {
  address a = loopback(port, ipv6);
  if (ipv6) {
    reinterpret_cast<sockaddr_in6*>(&a.storage_)->sin6_addr = in6addr_any;
  } else {
    reinterpret_cast<sockaddr_in*>(&a.storage_)->sin_addr.s_addr = htonl(INADDR_ANY);
  }
  return a;
}

result<address> address::unix_path(std::string_view path) {
  address a;
  auto* su = reinterpret_cast<sockaddr_un*>(&a.storage_);
  if (path.empty() || path.size() >= sizeof su->sun_path) return errno_code(ENAMETOOLONG);
  su->sun_family = AF_UNIX;
  std::memcpy(su->sun_path, path.data(), path.size());
  su->sun_path[path.size()] = '\0';
  a.size_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return a;
}

result<address> address::parse(std::string_view text) {
  if (text.substr(0, 5) == "unix:") return unix_path(text.substr(5));
  std::string_view host, port_text;
  if (!text.empty() && text.front() == '[') {  // [v6]:port
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return make_error_code(errc::bad_argument);
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return make_error_code(errc::bad_argument);
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535) return make_error_code(errc::bad_argument);
  const std::string h(host);
  address a = loopback(static_cast<std::uint16_t>(port), false);
  if (::inet_pton(AF_INET, h.c_str(), &reinterpret_cast<sockaddr_in*>(&a.storage_)->sin_addr) == 1) return a;
  a = loopback(static_cast<std::uint16_t>(port), true);
  if (::inet_pton(AF_INET6, h.c_str(), &reinterpret_cast<sockaddr_in6*>(&a.storage_)->sin6_addr) == 1) return a;
  return make_error_code(errc::bad_argument);  // not a numeric address (names need a lookup)
}

int address::family() const noexcept { return storage_.ss_family; }

std::uint16_t address::port() const noexcept {
  if (storage_.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  if (storage_.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  return 0;
}

std::string address::to_string() const {
  char buf[INET6_ADDRSTRLEN] = {};
  switch (storage_.ss_family) {
    case AF_INET:
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf, sizeof buf);
      return fmt::format("{}:{}", buf, port());
    case AF_INET6:
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf, sizeof buf);
      return fmt::format("[{}]:{}", buf, port());
    case AF_UNIX:
      return fmt::format("unix:{}", reinterpret_cast<const sockaddr_un*>(&storage_)->sun_path);
    default:
      return "unspecified";
  }
}

// ---- socket_handle ----

namespace detail {

socket_handle::socket_handle(socket_handle&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), state_(std::exchange(o.state_, nullptr)), runtime_(std::move(o.runtime_)) {}

socket_handle& socket_handle::operator=(socket_handle&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
    state_ = std::exchange(o.state_, nullptr);
    runtime_ = std::move(o.runtime_);
  }
  return *this;
}

result<socket_handle> socket_handle::adopt(int fd) {
  runtime_state* rt = current_runtime();
  if (!rt) {
    ::close(fd);
    return make_error_code(errc::not_running);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    const auto e = last_error();
    ::close(fd);
    return e;
  }
  io_state* s = nullptr;
  try {
    s = rt->io.state_for(fd);
  } catch (const std::bad_alloc&) {
    ::close(fd);
    throw;
  }
  if (!s) {
    ::close(fd);
    return errno_code(EMFILE);  // past the runtime's table: as good as out of fds
  }
  // A short read proves the socket empty only for TCP (io.hpp, io_state::short_read_empties).
  int domain = AF_UNSPEC;
  socklen_t domain_len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &domain_len) != 0) domain = AF_UNSPEC;
  if (int e = register_persistent(*rt, fd, s, domain == AF_INET || domain == AF_INET6)) {
    ::close(fd);
    return errno_code(e);
  }
  socket_handle h;
  h.fd_ = fd;
  h.state_ = s;
  h.runtime_ = rt->shared_from_this();
  count_up(resources().fds);
  return h;
}

void socket_handle::close() noexcept {
  if (fd_ < 0) return;
  unregister_persistent(*static_cast<runtime_state*>(runtime_.get()), fd_, static_cast<io_state*>(state_));
  ::close(fd_);
  fd_ = -1;
  state_ = nullptr;
  runtime_.reset();
  count_down(resources().fds);
}

std::error_code socket_handle::wait(bool writable, std::uint64_t deadline_ns) const {
  process* p = current_process();
  if (!p) return make_error_code(errc::not_in_process);
  auto* s = static_cast<io_state*>(state_);
  if (tracing(trace::event_kind::io_wait, p)) [[unlikely]]
    record(trace::event_kind::io_wait, writable ? 1 : 0, static_cast<std::uint32_t>(fd_), p->id().bits());
  begin_wait(*s, writable);
  switch (wait_ready(p, writable ? s->writer : s->reader, deadline_ns)) {
    case io_wait::ready: return {};
    case io_wait::timed_out: return make_error_code(errc::timeout);
    case io_wait::busy: break;
  }
  return errno_code(EBUSY);
}

void socket_handle::note_emptied(bool emptied) const noexcept {
  if (state_) static_cast<io_state*>(state_)->emptied.store(emptied, std::memory_order_relaxed);  // io.hpp says why relaxed
}

bool socket_handle::may_wait_first() const noexcept {
  const auto* s = static_cast<const io_state*>(state_);
  return s && s->emptied.load(std::memory_order_relaxed) && s->short_read_empties.load(std::memory_order_relaxed);  // io.hpp: relaxed
}

}  // namespace detail

namespace {

result<detail::socket_handle> open_socket(int family, int type) {
  const int fd = ::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return last_error();
  return detail::socket_handle::adopt(fd);
}

std::error_code set_flag(int fd, int level, int name, bool on) noexcept {
  const int v = on ? 1 : 0;
  return ::setsockopt(fd, level, name, &v, sizeof v) == 0 ? std::error_code{} : last_error();
}

template <class F>
result<address> name_of(int fd, F getname) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return last_error();
  return address::from(reinterpret_cast<sockaddr*>(&ss), len);
}

}  // namespace

// ---- stream ----

result<stream> stream::connect(const address& to, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  auto h = open_socket(to.family(), SOCK_STREAM);
  if (!h) return h.error();
  const int fd = h->fd();
  if (::connect(fd, to.data(), to.size()) != 0) {
    if (const int e = io::last_errno(); e != EINPROGRESS && e != EINTR) return errno_code(e);
    // Writability can be spurious (a fresh, unconnected socket reports EPOLLOUT|EPOLLHUP when it is
    // registered; a late event for an earlier fd of the same number), so the connection is made
    // only when SO_ERROR is clear and the socket has a peer; otherwise wait again.
    for (;;) {
      if (auto ec = h->wait(true, deadline)) return ec;  // the handle closes the fd on the way out
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return last_error();
      if (err != 0 && err != EINPROGRESS && err != EALREADY && err != EINTR) return errno_code(err);
      sockaddr_storage peer{};
      socklen_t peer_len = sizeof peer;
      if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0) break;
      if (const int e = io::last_errno(); e != ENOTCONN) return errno_code(e);
    }
  }
  return stream(std::move(*h));
}

// After a read that returned less than it asked, a TCP socket was empty (its recv stops short only
// when its queue is, or at urgent data), so the next read waits for the poller's next edge first
// instead of spending a recv on EAGAIN: one syscall a turn of a conversation (tokio does the same).
// Data that came after that read raised an edge of its own. The exceptions (io.hpp, io_state): a
// Unix stream socket (its recv also stops before a message with descriptors or other credentials);
// after a reported hang-up (data and the peer's FIN reported in one edge: the short read took
// both, and no edge will come for the end of file the next recv returns) or urgent data; and after
// any wait for readability since that read (wait_readable, io::wait: the edge it took may be the
// data's; the HTTP server waits so between requests). Measured: Grove -> Grove round trips (build/release/bench/grove/
// dist_send --mode 1), in bench/RESULTS.md "Distribution".
result<std::size_t> stream::read_some(void* buf, std::size_t n, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  bool wait_first = h_.may_wait_first();
  for (;;) {
    if (!wait_first) {
      const ssize_t r = ::recv(h_.fd(), buf, n, 0);
      if (r >= 0) {
        h_.note_emptied(r > 0 && static_cast<std::size_t>(r) < n);
        return static_cast<std::size_t>(r);
      }
      const int e = io::last_errno();
      if (e == EINTR) continue;
      if (e != EAGAIN) return errno_code(e);
    }
    wait_first = false;
    if (auto ec = h_.wait(false, deadline)) return ec;
  }
}

std::error_code stream::read_exact(void* buf, std::size_t n, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  h_.note_emptied(false);  // it reads until it has n bytes: what is left in the socket is unknown
  auto* at = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(h_.fd(), at, n, 0);
    if (r > 0) {
      at += r;
      n -= static_cast<std::size_t>(r);
      continue;
    }
    if (r == 0) return make_error_code(errc::end_of_file);
    const int e = io::last_errno();
    if (e == EINTR) continue;
    if (e != EAGAIN) return errno_code(e);
    if (auto ec = h_.wait(false, deadline)) return ec;
  }
  return {};
}

std::error_code stream::write_all(const void* buf, std::size_t n, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  auto* at = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t w = ::send(h_.fd(), at, n, MSG_NOSIGNAL);  // EPIPE as an error, never SIGPIPE
    if (w >= 0) {
      at += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    const int e = io::last_errno();
    if (e == EINTR) continue;
    if (e != EAGAIN) return errno_code(e);
    if (auto ec = h_.wait(true, deadline)) return ec;
  }
  return {};
}

result<std::size_t> stream::try_write(std::span<const std::string_view> parts) noexcept {
  constexpr std::size_t max_parts = 16;
  iovec iov[max_parts];
  std::size_t count = 0;
  for (const std::string_view part : parts) {
    if (part.empty()) continue;
    if (count == max_parts) break;  // one syscall's worth, as writev stops at IOV_MAX: the count says how far it went
    iov[count++] = {const_cast<char*>(part.data()), part.size()};
  }
  if (count == 0) return std::size_t{0};
  msghdr m{};
  m.msg_iov = iov;
  m.msg_iovlen = count;
  for (;;) {
    const ssize_t w = ::sendmsg(h_.fd(), &m, MSG_DONTWAIT | MSG_NOSIGNAL);  // EPIPE as an error, never SIGPIPE
    if (w >= 0) return static_cast<std::size_t>(w);
    const int e = io::last_errno();
    if (e == EINTR) continue;
    if (e == EAGAIN) return std::size_t{0};
    return errno_code(e);
  }
}

std::error_code stream::wait_readable(until u) { return h_.wait(false, u.deadline_ns()); }

std::error_code stream::shutdown_write() noexcept {
  return ::shutdown(h_.fd(), SHUT_WR) == 0 ? std::error_code{} : last_error();
}

std::error_code stream::set_nodelay(bool on) noexcept { return set_flag(h_.fd(), IPPROTO_TCP, TCP_NODELAY, on); }
std::error_code stream::set_keepalive(bool on) noexcept { return set_flag(h_.fd(), SOL_SOCKET, SO_KEEPALIVE, on); }
result<address> stream::local_address() const { return name_of(h_.fd(), ::getsockname); }
result<address> stream::peer_address() const { return name_of(h_.fd(), ::getpeername); }

// ---- listener ----

result<listener> listener::listen(const address& at, options o) {
  auto h = open_socket(at.family(), SOCK_STREAM);
  if (!h) return h.error();
  const int fd = h->fd();
  if (at.family() != AF_UNIX) {
    if (o.reuse_address)
      if (auto ec = set_flag(fd, SOL_SOCKET, SO_REUSEADDR, true)) return ec;
    if (o.reuse_port)
      if (auto ec = set_flag(fd, SOL_SOCKET, SO_REUSEPORT, true)) return ec;
  }
  if (::bind(fd, at.data(), at.size()) != 0) return last_error();
  if (::listen(fd, o.backlog) != 0) return last_error();
  listener l;
  l.h_ = std::move(*h);
  return l;
}

result<stream> listener::accept(until u) {
  const std::uint64_t deadline = u.deadline_ns();
  for (;;) {
    const int fd = ::accept4(h_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      auto h = detail::socket_handle::adopt(fd);
      if (!h) return h.error();
      return stream(std::move(*h));
    }
    const int e = io::last_errno();
    if (e == EINTR || e == ECONNABORTED) continue;  // a connection that went before we took it
    if (e != EAGAIN) return errno_code(e);          // EMFILE, ENFILE, ENOBUFS: the listener stays
    if (auto ec = h_.wait(false, deadline)) return ec;
  }
}

result<address> listener::local_address() const { return name_of(h_.fd(), ::getsockname); }

// ---- datagram_socket ----

result<datagram_socket> datagram_socket::bind(const address& at) {
  auto h = open_socket(at.family(), SOCK_DGRAM);
  if (!h) return h.error();
  if (::bind(h->fd(), at.data(), at.size()) != 0) return last_error();
  datagram_socket s;
  s.h_ = std::move(*h);
  return s;
}

std::error_code datagram_socket::send_to(const void* buf, std::size_t n, const address& to, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  for (;;) {
    const ssize_t w = ::sendto(h_.fd(), buf, n, MSG_NOSIGNAL, to.data(), to.size());
    if (w >= 0) return {};
    const int e = io::last_errno();
    if (e == EINTR) continue;
    if (e != EAGAIN) return errno_code(e);
    if (auto ec = h_.wait(true, deadline)) return ec;
  }
}

result<std::pair<std::size_t, address>> datagram_socket::receive_from(void* buf, std::size_t n, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const ssize_t r = ::recvfrom(h_.fd(), buf, n, 0, reinterpret_cast<sockaddr*>(&ss), &len);
    if (r >= 0) return std::pair<std::size_t, address>(static_cast<std::size_t>(r), address::from(reinterpret_cast<sockaddr*>(&ss), len));
    const int e = io::last_errno();
    if (e == EINTR) continue;
    if (e != EAGAIN) return errno_code(e);
    if (auto ec = h_.wait(false, deadline)) return ec;
  }
}

result<address> datagram_socket::local_address() const { return name_of(h_.fd(), ::getsockname); }

}  // namespace grove::net

// ---- resolve ----

namespace grove::net {

namespace {

class resolve_errors final : public std::error_category {
 public:
  const char* name() const noexcept override { return "grove.resolve"; }
  std::string message(int code) const override { return ::gai_strerror(code); }
};

struct resolved {
  std::uint64_t tag;
  int gai_error;   // 0, or getaddrinfo's EAI_*
  int sys_errno;   // for EAI_SYSTEM
  std::vector<address> found;
};

resolved lookup(const std::string& host, std::uint16_t port, std::uint64_t tag) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;
  addrinfo* list = nullptr;
  resolved out{tag, 0, 0, {}};
  out.gai_error = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (out.gai_error == EAI_SYSTEM) out.sys_errno = errno;  // a blocking thread: it never moves
  for (addrinfo* a = list; a; a = a->ai_next) {
    address at = address::from(a->ai_addr, a->ai_addrlen);
    if (a->ai_family == AF_INET) reinterpret_cast<sockaddr_in*>(const_cast<sockaddr*>(at.data()))->sin_port = htons(port);
    else if (a->ai_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(const_cast<sockaddr*>(at.data()))->sin6_port = htons(port);
    else continue;
    out.found.push_back(at);
  }
  if (list) ::freeaddrinfo(list);
  return out;
}

}  // namespace

const std::error_category& resolve_category() noexcept {
  static const resolve_errors c;
  return c;
}

result<std::vector<address>> resolve(std::string_view host, std::uint16_t port, until u) {
  const std::uint64_t deadline = u.deadline_ns();
  // A numeric host: no lookup, no thread.
  {
    std::string text = host.find(':') != std::string_view::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
    if (auto a = address::parse(text)) return std::vector<address>{*a};
  }
  if (!grove::internal::current_process()) return make_error_code(errc::not_in_process);
  // The lookup cannot be interrupted, so it runs in a helper process (on a blocking thread) and
  // answers an alias: at the deadline we stop listening and the late answer is dropped.
  const alias reply = make_alias();
  static std::atomic<std::uint64_t> next_tag{1};  // shared: relaxed, only uniqueness matters
  const std::uint64_t tag = next_tag.fetch_add(1, std::memory_order_relaxed);
  auto spawned = try_spawn(spawn_options{}, [reply, tag, name = std::string(host), port] {
    resolved r = run_blocking([&] { return lookup(name, port, tag); });
    send(reply, std::move(r));
  });
  if (!spawned) {
    unalias(reply);
    return spawned.error();
  }
  const std::uint64_t now = grove::internal::now_ns();
  const auto left = std::chrono::nanoseconds(deadline > now ? static_cast<std::int64_t>(std::min<std::uint64_t>(deadline - now, grove::detail::never_ns)) : 0);
  std::optional<resolved> got = receive(
      when([tag](const resolved& r) { return r.tag == tag; }, [](resolved r) { return std::optional<resolved>(std::move(r)); }),
      after(deadline == grove::internal::never_deadline_ns ? std::chrono::nanoseconds(grove::detail::never_ns) : left,
            [] { return std::optional<resolved>(); }));
  unalias(reply);
  if (!got) return make_error_code(errc::timeout);
  if (got->gai_error == EAI_SYSTEM) return errno_code(got->sys_errno);
  if (got->gai_error != 0) return std::error_code(got->gai_error, resolve_category());
  if (got->found.empty()) return std::error_code(EAI_NONAME, resolve_category());
  return std::move(got->found);
}

}  // namespace grove::net
