// grove::http::client: deadlines that hold against silent and dribbling servers, the bounded pool
// (full, waiting, callers killed while they hold or wait for a connection), reuse and stale
// connections, bad URLs, refused connections, malformed and oversized responses, and retries only
// when a policy asks for them.
#include <doctest/doctest.h>

#include "http/helpers.hpp"

using namespace http_test;

namespace {

http::server start(http::server_options o, http::handler h) {
  auto s = http::server::start_link(std::move(o), std::move(h));
  REQUIRE_MESSAGE(s, "start: " << s.error().message());
  return std::move(*s);
}

http::response ok(const http::request& req, const svc::deadline&) {
  return http::response{.status = 200, .headers = {}, .body = req.method + " " + req.target + " " + req.body};
}

bool svc_mailbox_empty() {
  return grove::receive([](grove::any_message) { return false; }, grove::after(0ms, [] { return true; }));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("get and post reach the handler, with the method, target, body and headers") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({}, [](const http::request& req, const svc::deadline&) {
    const std::string* type = req.headers.find("content-type");
    http::response r{.status = 201, .headers = {}, .body = req.method + " " + req.target + " " + req.body + " " + (type ? *type : "")};
    r.headers.set("X-Served-By", "grove");
    return r;
  });
  http::client c;
  auto g = c.get(url_of(srv, "/items?page=2"), svc::deadline::after(patience));
  REQUIRE(g);
  CHECK(g->status == 201);
  CHECK(g->body == "GET /items?page=2  ");
  REQUIRE(g->headers.find("x-served-by"));
  CHECK(*g->headers.find("X-SERVED-BY") == "grove");
  auto p = c.post(url_of(srv, "/orders"), std::string(100'000, 'o'), "application/json", svc::deadline::after(patience));
  REQUIRE(p);
  CHECK(p->body == "POST /orders " + std::string(100'000, 'o') + " application/json");
  auto h = c.get("http://localhost:" + std::to_string(srv.local_address().port()) + "/named", svc::deadline::after(patience));
  REQUIRE_MESSAGE(h, h.error().message());  // a host name, resolved
  CHECK(h->body == "GET /named  ");
}

TEST_CASE("a server that never answers costs the caller its deadline, not a moment more, and the connection is not reused") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  raw_server silent([](net::stream& s) {
    read_head(s);
    grove::receive([](int) {});  // holds the connection, says nothing
  });
  http::client c;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c.get(silent.url(), svc::deadline::after(300ms));
  const double took = seconds_since(t0);
  REQUIRE_FALSE(r);
  CHECK(r.error() == svc::errc::deadline_exceeded);
  CHECK(took >= 0.3);
  CHECK(took < 5.0);
  CHECK(c.idle_connections(silent.host_port()) == 0);
  CHECK(c.stats().deadline_exceeded == 1);
  CHECK(c.stats().in_flight == 0);
}

TEST_CASE("a server that dribbles its response a byte at a time still ends the call at its deadline") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  raw_server dribbler([](net::stream& s) {
    read_head(s);
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + std::string(100'000, 'd');
    for (char ch : resp) {
      if (s.write_all(&ch, 1, patience)) return;
      grove::sleep_for(10ms);  // the hostile server's pace
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = http::client().get(dribbler.url(), svc::deadline::after(400ms));
  REQUIRE_FALSE(r);
  CHECK(r.error() == svc::errc::deadline_exceeded);
  CHECK(seconds_since(t0) < 5.0);
}

TEST_CASE("a deadline already passed fails at once without connecting") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  raw_server never([](net::stream&) {});
  http::client c;
  auto r = c.get(never.url(), svc::deadline::after(-1ms));
  REQUIRE_FALSE(r);
  CHECK(r.error() == svc::errc::deadline_exceeded);
  CHECK(c.stats().connects == 0);
}

TEST_CASE("the pool is a bulkhead: over max_connections_per_host a call waits, or with wait_for_connection false fails at once") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid self = me.pid();
  struct done {
    bool ok;
  };
  for (bool wait : {false, true}) {
    gate g;
    auto srv = start({}, [&](const http::request& req, const svc::deadline& d) {
      if (req.target == "/slow") g.wait();
      return ok(req, d);
    });
    http::client c({.max_connections_per_host = 1, .wait_for_connection = wait});
    grove::spawn([c, self, url = url_of(srv, "/slow")]() mutable {
      grove::send(self, done{static_cast<bool>(c.get(url, svc::deadline::after(patience)))});
    });
    REQUIRE(grove_test::wait_until([&] { return g.waiting() == 1; }));  // it holds the only connection
    if (!wait) {
      auto r = c.get(url_of(srv, "/fast"), svc::deadline::after(patience));
      REQUIRE_FALSE(r);
      CHECK(r.error() == svc::errc::pool_full);
      CHECK(c.stats().pool_full == 1);
      g.open();
    } else {
      grove::spawn([c, self, url = url_of(srv, "/fast")]() mutable {
        grove::send(self, done{static_cast<bool>(c.get(url, svc::deadline::after(patience)))});
      });
      REQUIRE(grove_test::wait_until([&] { return c.stats().pool_waits == 1; }));
      CHECK(svc_mailbox_empty());  // the second call waits for the connection
      g.open();
      CHECK(grove::receive([](done d) { return d.ok; }, grove::after(patience, [] { return false; })));
    }
    CHECK(grove::receive([](done d) { return d.ok; }, grove::after(patience, [] { return false; })));
    CHECK(c.stats().connects == 1);  // the waiter got the holder's connection
    CHECK(srv.stop(patience));
  }
}

TEST_CASE("a waiter whose deadline passes leaves the queue, and callers killed while holding or waiting free their slots") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  gate g;
  auto srv = start({}, [&](const http::request& req, const svc::deadline& d) {
    if (req.target == "/slow") g.wait();
    return ok(req, d);
  });
  http::client c({.max_connections_per_host = 1});
  const std::string slow = url_of(srv, "/slow"), fast = url_of(srv, "/fast");
  const grove::pid holder = grove::spawn([c, slow]() mutable { (void)c.get(slow, svc::deadline::after(patience)); });
  REQUIRE(grove_test::wait_until([&] { return g.waiting() == 1; }));
  // A waiter with a short deadline.
  auto r = c.get(fast, svc::deadline::after(200ms));
  REQUIRE_FALSE(r);
  CHECK(r.error() == svc::errc::deadline_exceeded);
  // A waiter that is killed while it waits.
  const grove::pid waiter = grove::spawn([c, fast]() mutable { (void)c.get(fast, svc::deadline::after(patience)); });
  REQUIRE(grove_test::wait_until([&] { return c.stats().pool_waits == 2; }));
  grove::exit(waiter, grove::exit_reason::kill());
  // The holder killed in the middle of its call: its connection is closed, its slot freed.
  grove::exit(holder, grove::exit_reason::kill());
  REQUIRE(grove_test::wait_until([&] { return !grove::is_alive(holder) && !grove::is_alive(waiter); }));
  auto after = c.get(fast, svc::deadline::after(patience));
  REQUIRE_MESSAGE(after, after.error().message());
  CHECK(after->body == "GET /fast ");
  CHECK(c.stats().in_flight == 0);
  g.open();
}

TEST_CASE("a pooled connection the server has closed is not used: the call opens a new one and succeeds") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  // Long enough that the first request's fresh connection is not closed as idle before it is written.
  auto srv = start({.idle_timeout = 1s}, ok);
  http::client c;
  const std::string host_port = "127.0.0.1:" + std::to_string(srv.local_address().port());
  REQUIRE(c.get(url_of(srv, "/1"), svc::deadline::after(patience)));
  CHECK(c.idle_connections(host_port) == 1);
  REQUIRE(grove_test::wait_until([&] { return srv.stats().connections_open == 0; }));  // the server closed it
  auto r = c.get(url_of(srv, "/2"), svc::deadline::after(patience));
  REQUIRE_MESSAGE(r, r.error().message());
  CHECK(r->body == "GET /2 ");
  CHECK(c.stats().connects == 2);
  CHECK(c.stats().io_errors == 0);
}

TEST_CASE("a pooled connection the server closes unanswered as a request goes out: a GET is replayed on a new one, a POST is not") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto conns = std::make_shared<std::atomic<int>>(0);
  // Answers the first request on each connection (kept alive), and closes at the second without
  // a word: a server closing an idle connection just as the client's next request reaches it.
  raw_server closing([conns](net::stream& s) {
    const std::string body = "conn " + std::to_string(conns->fetch_add(1) + 1);
    if (!read_head(s)) return;
    (void)s.write_all("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body, patience);
    (void)read_head(s);
  });
  http::client c;
  auto first = c.get(closing.url("/1"), svc::deadline::after(patience));
  REQUIRE_MESSAGE(first, first.error().message());
  CHECK(first->body == "conn 1");
  auto second = c.get(closing.url("/2"), svc::deadline::after(patience));  // connection 1 closes: replayed
  REQUIRE_MESSAGE(second, second.error().message());
  CHECK(second->body == "conn 2");
  CHECK(c.stats().replays == 1);
  CHECK(c.stats().attempts == 3);
  CHECK(c.stats().connects == 2);
  CHECK(c.stats().io_errors == 0);

  // A POST may have been acted on before the close: the caller gets the error, not a second POST.
  auto post = c.post(closing.url("/3"), "x", "text/plain", svc::deadline::after(patience));  // on connection 2
  REQUIRE_FALSE(post);
  CHECK_MESSAGE((post.error() == http::errc::closed_early || post.error() == std::errc::connection_reset), post.error().message());
  CHECK(c.stats().replays == 1);
  CHECK(c.stats().io_errors == 1);
  CHECK(conns->load() == 2);

  // Unless it says it may be sent twice, with an Idempotency-Key.
  REQUIRE(c.get(closing.url("/4"), svc::deadline::after(patience)));  // connection 3, pooled
  http::request keyed{.method = "POST", .target = "/", .headers = {}, .body = "x"};
  keyed.headers.set("Idempotency-Key", "order-7");
  auto again = c.send(closing.url("/5"), keyed, svc::deadline::after(patience));
  REQUIRE_MESSAGE(again, again.error().message());
  CHECK(again->body == "conn 4");
  CHECK(c.stats().replays == 2);
}

TEST_CASE("a response with Connection: close is not pooled") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({}, [](const http::request& req, const svc::deadline& d) {
    http::response r = ok(req, d);
    r.headers.set("Connection", "close");
    return r;
  });
  http::client c;
  REQUIRE(c.get(url_of(srv, "/1"), svc::deadline::after(patience)));
  REQUIRE(c.get(url_of(srv, "/2"), svc::deadline::after(patience)));
  CHECK(c.stats().connects == 2);
  CHECK(c.stats().reused == 0);
}

TEST_CASE("bad URLs, refused connections and unknown hosts are errors with their own codes") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  http::client c;
  for (const char* bad : {"ftp://127.0.0.1/", "127.0.0.1:80/", "http://", "http://127.0.0.1:99999/", "http://127.0.0.1:abc/",
                          "https://127.0.0.1/"}) {
    auto r = c.get(bad, svc::deadline::after(patience));
    REQUIRE_FALSE(r);
    CHECK_MESSAGE(r.error() == http::errc::bad_url, bad);
  }
  std::uint16_t port = 0;
  {
    auto l = net::listener::listen(net::address::loopback(0));  // a port just freed: nobody listens
    REQUIRE(l);
    port = l->local_address()->port();
  }
  auto refused = c.get("http://127.0.0.1:" + std::to_string(port) + "/", svc::deadline::after(patience));
  REQUIRE_FALSE(refused);
  CHECK(refused.error() == std::errc::connection_refused);
  auto unknown = c.get("http://no-such-host.invalid/", svc::deadline::after(patience));
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error() == http::errc::resolve_failed);
  CHECK(c.stats().connect_errors == 2);
}

TEST_CASE("malformed, truncated and oversized responses are errors, and their connections are dropped") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto serve = [](std::string bytes) {
    return [bytes](net::stream& s) {
      if (!read_head(s)) return;
      (void)s.write_all(bytes, patience);
    };  // then closes
  };
  struct answer {
    std::string bytes;
    std::error_code expected;
  };
  for (const answer& a : {answer{"SMTP ready\r\n\r\n", http::errc::bad_message},
                          answer{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", http::errc::closed_early},
                          answer{"", http::errc::closed_early},
                          answer{"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'), http::errc::message_too_large},
                          answer{"HTTP/1.1 200 OK\r\nX: " + std::string(5000, 'h') + "\r\nContent-Length: 0\r\n\r\n", http::errc::message_too_large},
                          // two framings of one body: a smuggling attempt, not a response
                          answer{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", http::errc::bad_message},
                          answer{"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", http::errc::bad_message},
                          answer{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\n", http::errc::bad_message},
                          answer{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5000\r\n" + std::string(5000, 'x'), http::errc::message_too_large},
                          // interim responses without end: their heads add up to past the limit
                          answer{[] {
                                   std::string s;
                                   for (int i = 0; i < 100; ++i) s += "HTTP/1.1 100 Continue\r\n\r\n";
                                   return s;
                                 }(),
                                 http::errc::message_too_large}}) {
    raw_server bad(serve(a.bytes));
    http::client c({.max_response_head_bytes = 1024, .max_response_body_bytes = 1000});
    auto r = c.get(bad.url(), svc::deadline::after(patience));
    REQUIRE_FALSE(r);
    CHECK_MESSAGE(r.error() == a.expected, r.error().message() << " for " << a.bytes.substr(0, 40));
    CHECK(c.stats().in_flight == 0);
  }
  // A response without Content-Length ends at the close; one with chunked encoding is decoded.
  raw_server to_eof(serve("HTTP/1.1 200 OK\r\n\r\nuntil the end"));
  auto e = http::client().get(to_eof.url(), svc::deadline::after(patience));
  REQUIRE(e);
  CHECK(e->body == "until the end");
  raw_server chunked(serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
  auto ch = http::client().get(chunked.url(), svc::deadline::after(patience));
  REQUIRE(ch);
  CHECK(ch->body == "hello world");
  // An interim 100 Continue is skipped: the call's answer is the final response after it.
  raw_server interim(serve("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone"));
  auto in = http::client().get(interim.url(), svc::deadline::after(patience));
  REQUIRE(in);
  CHECK(in->status == 201);
  CHECK(in->body == "done");
}

TEST_CASE("the client never retries on its own; with a policy it retries within the deadline, each retry counted") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto attempts = std::make_shared<std::atomic<int>>(0);
  // Drops the first two connections without a word, then answers.
  raw_server flaky([attempts](net::stream& s) {
    if (!read_head(s)) return;
    if (attempts->fetch_add(1) < 2) return;
    (void)s.write_all("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", patience);
  });
  http::client plain;
  auto once = plain.get(flaky.url(), svc::deadline::after(patience));
  REQUIRE_FALSE(once);
  CHECK(once.error() == http::errc::closed_early);
  CHECK(attempts->load() == 1);
  CHECK(plain.stats().attempts == 1);
  CHECK(plain.stats().retries == 0);
  CHECK(plain.stats().replays == 0);  // a new connection closed unanswered: the server saw the GET

  svc::retry_policy policy{.max_attempts = 3, .initial_backoff = 1ms, .max_backoff = 10ms};
  policy.retry_if = [](const svc::failure& f) { return f.code == http::errc::closed_early; };
  http::client retrying({.retry = policy});
  auto r = retrying.get(flaky.url(), svc::deadline::after(patience));
  REQUIRE_MESSAGE(r, r.error().message());
  CHECK(r->body == "ok");
  CHECK(attempts->load() == 3);
  CHECK(retrying.stats().attempts == 2);
  CHECK(retrying.stats().retries == 1);
  CHECK(policy.stats().attempts == 2);

  // A retry never outlives the deadline: against a server that always drops, the call ends by it.
  raw_server dead([](net::stream& s) { read_head(s); });
  svc::retry_policy forever{.max_attempts = 1000, .initial_backoff = 50ms, .max_backoff = 50ms};
  forever.retry_if = [](const svc::failure&) { return true; };
  const auto t0 = std::chrono::steady_clock::now();
  auto gave_up = plain.send(dead.url(), http::request{}, svc::deadline::after(500ms), forever);
  REQUIRE_FALSE(gave_up);
  CHECK(seconds_since(t0) < 5.0);
  CHECK(forever.stats().attempts >= 2);
}

TEST_CASE("many processes share one client: every call gets its own response") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({}, ok);
  http::client c({.max_connections_per_host = 4});
  const grove::pid self = me.pid();
  const int callers = 50;
  for (int i = 0; i < callers; ++i)
    grove::spawn([c, self, i, url = url_of(srv, "/" + std::to_string(i))]() mutable {
      auto r = c.get(url, svc::deadline::after(patience));
      grove::send(self, std::pair<int, std::string>(i, r ? r->body : r.error().message()));
    });
  int right = 0;
  for (int k = 0; k < callers; ++k)
    right += grove::receive([](std::pair<int, std::string> p) { return p.second == "GET /" + std::to_string(p.first) + " " ? 1 : 0; },
                            grove::after(patience, [] { return 0; }));
  CHECK(right == callers);
  CHECK(c.stats().connects <= 4);
}

TEST_CASE("a server that answers before it has read the request's body (413, then close) gets its answer to the caller") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.max_body_bytes = 1000}, ok);
  http::client c;
  // 32 MiB: more than the socket buffers hold, so the client is still writing when the server has
  // answered and closed; the write fails (EPIPE or a reset), and the answer is in the socket.
  auto r = c.post(url_of(srv, "/upload"), std::string(32 << 20, 'u'), "application/octet-stream", svc::deadline::after(patience));
  REQUIRE_MESSAGE(r, r.error().message());
  CHECK(r->status == 413);
  auto after = c.get(url_of(srv, "/next"), svc::deadline::after(patience));  // the dropped connection is not reused
  REQUIRE(after);
  CHECK(after->status == 200);
}

TEST_CASE("a server that answers and closes without reading the body still gets its answer to the caller") {
  // Unlike grove's server (which lingers), this one closes at once with the body unread: its
  // kernel resets the connection, and the client's write fails. The answer came before the reset,
  // and the call returns it.
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  raw_server abrupt([](net::stream& s) {
    if (!read_head(s)) return;
    (void)s.write_all(std::string_view("HTTP/1.1 413 Content Too Large\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbig!"), patience);
  });  // closes with the body unread
  http::client c;
  for (int i = 0; i < 3; ++i) {
    auto r = c.post(abrupt.url("/upload"), std::string(32 << 20, 'u'), "application/octet-stream", svc::deadline::after(patience));
    REQUIRE_MESSAGE(r, r.error().message());
    CHECK(r->status == 413);
    CHECK(r->body == "big!");
  }
  CHECK(c.stats().in_flight == 0);
}
