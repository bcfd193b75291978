// parser.cpp: HTTP/1.x messages from a connection's bytes, on llhttp.
//
// llhttp (Node.js's parser; C sources from Debian's node-llhttp, compiled into grove_http) is a
// state machine fed whatever bytes came: it calls back with spans of the input (a header name may
// come in two spans when it straddles two reads), which we append to the message being built, so
// the caller's read buffer can be reused at once. on_message_complete pauses the parser, so one
// feed() stops after one message even when pipelined requests follow in the same buffer; the rest
// waits in the caller's buffer and is fed after the response is written (responses in order).
//
// Limits are checked as the spans come, before anything is stored past them: the head (request or
// status line and header fields, counted with their separators) against max_head_bytes, the body
// against max_body_bytes (at once from Content-Length when it is known, else as chunks arrive). A
// failure stops the parser: the connection cannot be resynchronised after a bad message, so the
// server answers 400, 413 or 431 and closes, and the client drops the connection.
//
// Why llhttp: bench/grove/http_parser_probe.cpp on this machine (1,000,000 requests, best of 3):
// wrk's 2-header GET 45 ns (llhttp) vs 54 ns (Boost.Beast's parser), a 12-header browser GET
// 308 ns vs 647 ns (2.1x), 16 pipelined per buffer 278 vs 636 ns. llhttp is also plain C with no
// allocation of its own (a parser is 80 bytes per connection), where Beast needs Asio's headers
// and builds its own field container. libhttp-parser (its predecessor) is no longer maintained.
#include "parser.hpp"

#include <algorithm>
#include <utility>

namespace grove::http::internal {

namespace {

message_parser& self(llhttp_t* p) { return *static_cast<message_parser*>(p->data); }

// Per field: ": " and CRLF; per line of the head, its CRLF.
constexpr std::size_t field_overhead = 4;
// What on_status does not see of a status line and its head's end: "HTTP/1.1 100 ", CRLF, CRLF.
constexpr std::size_t status_line_bytes = 17;
// Interim (1xx) responses accepted before a final one.
constexpr unsigned max_interim_responses = 16;

std::string_view trim_trailing(std::string_view v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// Whether a Transfer-Encoding field's value lists no coding but chunked ("chunked", " Chunked ").
bool only_chunked(std::string_view v) {
  while (!v.empty()) {
    const std::size_t comma = std::min(v.find(','), v.size());
    std::string_view coding = trim_trailing(v.substr(0, comma));
    v.remove_prefix(std::min(comma + 1, v.size()));
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
    if (!coding.empty() && !iequals(coding, "chunked")) return false;
  }
  return true;
}

}  // namespace

const llhttp_settings_t& message_parser::settings() {
  static const llhttp_settings_t s = [] {
    llhttp_settings_t x;
    llhttp_settings_init(&x);
    x.on_message_begin = on_message_begin;
    x.on_url = on_url;
    x.on_status = on_status;
    x.on_header_field = on_header_field;
    x.on_header_value = on_header_value;
    x.on_header_value_complete = on_header_value_complete;
    x.on_headers_complete = on_headers_complete;
    x.on_body = on_body;
    x.on_message_complete = on_message_complete;
    return x;
  }();
  return s;
}

message_parser::message_parser(kind k, parse_limits limits) : kind_(k), limits_(limits) {
  llhttp_init(&p_, k == kind::request ? HTTP_REQUEST : HTTP_RESPONSE, &settings());
  p_.data = this;
}

void message_parser::reset_message() {
  started_ = head_done_ = done_ = false;
  head_bytes_ = 0;
  target_.clear();
  headers_.clear();
  name_.clear();
  value_.clear();
  body_.clear();
}

int message_parser::count_head(std::size_t n) noexcept {
  head_bytes_ += n;
  if (head_bytes_ <= limits_.max_head_bytes) return 0;
  why_ = failure::head_too_large;
  return -1;
}

int message_parser::on_message_begin(llhttp_t* p) {
  self(p).started_ = true;
  return 0;
}

int message_parser::on_url(llhttp_t* p, const char* at, std::size_t n) {
  auto& m = self(p);
  if (m.count_head(n)) return -1;
  m.target_.append(at, n);
  return 0;
}

int message_parser::on_status(llhttp_t* p, const char* at, std::size_t n) {
  auto& m = self(p);
  if (m.count_head(n)) return -1;
  m.target_.append(at, n);
  return 0;
}

int message_parser::on_header_field(llhttp_t* p, const char* at, std::size_t n) {
  auto& m = self(p);
  if (m.count_head(n)) return -1;
  m.name_.append(at, n);
  return 0;
}

int message_parser::on_header_value(llhttp_t* p, const char* at, std::size_t n) {
  auto& m = self(p);
  if (m.count_head(n)) return -1;
  m.value_.append(at, n);
  return 0;
}

int message_parser::on_header_value_complete(llhttp_t* p) {
  auto& m = self(p);
  if (m.count_head(field_overhead)) return -1;
  // RFC 9112 5.1: whitespace between a field name and its colon is rejected (llhttp takes it into
  // the name): "Transfer-Encoding : chunked" is a smuggling vector, a field that a proxy in front
  // may read as framing and this parser would not.
  if (!m.name_.empty() && (m.name_.back() == ' ' || m.name_.back() == '\t')) {
    m.reason_ = "whitespace between a field name and its colon";
    return -1;
  }
  m.headers_.add(m.name_, trim_trailing(m.value_));
  m.name_.clear();
  m.value_.clear();
  return 0;
}

int message_parser::on_headers_complete(llhttp_t* p) {
  auto& m = self(p);
  m.head_done_ = true;
  // Content-Length over the limit: refuse before reading a byte of the body.
  if ((p->flags & F_CONTENT_LENGTH) && p->content_length > m.limits_.max_body_bytes) {
    m.why_ = failure::body_too_large;
    return -1;
  }
  if (m.kind_ == kind::request) {
    if (p->http_major != 1) {  // HTTP/0.9, or an HTTP/2 preface sent in clear
      m.why_ = failure::unsupported_version;
      return -1;
    }
    // RFC 9112 3.2: an HTTP/1.1 request without a Host field, or any request with more than one,
    // gets 400 (Go's net/http does the same). Several would let a proxy and this server disagree on
    // which site a request is for. Transfer codings: llhttp has checked that chunked comes last;
    // any other coding (gzip, chunked) would hand the handler an encoded body it did not ask for:
    // 501, as RFC 9112 6.1 says and Go does.
    int hosts = 0;
    for (const auto& f : m.headers_) {
      hosts += iequals(f.name, "host") ? 1 : 0;
      if (iequals(f.name, "transfer-encoding") && !only_chunked(f.value)) {
        m.why_ = failure::unsupported_coding;
        return -1;
      }
    }
    const bool http10 = p->http_minor == 0;
    if (hosts > 1 || (hosts == 0 && !http10)) {
      m.reason_ = hosts > 1 ? "more than one Host field" : "no Host field in an HTTP/1.1 request";
      return -1;
    }
  }
  if (m.kind_ == kind::response) {
    const int status = p->status_code;
    if (m.no_body_ || status == 204 || status == 304 || (status >= 100 && status < 200)) return 1;  // 1: no body
  }
  return 0;
}

int message_parser::on_body(llhttp_t* p, const char* at, std::size_t n) {
  auto& m = self(p);
  if (m.body_.size() + n > m.limits_.max_body_bytes) {
    m.why_ = failure::body_too_large;
    return -1;
  }
  m.body_.append(at, n);
  return 0;
}

int message_parser::on_message_complete(llhttp_t* p) {
  auto& m = self(p);
  if (m.kind_ == kind::response && p->status_code >= 100 && p->status_code < 200 && p->status_code != 101) {
    // An interim response (100 Continue, 103 Early Hints) before the final one: a client must
    // accept any number of them, asked for or not (RFC 9110 15.2), and answers with the final one.
    // Their heads count towards max_head_bytes together with the final head, and at most
    // max_interim_responses come before it (Go's client allows 5), so a peer that sends interim
    // responses for ever fails the call (head_too_large) instead of holding it until its deadline.
    const std::size_t interim_head = m.head_bytes_ + status_line_bytes;
    const unsigned interim = m.interim_ + 1;
    m.reset_message();
    m.head_bytes_ = interim_head;
    m.interim_ = interim;
    if (interim <= max_interim_responses && interim_head <= m.limits_.max_head_bytes) return 0;
    m.why_ = failure::head_too_large;
    return -1;
  }
  m.done_ = true;
  m.keep_alive_ = llhttp_should_keep_alive(p) != 0;
  return HPE_PAUSED;  // one message per feed (file comment)
}

message_parser::progress message_parser::feed(const char* data, std::size_t n) {
  if (why_ != failure::none) return {state::failed, 0};
  if (after_upgrade_) {
    why_ = failure::malformed;  // bytes after an Upgrade or CONNECT we do not speak
    return {state::failed, 0};
  }
  if (llhttp_get_errno(&p_) == HPE_PAUSED) llhttp_resume(&p_);  // the previous message was taken
  const llhttp_errno_t e = llhttp_execute(&p_, data, n);
  switch (e) {
    case HPE_OK: return {state::need_more, n};
    case HPE_PAUSED: return {state::complete, static_cast<std::size_t>(llhttp_get_error_pos(&p_) - data)};
    case HPE_PAUSED_UPGRADE:
      // An Upgrade (or CONNECT) request, complete: answered as a plain request, then the
      // connection closes, since what follows would not be HTTP/1.1.
      done_ = true;
      keep_alive_ = false;
      after_upgrade_ = true;
      return {state::complete, static_cast<std::size_t>(llhttp_get_error_pos(&p_) - data)};
    default:
      if (why_ == failure::none) why_ = failure::malformed;
      return {state::failed, 0};
  }
}

message_parser::state message_parser::finish() {
  if (why_ != failure::none) return state::failed;
  if (!started_) return state::need_more;
  if (llhttp_get_errno(&p_) == HPE_PAUSED) return state::complete;  // complete already, not yet taken
  const llhttp_errno_t e = llhttp_finish(&p_);
  if (done_ && (e == HPE_OK || e == HPE_PAUSED)) {
    keep_alive_ = false;  // a body read to the end of the connection
    return state::complete;
  }
  why_ = failure::malformed;
  return state::failed;
}

std::string_view message_parser::expectation() const noexcept {
  if (p_.http_major < 1 || (p_.http_major == 1 && p_.http_minor == 0)) return {};  // RFC 9110 10.1.1: ignored from HTTP/1.0
  const std::string* v = headers_.find("expect");
  return v ? std::string_view(*v) : std::string_view();
}

const char* message_parser::detail() const noexcept {
  switch (why_) {
    case failure::none: return "";
    case failure::head_too_large: return "header fields too large";
    case failure::body_too_large: return "body too large";
    case failure::unsupported_version: return "HTTP version not supported";
    case failure::unsupported_coding: return "transfer coding not implemented";
    case failure::malformed: break;
  }
  if (reason_) return reason_;
  const char* r = llhttp_get_error_reason(&p_);
  return r ? r : "malformed message";
}

request message_parser::take_request() {
  request r;
  r.method = llhttp_method_name(static_cast<llhttp_method_t>(p_.method));
  // A target in absolute form ("http://host/path?q", sent to proxies; a server must accept it, RFC
  // 9112 3.2.2) reaches the handler in origin form ("/path?q"), as every other target does.
  if (target_.size() > 7 && (iequals(std::string_view(target_).substr(0, 7), "http://") ||
                             iequals(std::string_view(target_).substr(0, 8), "https://"))) {
    const std::size_t authority = target_.find("//") + 2;
    const std::size_t path = target_.find_first_of("/?", authority);
    target_ = path == std::string::npos ? "/" : (target_[path] == '?' ? "/" : "") + target_.substr(path);
  }
  r.target = std::move(target_);
  r.headers = std::move(headers_);
  r.body = std::move(body_);
  r.keep_alive = keep_alive_;
  reset_message();
  return r;
}

response message_parser::take_response() {
  response r;
  r.status = p_.status_code;
  r.headers = std::move(headers_);
  r.body = std::move(body_);
  reset_message();
  no_body_ = false;
  interim_ = 0;
  return r;
}

}  // namespace grove::http::internal
