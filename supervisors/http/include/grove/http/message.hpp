// grove/http/message.hpp: HTTP/1.1 requests and responses as values, and grove::http's errors.
//
//   http::response r{.status = 200, .body = "hello, world\n"};
//   r.headers.set("Content-Type", "text/plain");
//   if (auto* v = req.headers.find("x-request-id")) ...   // names compare case-insensitively
//
// Messages are plain values (copy or move them between processes as messages). Bodies are held
// whole, within the limits the server and the client set. Content-Length, Transfer-Encoding and
// Connection are the library's business: the server and the client set them when they write a
// message (what a handler puts there is replaced), and read them when they parse one.
#pragma once

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::http {

struct header {
  std::string name;
  std::string value;
};

// Header fields in the order they came or were added. Names are case-insensitive (RFC 9110 §5.1).
class headers {
 public:
  // The first field named `name`, or nullptr.
  const std::string* find(std::string_view name) const noexcept;
  bool contains(std::string_view name) const noexcept { return find(name) != nullptr; }
  // Replaces every field named `name` by one with `value`.
  void set(std::string_view name, std::string_view value);
  // Adds a field (a second Set-Cookie, ...).
  void add(std::string_view name, std::string_view value) { fields_.push_back({std::string(name), std::string(value)}); }
  // Removes every field named `name`; returns how many.
  std::size_t remove(std::string_view name);
  void clear() noexcept { fields_.clear(); }

  std::size_t size() const noexcept { return fields_.size(); }
  bool empty() const noexcept { return fields_.empty(); }
  auto begin() const noexcept { return fields_.begin(); }
  auto end() const noexcept { return fields_.end(); }

 private:
  std::vector<header> fields_;
};

// ASCII case-insensitive equality, as header names and tokens compare.
bool iequals(std::string_view a, std::string_view b) noexcept;

struct request {
  std::string method = "GET";
  std::string target = "/";  // origin-form: path and query, e.g. "/items?page=2"
  http::headers headers;
  std::string body;
  // Whether the connection stays open after this exchange: parsed from the request (HTTP/1.1
  // default yes, "Connection: close" or HTTP/1.0 without keep-alive no).
  bool keep_alive = true;
};

struct response {
  int status = 200;
  http::headers headers;
  std::string body;
};

// The reason phrase of a status ("Not Found"); "Unknown" for one it does not know.
std::string_view reason_phrase(int status) noexcept;

// What only HTTP means. Socket errors come as std::errc codes (connection_refused,
// connection_reset, broken_pipe, ...), deadlines as services::errc::deadline_exceeded.
enum class errc {
  bad_message = 1,     // the peer sent something that is not HTTP/1.x (a malformed response)
  message_too_large,   // the response's head or body is over the client's limit
  bad_url,             // a URL the client cannot use (not http://host[:port][/path])
  closed_early,        // the peer closed the connection before the whole response came
  resolve_failed,      // the host name did not resolve
};

const std::error_category& http_category() noexcept;
// The enumerator's name: "bad_message", ...; fmt formats an errc so.
const char* to_string(errc e) noexcept;
inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), http_category()}; }

}  // namespace grove::http

template <>
struct std::is_error_code_enum<grove::http::errc> : std::true_type {};

template <>
struct fmt::formatter<grove::http::errc> : grove::detail::named_formatter<grove::http::errc> {};

GROVE_PUBLIC_END
