// parser.hpp: an incremental HTTP/1.x parser for one connection, on llhttp (design in parser.cpp).
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <grove/http/message.hpp>

namespace grove::http::internal {

struct parse_limits {
  std::size_t max_head_bytes;  // request line or status line plus header fields
  std::size_t max_body_bytes;
};

// Parses the messages of one connection, one at a time: feed() stops after each complete message,
// which take_request()/take_response() then move out; the next feed() goes on with the next one
// (pipelined requests wait in the caller's buffer meanwhile).
class message_parser {
 public:
  enum class kind { request, response };
  enum class state { need_more, complete, failed };
  // unsupported_version: a request not in HTTP/1.x (505); unsupported_coding: a request whose
  // Transfer-Encoding has a coding other than chunked (501, RFC 9112 6.1).
  enum class failure { none, malformed, head_too_large, body_too_large, unsupported_version, unsupported_coding };

  message_parser(kind k, parse_limits limits);
  message_parser(const message_parser&) = delete;
  message_parser& operator=(const message_parser&) = delete;

  struct progress {
    state st;
    std::size_t used;  // bytes of the input consumed (the rest belongs to the next message)
  };
  progress feed(const char* data, std::size_t n);
  // The peer closed the connection: completes a response whose body runs until then; otherwise
  // `failed` if a message had begun, `need_more` (nothing lost) if none had.
  state finish();

  // A response to HEAD, or to a request whose response has no body: set before its first byte.
  void expect_no_body() noexcept { no_body_ = true; }
  // Whether any byte of the current message has come (an idle connection has none).
  bool started() const noexcept { return started_; }
  // Whether the current message's head is complete (its body may still be coming).
  bool head_done() const noexcept { return head_done_; }
  // After head_done(): the request's Expect field ("" without one, or from an HTTP/1.0 client).
  std::string_view expectation() const noexcept;
  failure why() const noexcept { return why_; }
  const char* detail() const noexcept;  // llhttp's reason for a malformed message

  // After `complete`: the message, moved out. keep_alive() says whether the connection may carry
  // another one (HTTP/1.1 default, "Connection: close", HTTP/1.0 rules, a body read to EOF).
  request take_request();
  response take_response();
  bool keep_alive() const noexcept { return keep_alive_; }

 private:
  static int on_message_begin(llhttp_t* p);
  static int on_url(llhttp_t* p, const char* at, std::size_t n);
  static int on_status(llhttp_t* p, const char* at, std::size_t n);
  static int on_header_field(llhttp_t* p, const char* at, std::size_t n);
  static int on_header_value(llhttp_t* p, const char* at, std::size_t n);
  static int on_header_value_complete(llhttp_t* p);
  static int on_headers_complete(llhttp_t* p);
  static int on_body(llhttp_t* p, const char* at, std::size_t n);
  static int on_message_complete(llhttp_t* p);
  static const llhttp_settings_t& settings();
  int count_head(std::size_t n) noexcept;
  void reset_message();

  llhttp_t p_;
  const kind kind_;
  const parse_limits limits_;
  bool started_ = false;
  bool head_done_ = false;
  bool done_ = false;       // a message is complete and not yet taken
  bool no_body_ = false;
  bool keep_alive_ = true;
  bool after_upgrade_ = false;  // llhttp stopped at an Upgrade/CONNECT: the connection cannot go on
  failure why_ = failure::none;
  const char* reason_ = nullptr;  // our own reason for a malformed message (else llhttp's)
  std::size_t head_bytes_ = 0;
  unsigned interim_ = 0;  // interim (1xx) responses before the current one
  std::string target_;  // the request target (request) or reason phrase (response)
  http::headers headers_;
  std::string name_, value_;  // the field being read
  std::string body_;
};

}  // namespace grove::http::internal
