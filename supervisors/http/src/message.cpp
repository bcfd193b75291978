// message.cpp: header fields, reason phrases, the "grove.http" error category, and writing
// messages (wire.hpp).
#include <grove/http/message.hpp>

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

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
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
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

// The Date field's value for `second` (seconds since the epoch), in RFC 9110's IMF-fixdate
// ("Sun, 06 Nov 1994 08:49:37 GMT"), written by hand: strftime's day and month names follow the
// host's locale, which the protocol must not.
void format_http_date(std::int64_t second, char (&out)[29]) {
  static constexpr const char* days[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};  // day 0 was a Thursday
  static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const time_t t = static_cast<time_t>(second);
  struct tm tm;
  gmtime_r(&t, &tm);
  const auto two = [](char* at, int v) {
    at[0] = static_cast<char>('0' + v / 10);
    at[1] = static_cast<char>('0' + v % 10);
  };
  const char* day = days[((second / 86400) % 7 + 7) % 7];
  const char* month = months[tm.tm_mon];
  const int year = tm.tm_year + 1900;
  char* o = out;
  o[0] = day[0], o[1] = day[1], o[2] = day[2], o[3] = ',', o[4] = ' ';
  two(o + 5, tm.tm_mday);
  o[7] = ' ', o[8] = month[0], o[9] = month[1], o[10] = month[2], o[11] = ' ';
  two(o + 12, year / 100 % 100);
  two(o + 14, year % 100);
  o[16] = ' ';
  two(o + 17, tm.tm_hour);
  o[19] = ':';
  two(o + 20, tm.tm_min);
  o[22] = ':';
  two(o + 23, tm.tm_sec);
  o[25] = ' ', o[26] = 'G', o[27] = 'M', o[28] = 'T';
}

// "Date: ...\r\n" for now. An origin server must send Date (RFC 9110 6.6.1). It changes once a
// second, so each thread keeps the last one written and formats anew only when the second has
// changed (nginx and h2o do the same): a response pays one read of the coarse realtime clock
// (~6 ns here; its 4 ms resolution is finer than the field's second).
void append_date(std::string& out) {
  struct cache {
    std::int64_t second = -1;
    char text[29];
  };
  thread_local cache c;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  if (ts.tv_sec != c.second) {
    format_http_date(ts.tv_sec, c.text);
    c.second = ts.tv_sec;
  }
  out.append("Date: ").append(c.text, sizeof c.text).append("\r\n");
}

}  // namespace

bool status_has_no_body(int status) noexcept { return (status >= 100 && status < 200) || status == 204 || status == 304; }

void append_response(std::string& out, const response& r, bool close, bool head_only) {
  out.append("HTTP/1.1 ");
  append_number(out, static_cast<std::size_t>(r.status));
  out.push_back(' ');
  out.append(reason_phrase(r.status)).append("\r\n");
  if (!r.headers.contains("date")) append_date(out);
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
