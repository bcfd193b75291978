// grove::http::server: keep-alive, pipelining, each limit's answer (400, 413, 431, 408, 503), a
// handler that throws, blocks or never returns, clients that go away or never read, and stops:
// graceful, by kill, by a supervisor. The peer is a raw socket writing exact bytes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <ctime>

#include <grove/supervisor.hpp>

#include "http/helpers.hpp"

using namespace http_test;

namespace {

http::response hello(const http::request& req, const svc::deadline&) {
  return http::response{.status = 200, .headers = {}, .body = "hello " + req.target};
}

http::server start(http::server_options o, http::handler h = hello) {
  auto s = http::server::start_link(std::move(o), std::move(h));
  REQUIRE_MESSAGE(s, "start: " << s.error().message());
  return std::move(*s);
}

}  // namespace

TEST_CASE("a keep-alive connection serves request after request, and the client's pool reuses it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({});
  raw_client c(srv.local_address());
  c.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(c.read_responses(1).find("hello /a") != std::string::npos);
  c.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string both = c.read_responses(2);
  CHECK(both.find("hello /b") != std::string::npos);
  CHECK_FALSE(c.closed());
  CHECK(srv.stats().connections_accepted == 1);
  CHECK(srv.stats().requests == 2);

  http::client client;
  for (int i = 0; i < 3; ++i) {
    auto r = client.get(url_of(srv, "/c"), svc::deadline::after(patience));
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body == "hello /c");
  }
  CHECK(client.stats().connects == 1);
  CHECK(client.stats().reused == 2);
  CHECK(srv.stats().connections_accepted == 2);
  CHECK(srv.stop(5s));
}

TEST_CASE("every response carries the current Date in IMF-fixdate, unless the handler set its own") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({}, [](const http::request& req, const svc::deadline&) {
    http::response r{.status = 200, .headers = {}, .body = "ok"};
    if (req.target == "/own") r.headers.set("Date", "Sun, 06 Nov 1994 08:49:37 GMT");
    return r;
  });
  auto fields_of = [&](const std::string& target) {
    raw_client c(srv.local_address());
    c.send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    return c.read_responses(1);
  };
  const std::string in = fields_of("/");
  const std::size_t at = in.find("\r\nDate: ");
  REQUIRE(at != std::string::npos);
  CHECK(in.find("\r\nDate: ", at + 1) == std::string::npos);
  const std::string value = in.substr(at + 8, in.find("\r\n", at + 2) - at - 8);
  // Read back and written again by the C library in the C locale: the same text (so the weekday
  // agrees with the date), and the current time within seconds.
  std::tm tm{};
  const char* end = ::strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  REQUIRE_MESSAGE(end != nullptr, value);
  CHECK(*end == '\0');
  const std::time_t t = ::timegm(&tm);
  std::tm back{};
  ::gmtime_r(&t, &back);
  char again[64];
  CHECK(std::strftime(again, sizeof again, "%a, %d %b %Y %H:%M:%S GMT", &back) == 29);
  CHECK(value == again);
  CHECK(std::abs(std::difftime(t, std::time(nullptr))) <= 5);
  const std::string own = fields_of("/own");
  CHECK(own.find("\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n") != std::string::npos);
  CHECK(own.find("\r\nDate: ", own.find("\r\nDate: ") + 1) == std::string::npos);
}

TEST_CASE("pipelined requests are answered in order, in one connection") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({});
  raw_client c(srv.local_address());
  std::string all;
  for (int i = 0; i < 50; ++i) all += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
  c.send(all);
  const std::string in = c.read_responses(50);
  std::size_t at = 0;
  for (int i = 0; i < 50; ++i) {
    const std::size_t next = in.find("hello /" + std::to_string(i), at);
    REQUIRE_MESSAGE(next != std::string::npos, "response " << i << " missing or out of order");
    at = next + 1;
  }
  CHECK(srv.stats().requests == 50);
}

TEST_CASE("a HEAD request gets the GET's headers and no body; HTTP/1.0 and Connection: close end the connection") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({});
  {
    raw_client c(srv.local_address());
    c.send("HEAD /x HTTP/1.1\r\nHost: x\r\n\r\nGET /y HTTP/1.1\r\nHost: x\r\n\r\n");
    const std::string in = c.read_until([](const std::string& s) { return s.find("hello /y") != std::string::npos; });
    CHECK(raw_client::lower(in).find("content-length: 8\r\n") != std::string::npos);  // "hello /x"
    CHECK(in.find("hello /x") == std::string::npos);
  }
  {
    raw_client c(srv.local_address());
    c.send("GET /old HTTP/1.0\r\n\r\n");
    const std::string in = c.read_to_end();
    CHECK(in.find("hello /old") != std::string::npos);
    CHECK(c.closed());
  }
  {
    raw_client c(srv.local_address());
    c.send("GET /bye HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    const std::string in = c.read_to_end();
    CHECK(raw_client::lower(in).find("connection: close") != std::string::npos);
    CHECK(c.closed());
  }
}

TEST_CASE("malformed requests get 400 and the connection is closed; the server serves on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({});
  for (std::string bad : {std::string("GARBAGE\r\n\r\n"), std::string("GET / HTTP/1.1\r\nHost x\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"),
                          std::string("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
                          std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),  // a TLS hello
                          // request smuggling: two framings of one body (RFC 9112 6.3: reject)
                          std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                          std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),  // overflows
                          std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"),
                          std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n"),
                          std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"),  // chunked not last
                          std::string("GET / HTTP/1.1\r\nHost: x\r\nX-A: b\0c\r\n\r\n", 37),  // a NUL in a header
                          std::string("GET / HTTP/1.1\nHost: x\n\r\n"),  // bare LF line ends
                          std::string("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"),  // HTTP/1.1 without Host (RFC 9112 3.2)
                          std::string("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),  // two Hosts
                          std::string("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n"),
                          // whitespace before the colon (RFC 9112 5.1), a framing field a proxy might read
                          std::string("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"),
                          std::string("GET / HTTP/1.1\r\nHost: x\r\nX-A\t: b\r\n\r\n")}) {
    raw_client c(srv.local_address());
    c.send(bad);
    const std::string in = c.read_to_end();
    CHECK_MESSAGE(starts_with(in, "HTTP/1.1 400 "), "for " << bad);
    CHECK(c.closed());
  }
  CHECK(srv.stats().malformed == 17);
  auto r = http::client().get(url_of(srv, "/ok"), svc::deadline::after(patience));
  REQUIRE(r);
  CHECK(r->status == 200);
}

TEST_CASE("a request in another HTTP version gets 505, a transfer coding other than chunked 501, whitespace before a colon 400 with why") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<int> handled{0};
  auto srv = start({}, [&](const http::request& req, const svc::deadline& d) {
    ++handled;
    return hello(req, d);
  });
  for (std::string v : {std::string("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), std::string("GET /\r\n\r\n") /* HTTP/0.9 */}) {
    raw_client c(srv.local_address());
    c.send(v);
    CHECK_MESSAGE(starts_with(c.read_to_end(), "HTTP/1.1 505 HTTP Version Not Supported\r\n"), "for " << v);
    CHECK(c.closed());
  }
  // A coding the server would have to undo before the handler could read the body: refused, in
  // one field or spread over two, whatever the case.
  for (std::string v : {std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
                        std::string("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: GZIP\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")}) {
    raw_client c(srv.local_address());
    c.send(v);
    CHECK_MESSAGE(starts_with(c.read_to_end(), "HTTP/1.1 501 Not Implemented\r\n"), "for " << v);
  }
  {
    raw_client c(srv.local_address());
    c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Trace : 1\r\n\r\n");
    CHECK(c.read_to_end().find("whitespace between a field name and its colon") != std::string::npos);
  }
  CHECK(handled == 0);
  CHECK(srv.stats().malformed == 5);
  // chunked alone, in any case and with spaces around it, is what it always was.
  raw_client c(srv.local_address());
  c.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n2\r\nok\r\n0\r\n\r\n");
  CHECK(c.read_responses(1).find("\r\n\r\nhello /c") != std::string::npos);
  CHECK(handled == 1);
}

TEST_CASE("a request without Host is refused with the reason; a target in absolute form reaches the handler in origin form") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({});  // hello: answers "hello " + the target
  {
    raw_client c(srv.local_address());
    c.send("GET / HTTP/1.1\r\n\r\n");
    const std::string in = c.read_to_end();
    CHECK(starts_with(in, "HTTP/1.1 400 "));
    CHECK(in.find("no Host field") != std::string::npos);
  }
  {
    raw_client c(srv.local_address());  // HTTP/1.0 needs no Host
    c.send("GET /old HTTP/1.0\r\n\r\n");
    CHECK(c.read_to_end().find("\r\n\r\nhello /old") != std::string::npos);
  }
  raw_client c(srv.local_address());
  c.send("GET http://example.test:8080/a/b?q=1 HTTP/1.1\r\nHost: example.test:8080\r\n\r\n"
         "GET HTTP://EXAMPLE.TEST HTTP/1.1\r\nHost: example.test\r\n\r\n"
         "GET http://example.test?x=2 HTTP/1.1\r\nHost: example.test\r\n\r\n");
  const std::string in = c.read_responses(3);
  CHECK(in.find("\r\n\r\nhello /a/b?q=1") != std::string::npos);
  CHECK(in.find("Content-Length: 7\r\n\r\nhello /HTTP") != std::string::npos);  // the next response's status line follows
  CHECK(in.find("\r\n\r\nhello /?x=2") != std::string::npos);
  CHECK(raw_client::count_responses(in) == 3);
}

TEST_CASE("a head over max_head_bytes gets 431, a body over max_body_bytes 413 before it is read, chunked or not") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<int> handled{0};
  auto srv = start({.max_head_bytes = 1024, .max_body_bytes = 1000}, [&](const http::request& req, const svc::deadline&) {
    handled.fetch_add(1);
    return http::response{.status = 200, .headers = {}, .body = std::to_string(req.body.size())};
  });
  {
    raw_client c(srv.local_address());
    c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
    CHECK(starts_with(c.read_to_end(), "HTTP/1.1 431 "));
  }
  {
    raw_client c(srv.local_address());  // says 1 GB, sends nothing of it: answered at once
    c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n");
    CHECK(starts_with(c.read_to_end(), "HTTP/1.1 413 "));
  }
  {
    raw_client c(srv.local_address());
    std::string chunked = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 20; ++i) chunked += "64\r\n" + std::string(100, 'b') + "\r\n";  // 2,000 bytes in all
    chunked += "0\r\n\r\n";
    c.send(chunked);
    CHECK(starts_with(c.read_to_end(), "HTTP/1.1 413 "));
  }
  {
    raw_client c(srv.local_address());  // exactly at the limit: served
    c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'c'));
    const std::string in = c.read_responses(1);
    CHECK(starts_with(in, "HTTP/1.1 200 "));
    CHECK(in.find("\r\n\r\n1000") != std::string::npos);
  }
  CHECK(handled.load() == 1);
  CHECK(srv.stats().too_large == 3);
}

TEST_CASE("Expect: 100-continue gets a 100 before the body is sent, a 413 instead when the body is too large, another expectation 417") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::atomic<int> handled{0};
  auto srv = start({.max_body_bytes = 1000}, [&](const http::request& req, const svc::deadline&) {
    handled.fetch_add(1);
    return http::response{.status = 200, .headers = {}, .body = "got " + req.body};
  });
  const std::string continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
  {
    // The client sends its head and waits for the 100 (a server without one would leave it waiting),
    // then its body, on the same connection as a second request.
    raw_client c(srv.local_address());
    c.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
    CHECK(c.read_until([&](const std::string& in) { return in.size() >= continue_line.size(); }) == continue_line);
    c.send("hello");
    CHECK(c.read_responses(2).find("\r\n\r\ngot hello") != std::string::npos);
    c.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");  // any case
    const std::string in = c.read_responses(3);
    CHECK(in.substr(in.rfind("HTTP/1.1 ")) == continue_line);
    c.send("abc");
    CHECK(c.read_responses(4).find("got abc") != std::string::npos);
  }
  {
    raw_client c(srv.local_address());  // the body came with the head: no 100, just the answer
    c.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi");
    CHECK(starts_with(c.read_responses(1), "HTTP/1.1 200 "));
  }
  {
    raw_client c(srv.local_address());  // from HTTP/1.0 the expectation is ignored (RFC 9110 10.1.1)
    c.send("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi");
    CHECK(starts_with(c.read_to_end(), "HTTP/1.1 200 "));
  }
  {
    raw_client c(srv.local_address());  // too large: refused before the client sends a byte of it
    c.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1001\r\n\r\n");
    CHECK(starts_with(c.read_to_end(), "HTTP/1.1 413 "));
    CHECK(c.closed());
  }
  {
    raw_client c(srv.local_address());
    c.send("POST / HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nContent-Length: 2\r\n\r\n");
    CHECK(starts_with(c.read_to_end(), "HTTP/1.1 417 Expectation Failed\r\n"));
    CHECK(c.closed());
  }
  CHECK(handled.load() == 4);
}

TEST_CASE("a head that dribbles in past header_timeout gets 408 (slowloris), and an idle connection is closed") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.header_timeout = 300ms, .idle_timeout = 300ms});
  raw_client slow(srv.local_address());
  raw_client idle(srv.local_address());
  const auto t0 = std::chrono::steady_clock::now();
  slow.send("GET / HTTP/1.1\r\n");
  // One header byte every 50 ms, each well within any per-read timeout: only the head's total
  // time counts. The pacing is the hostile client's, not a wait for the server.
  for (int i = 0; i < 200; ++i) {
    if (slow.stream().write_all("X", patience)) break;  // the server has closed
    if (!slow.read_until([](const std::string& s) { return !s.empty(); }, 50ms).empty() || slow.closed()) break;
  }
  const std::string in = slow.read_to_end();
  CHECK(starts_with(in, "HTTP/1.1 408 "));
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  CHECK(idle.read_to_end().empty());
  CHECK(idle.closed());
  CHECK(srv.stats().timed_out >= 2);
}

TEST_CASE("a handler that throws gets its client a 500 and is logged; the connection and the server go on") {
  grove_test::log_capture logs;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.name = "api"}, [](const http::request& req, const svc::deadline&) -> http::response {
    if (req.target == "/boom") throw std::runtime_error("database on fire");
    return http::response{.status = 204, .headers = {}, .body = {}};
  });
  raw_client c(srv.local_address());
  c.send("GET /boom HTTP/1.1\r\nHost: x\r\n\r\nGET /fine HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string in = c.read_responses(2);
  CHECK(starts_with(in, "HTTP/1.1 500 "));
  CHECK(in.find("HTTP/1.1 204 ") != std::string::npos);
  CHECK(srv.stats().handler_exceptions == 1);
  auto reports = logs.of(grove::log_kind::service);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].text.find("GET /boom") != std::string::npos);
  CHECK(reports[0].text.find("database on fire") != std::string::npos);
  CHECK(reports[0].name == "api");
}

TEST_CASE("a client that goes away while its handler runs costs nothing but the handler's work") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  gate g;
  auto srv = start({}, [&](const http::request&, const svc::deadline&) {
    g.wait();
    return http::response{.status = 200, .headers = {}, .body = std::string(1 << 20, 'z')};
  });
  {
    raw_client c(srv.local_address());
    c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(grove_test::wait_until([&] { return g.waiting() == 1; }));
  }  // closed with the handler still running
  g.open();
  CHECK(grove_test::wait_until([&] { return srv.stats().disconnects == 1 && srv.stats().connections_open == 0; }));
  auto r = http::client().get(url_of(srv), svc::deadline::after(patience));
  REQUIRE(r);
  CHECK(r->body.size() == std::size_t{1} << 20);
}

TEST_CASE("a client that never reads its response is closed after write_timeout") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.write_timeout = 300ms}, [](const http::request&, const svc::deadline&) {
    return http::response{.status = 200, .headers = {}, .body = std::string(32 << 20, 'w')};  // far more than the socket buffers
  });
  raw_client c(srv.local_address());
  c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(grove_test::wait_until([&] { return srv.stats().requests == 1; }));
  CHECK(grove_test::wait_until([&] { return srv.stats().connections_open == 0; }));
  CHECK_MESSAGE(srv.stats().timed_out == 1, "timed out " << srv.stats().timed_out << ", disconnects " << srv.stats().disconnects);
}

TEST_CASE("over max_connections a new connection gets 503, even one that has sent its request") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.max_connections = 2});
  raw_client a(srv.local_address()), b(srv.local_address());
  a.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  b.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n");
  a.read_responses(1);
  b.read_responses(1);
  raw_client c(srv.local_address());
  c.send("GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(starts_with(c.read_to_end(), "HTTP/1.1 503 "));
  CHECK(srv.stats().connections_refused == 1);
}

TEST_CASE("stop drains: no new connections, idle ones closed at once, requests in flight finish with Connection: close") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  gate g;
  auto srv = start({}, [&](const http::request& req, const svc::deadline&) {
    if (req.target == "/slow") g.wait();
    return http::response{.status = 200, .headers = {}, .body = "done " + req.target};
  });
  raw_client busy(srv.local_address()), idle(srv.local_address());
  idle.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::size_t first = idle.read_responses(1).size();
  busy.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(grove_test::wait_until([&] { return g.waiting() == 1; }));
  std::atomic<bool> stopped{false};
  const grove::pid stopper = grove::spawn([&] { stopped = srv.stop(patience); });
  CHECK(idle.read_to_end().size() == first);  // closed without a word
  CHECK(idle.closed());
  auto late = net::stream::connect(srv.local_address(), patience);  // the listener is gone
  CHECK_FALSE(late);
  CHECK_FALSE(stopped.load());
  g.open();
  const std::string in = busy.read_to_end();
  CHECK(in.find("done /slow") != std::string::npos);
  CHECK(raw_client::lower(in).find("connection: close") != std::string::npos);
  CHECK(grove_test::wait_until([&] { return stopped.load(); }));
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(srv.pid()) && !grove::is_alive(stopper); }));
}

TEST_CASE("at the drain deadline a handler that never returns is killed, and stop returns") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({}, [](const http::request&, const svc::deadline&) -> http::response {
    for (;;) grove::receive([](int) {});  // ignores its deadline
  });
  raw_client c(srv.local_address());
  c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(grove_test::wait_until([&] { return srv.stats().in_flight == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(srv.stop(200ms));
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  CHECK(c.read_to_end().empty());
  CHECK(c.closed());
  CHECK(srv.stats().connections_open == 0);
}

TEST_CASE("killing the server's process closes the listener and every connection") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  gate g;
  auto s = http::server::start({}, [&](const http::request&, const svc::deadline&) {
    g.wait();
    return http::response{};
  });
  REQUIRE(s);
  std::vector<std::unique_ptr<raw_client>> conns;
  for (int i = 0; i < 10; ++i) conns.push_back(std::make_unique<raw_client>(s->local_address()));
  conns[0]->send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(grove_test::wait_until([&] { return g.waiting() == 1 && s->stats().connections_open == 10; }));
  grove::exit(s->pid(), grove::exit_reason::kill());
  for (auto& c : conns) {
    c->read_to_end();
    CHECK(c->closed());
  }
  CHECK(grove_test::wait_until([&] { return s->stats().connections_open == 0; }));
  CHECK_FALSE(net::stream::connect(s->local_address(), patience));
}

TEST_CASE("under a supervisor a killed server is restarted on the same port, and the supervisor's stop drains it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // A free port for the spec: the supervisor restarts the server on it.
  std::uint16_t port = 0;
  {
    auto probe = net::listener::listen(net::address::loopback(0));
    REQUIRE(probe);
    port = probe->local_address()->port();
  }
  http::server_options o{.address = net::address::loopback(port), .default_drain = 1s, .name = "web"};
  namespace sup = grove::supervisor;
  const grove::pid s = sup::start_link(sup::flags{.strategy = sup::strategy::one_for_one, .intensity = 5, .period = 10s},
                                       {http::server_child("web", o, hello)});
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  http::client client;
  auto r = client.get(url, svc::deadline::after(patience));
  REQUIRE(r);
  const grove::pid first = grove::whereis("web");
  REQUIRE_FALSE(first.is_null());
  grove::exit(first, grove::exit_reason::kill());
  REQUIRE(grove_test::wait_until([&] {
    const grove::pid now = grove::whereis("web");
    return !now.is_null() && now != first;
  }));
  auto again = http::client().get(url, svc::deadline::after(patience));
  REQUIRE(again);
  CHECK(again->body == "hello /x");
  grove::unlink(s);
  grove::exit(s, grove::exit_reason::shutdown());
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(s) && grove::whereis("web").is_null(); }));
}

TEST_CASE("a handler's deadline is handler_timeout from the request's arrival, and it can pass it on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.handler_timeout = 500ms}, [](const http::request&, const svc::deadline& d) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d.remaining());
    return http::response{.status = 200, .headers = {}, .body = std::to_string(left.count())};
  });
  auto r = http::client().get(url_of(srv), svc::deadline::after(patience));
  REQUIRE(r);
  const int left = std::stoi(r->body);
  CHECK(left > 0);
  CHECK(left <= 500);
}

TEST_CASE("the server stops with its parent, and a runtime stop stops it without a kill") {
  grove_test::runtime_fixture rt;
  grove::pid owner;
  {
    grove::scoped_process parent;
    auto s = start({});
    owner = s.pid();
    REQUIRE(http::client().get(url_of(s), svc::deadline::after(patience)));
  }  // the parent exits normal: the server drains and exits too
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(owner); }));
  {
    grove::scoped_process me;
    auto s = http::server::start({}, hello);  // no parent to follow: the runtime's stop ends it
    REQUIRE(s);
    raw_client idle(s->local_address());
    idle.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    idle.read_responses(1);
    grove::stop_report r = rt.stop(10s);
    CHECK(r.killed == 0);
    CHECK(r.clean);
  }
}
