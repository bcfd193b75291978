// http_parser_probe: llhttp (Debian node-llhttp's C sources) against Boost.Beast's parser
// (libboost1.74-dev), for grove::http's choice of parser (supervisors/http/src/parser.cpp).
//
//   tools/setup --peers && cmake --build --preset release --target http_parser_probe \
//     && build/release/bench/grove/http_parser_probe
//
// Parses the same requests with each, collecting what grove::http needs (method, target, every
// header's name and value, the body): wrk's request (2 headers) and a browser-like one (12
// headers), 1,000,000 of each, one request per buffer and 16 pipelined per buffer. Prints ns per
// request, best of 3.
#include <llhttp.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

const std::string wrk_request = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
const std::string browser_request =
    "GET /api/v1/items?page=2&sort=name HTTP/1.1\r\n"
    "Host: example.internal:8080\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
    "Accept-Language: en-GB,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Connection: keep-alive\r\n"
    "Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark; lang=en\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "Sec-Fetch-Dest: document\r\n"
    "Sec-Fetch-Mode: navigate\r\n"
    "Sec-Fetch-Site: none\r\n"
    "X-Request-Id: 4a7d1ed414474e4033ac29ccb8653d9b\r\n"
    "\r\n";

struct collected {
  std::string_view method, target;
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  std::size_t requests = 0;
};

// llhttp: spans into the buffer (each span arrives in one piece here: the whole request is in it).
int on_url(llhttp_t* p, const char* at, std::size_t n) {
  static_cast<collected*>(p->data)->target = {at, n};
  return 0;
}
int on_field(llhttp_t* p, const char* at, std::size_t n) {
  static_cast<collected*>(p->data)->headers.emplace_back(std::string_view(at, n), std::string_view());
  return 0;
}
int on_value(llhttp_t* p, const char* at, std::size_t n) {
  static_cast<collected*>(p->data)->headers.back().second = {at, n};
  return 0;
}
int on_headers_complete(llhttp_t* p) {
  auto* c = static_cast<collected*>(p->data);
  c->method = llhttp_method_name(static_cast<llhttp_method_t>(p->method));
  return 0;
}
int on_message_complete(llhttp_t* p) {
  auto* c = static_cast<collected*>(p->data);
  ++c->requests;
  c->headers.clear();
  return 0;
}

double llhttp_ns(const std::string& buf, std::size_t per_buffer, std::size_t total) {
  llhttp_settings_t s;
  llhttp_settings_init(&s);
  s.on_url = on_url;
  s.on_header_field = on_field;
  s.on_header_value = on_value;
  s.on_headers_complete = on_headers_complete;
  s.on_message_complete = on_message_complete;
  llhttp_t p;
  llhttp_init(&p, HTTP_REQUEST, &s);
  collected c;
  p.data = &c;
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < total / per_buffer; ++i)
    if (llhttp_execute(&p, buf.data(), buf.size()) != HPE_OK) std::abort();
  const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
  if (c.requests != total / per_buffer * per_buffer) std::abort();
  return ns / static_cast<double>(c.requests);
}

double beast_ns(const std::string& buf, std::size_t per_buffer, std::size_t total) {
  namespace http = boost::beast::http;
  std::size_t requests = 0, fields = 0;
  const auto t0 = clk::now();
  for (std::size_t i = 0; i < total / per_buffer; ++i) {
    std::string_view rest = buf;
    while (!rest.empty()) {
      http::request_parser<http::string_body> p;  // one parser per message, as Beast requires
      p.eager(true);
      boost::system::error_code ec;
      const std::size_t used = p.put(boost::asio::buffer(rest.data(), rest.size()), ec);
      if (ec || !p.is_done()) std::abort();
      rest.remove_prefix(used);
      for (auto& f : p.get()) fields += f.name_string().size() + f.value().size() > 0;
      ++requests;
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(clk::now() - t0).count();
  if (requests != total / per_buffer * per_buffer || fields == 0) std::abort();
  return ns / static_cast<double>(requests);
}

}  // namespace

int main() {
  constexpr std::size_t total = 1'000'000;
  for (const auto& [name, one] : {std::pair{"wrk GET (2 headers)", wrk_request}, std::pair{"browser GET (12 headers)", browser_request}}) {
    for (std::size_t per : {std::size_t{1}, std::size_t{16}}) {
      std::string buf;
      for (std::size_t i = 0; i < per; ++i) buf += one;
      double l = 1e30, b = 1e30;
      for (int round = 0; round < 3; ++round) {
        l = std::min(l, llhttp_ns(buf, per, total));
        b = std::min(b, beast_ns(buf, per, total));
      }
      std::printf("%-26s %2zu per buffer: llhttp %6.0f ns/request, Beast %6.0f ns/request (Beast/llhttp %.2fx)\n", name, per, l, b,
                  b / l);
    }
  }
}
