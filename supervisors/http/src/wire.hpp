// wire.hpp: messages to bytes (message.cpp), as the server and the client write them.
#pragma once

#include <string>
#include <string_view>

#include <grove/http/message.hpp>

namespace grove::http::internal {

// Appends the response's status line, Date (unless the handler set one), its headers (the
// handler's, less the framing fields, which are written here: Content-Length, and Connection: close
// when `close`), the blank line and, unless `head_only` (a HEAD request), the body.
void append_response(std::string& out, const response& r, bool close, bool head_only);

// Appends a request in origin form to `host` (the Host header unless the request has one), with
// Content-Length when it has a body or a method that expects one.
void append_request(std::string& out, const request& r, std::string_view host);

// Statuses that never carry a body (1xx, 204, 304).
bool status_has_no_body(int status) noexcept;

}  // namespace grove::http::internal
