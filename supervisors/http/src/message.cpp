// message.cpp: header fields, reason phrases, the "grove.http" error category, and writing
// messages (wire.hpp).
#include <grove/http/message.hpp>

#include <algorithm>
#include <charconv>

#include "wire.hpp"

namespace grove::http {

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::bad_message: return "bad_message";
    case errc::message_too_large: return "message_too_large";
    case errc::bad_url: return "bad_url";
    case errc::closed_early: return "closed_early";
    case errc::resolve_failed: return "resolve_failed";
  }
  return "unknown";
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

const std::string* headers::find(std::string_view name) const noexcept {
  for (const auto& f : fields_)
    if (iequals(f.name, name)) return &f.value;
  return nullptr;
}

void headers::set(std::string_view name, std::string_view value) {
  remove(name);
  add(name, value);
}

std::size_t headers::remove(std::string_view name) {
  const auto before = fields_.size();
  std::erase_if(fields_, [&](const header& f) { return iequals(f.name, name); });
  return before - fields_.size();
}

std::string_view reason_phrase(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "grove.http"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::bad_message: return "the peer sent a malformed HTTP message";
      case errc::message_too_large: return "the HTTP message is over the size limit";
      case errc::bad_url: return "the URL is not http://host[:port][/path]";
      case errc::closed_early: return "the peer closed the connection before the whole response came";
      case errc::resolve_failed: return "the host name did not resolve";
    }
    return "unknown HTTP error";
  }
};

}  // namespace

const std::error_category& http_category() noexcept {
  static const category c;
  return c;
}

}  // namespace grove::http

namespace grove::http::internal {

namespace {

bool is_framing(std::string_view name) {
  return iequals(name, "content-length") || iequals(name, "transfer-encoding") || iequals(name, "connection");
}

void append_number(std::string& out, std::size_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, end);
}

void append_fields(std::string& out, const headers& h) {
  for (const auto& f : h) {
    if (is_framing(f.name)) continue;
    out.append(f.name).append(": ").append(f.value).append("\r\n");
  }
}

}  // namespace

bool status_has_no_body(int status) noexcept { return (status >= 100 && status < 200) || status == 204 || status == 304; }

void append_response(std::string& out, const response& r, bool close, bool head_only) {
  out.append("HTTP/1.1 ");
  append_number(out, static_cast<std::size_t>(r.status));
  out.push_back(' ');
  out.append(reason_phrase(r.status)).append("\r\n");
  append_fields(out, r.headers);
  if (!status_has_no_body(r.status)) {
    out.append("Content-Length: ");
    append_number(out, r.body.size());
    out.append("\r\n");
  }
  if (close) out.append("Connection: close\r\n");
  out.append("\r\n");
  if (!head_only && !status_has_no_body(r.status)) out.append(r.body);
}

void append_request(std::string& out, const request& r, std::string_view host) {
  out.append(r.method).push_back(' ');
  out.append(r.target.empty() ? std::string_view("/") : std::string_view(r.target)).append(" HTTP/1.1\r\n");
  if (!r.headers.contains("host")) out.append("Host: ").append(host).append("\r\n");
  append_fields(out, r.headers);
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    out.append("Content-Length: ");
    append_number(out, r.body.size());
    out.append("\r\n");
  }
  if (!r.keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  out.append(r.body);
}

}  // namespace grove::http::internal
