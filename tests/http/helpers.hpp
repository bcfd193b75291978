// helpers.hpp: what the grove::http tests share: a raw client that writes exact bytes and reads
// what comes back (the hostile peer's view), and a raw server that answers with exact bytes.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/fixture.hpp"
#include "support/log_capture.hpp"

#include <grove/grove.hpp>
#include <grove/http/client.hpp>
#include <grove/http/server.hpp>
#include <grove/net.hpp>
#include <grove/services.hpp>

namespace http_test {

namespace http = grove::http;
namespace net = grove::net;
namespace svc = grove::services;
using namespace std::chrono_literals;
using grove_test::patience;

inline std::string url_of(const http::server& s, std::string_view path = "/") {
  return "http://127.0.0.1:" + std::to_string(s.local_address().port()) + std::string(path);
}

// A connection that writes bytes as given and reads what the server sends.
class raw_client {
 public:
  explicit raw_client(const net::address& to) {
    auto s = net::stream::connect(to, patience);
    REQUIRE_MESSAGE(s, "connect: " << s.error().message());
    s_ = std::move(*s);
  }
  void send(std::string_view bytes) { REQUIRE(s_.write_all(bytes, patience) == std::error_code{}); }
  // Reads until `pred(received)` holds or the server closes; returns everything received.
  std::string read_until(const std::function<bool(const std::string&)>& pred, std::chrono::milliseconds limit = patience) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!pred(in_)) {
      char b[4096];
      auto n = s_.read_some(b, sizeof b, until);
      if (!n || *n == 0) {
        closed_ = !n ? n.error() != grove::errc::timeout : true;
        break;
      }
      in_.append(b, *n);
    }
    return in_;
  }
  // Reads until the server closes (or `limit`).
  std::string read_to_end(std::chrono::milliseconds limit = patience) {
    return read_until([](const std::string&) { return false; }, limit);
  }
  // Reads until `n` whole responses (each with Content-Length) have come.
  std::string read_responses(int n) {
    return read_until([n](const std::string& in) { return count_responses(in) >= n; });
  }
  bool closed() const noexcept { return closed_; }
  net::stream& stream() { return s_; }

  // Whole responses in `in`, by their Content-Length.
  static int count_responses(const std::string& in) {
    int n = 0;
    std::size_t at = 0;
    for (;;) {
      const std::size_t end = in.find("\r\n\r\n", at);
      if (end == std::string::npos) return n;
      std::size_t length = 0;
      const std::size_t cl = lower(in.substr(at, end - at)).find("content-length: ");
      if (cl != std::string::npos) length = std::stoul(in.substr(at + cl + 16));
      if (in.size() < end + 4 + length) return n;
      at = end + 4 + length;
      ++n;
    }
  }
  static std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    return s;
  }

 private:
  net::stream s_;
  std::string in_;
  bool closed_ = false;
};

inline bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

// A latch for handlers: they wait in wait() (a receive: they can be killed while waiting) until
// the test calls open().
class gate {
 public:
  void wait() {
    {
      std::lock_guard<std::mutex> g(lock_);
      ++waiting_;
      if (open_) return;
      waiters_.push_back(grove::self());
    }
    grove::receive([](opened) {});
  }
  void open() {
    std::vector<grove::pid> waiters;
    {
      std::lock_guard<std::mutex> g(lock_);
      open_ = true;
      waiters.swap(waiters_);
    }
    for (auto p : waiters) grove::send(p, opened{});  // outside the lock: a send may park; a dead pid: a no-op
  }
  int waiting() const {
    std::lock_guard<std::mutex> g(lock_);
    return waiting_;
  }

 private:
  struct opened {};
  mutable std::mutex lock_;
  bool open_ = false;
  int waiting_ = 0;
  std::vector<grove::pid> waiters_;
};

// A server that is not HTTP: accepts connections and runs `fn` on each, in a process of its own,
// until the runtime stops (or the listener's process is killed).
class raw_server {
 public:
  explicit raw_server(std::function<void(net::stream&)> fn) {
    auto l = net::listener::listen(net::address::loopback(0));
    REQUIRE(l);
    address_ = *l->local_address();
    acceptor_ = grove::spawn([l = std::move(*l), fn = std::move(fn), n = accepted_]() mutable {
      for (;;) {
        auto s = l.accept();
        if (!s) return;
        n->fetch_add(1);
        grove::spawn([fn, s = std::move(*s)]() mutable { fn(s); });
      }
    });
  }
  ~raw_server() { grove::exit(acceptor_, grove::exit_reason::kill()); }
  std::string url(std::string_view path = "/") const {
    return "http://127.0.0.1:" + std::to_string(address_.port()) + std::string(path);
  }
  std::string host_port() const { return "127.0.0.1:" + std::to_string(address_.port()); }
  int accepted() const { return accepted_->load(); }

 private:
  net::address address_;
  grove::pid acceptor_;
  std::shared_ptr<std::atomic<int>> accepted_ = std::make_shared<std::atomic<int>>(0);
};

// Reads one request head (to the blank line) from a raw server's connection.
inline bool read_head(net::stream& s) {
  std::string in;
  char b[1024];
  while (in.find("\r\n\r\n") == std::string::npos) {
    auto n = s.read_some(b, sizeof b, patience);
    if (!n || *n == 0) return false;
    in.append(b, *n);
  }
  return true;
}

}  // namespace http_test
