// grove/metrics.hpp and grove/http/metrics.hpp: the runtime's and a server's figures in
// Prometheus's text format, over HTTP on 127.0.0.1.
#include "helpers.hpp"

#include <regex>
#include <sstream>
#include <stdexcept>

#include <grove/http/metrics.hpp>
#include <grove/metrics.hpp>

using namespace http_test;

namespace {

// Every line is a comment (# HELP / # TYPE) or `name{labels} value`, as the text format 0.0.4 says;
// each family's TYPE comes before its samples.
void check_format(const std::string& page) {
  static const std::regex sample_line(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*\})? (-?[0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)?|NaN|\+Inf|-Inf)$)");
  static const std::regex type_line(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge)$)");
  std::istringstream in(page);
  std::string line, typed;
  int samples = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (std::regex_match(line, m, type_line)) {
      typed = m[1];
      continue;
    }
    REQUIRE_MESSAGE(std::regex_match(line, m, sample_line), "not a sample line: " << line);
    CHECK_MESSAGE(m[1] == typed, "sample before its TYPE: " << line);
    ++samples;
  }
  CHECK(samples > 10);
}

// The value of the first sample line that starts with `prefix` (name and labels), or -1.
double value_of(const std::string& page, const std::string& prefix) {
  const auto at = page.find("\n" + prefix + " ");
  if (at == std::string::npos) return -1;
  return std::stod(page.substr(at + prefix.size() + 2));
}

}  // namespace

TEST_CASE("GET /metrics answers the runtime's and the server's figures in Prometheus's text format") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = http::server::start_link({.metrics_name = "api"}, http::metrics_handler([](const http::request&, const svc::deadline&) {
                                        return http::response{.status = 200, .headers = {}, .body = "hello"};
                                      }))
                 .value();
  http::client c;
  auto hello = c.get(url_of(srv, "/hello"), svc::deadline::after(patience));
  REQUIRE(hello);
  CHECK(hello->body == "hello");  // other paths go to the next handler
  // Two processes exchange a message, so the message counters have something to count.
  grove::pid echo = grove::spawn([] { grove::receive([](grove::pid from) { grove::send(from, 1); }); });
  grove::spawn([echo] {
    grove::send(echo, grove::self());
    grove::receive([](int) {});
  });
  REQUIRE(grove_test::wait_until([&] { return grove::system_info().messages_received >= 2; }));
  auto r = c.get(url_of(srv, "/metrics"), svc::deadline::after(patience));
  REQUIRE(r);
  CHECK(r->status == 200);
  REQUIRE(r->headers.find("content-type"));
  CHECK(r->headers.find("content-type")->rfind("text/plain; version=0.0.4", 0) == 0);
  const std::string& page = r->body;
  check_format(page);
  CHECK(page.find("# TYPE grove_processes gauge\n") != std::string::npos);
  CHECK(value_of(page, "grove_processes") >= 3);  // me, the server, its acceptor, the connection
  CHECK(value_of(page, "grove_process_limit") > 0);
  double switches = 0;
  for (unsigned w = 0; w < grove_test::test_workers(); ++w) {
    const double v = value_of(page, "grove_worker_context_switches_total{worker=\"" + std::to_string(w) + "\"}");
    CHECK(v >= 0);  // one sample per worker
    switches += v;
  }
  CHECK(switches > 0);
  CHECK(value_of(page, "grove_reductions_total") > 0);
  CHECK(value_of(page, "grove_worker_reductions_total{worker=\"0\"}") >= 0);
  CHECK(value_of(page, "grove_messages_sent_total") >= 2);  // the two above
  CHECK(value_of(page, "grove_messages_received_total") >= 2);
  CHECK(value_of(page, "grove_worker_messages_sent_total{worker=\"0\"}") >= 0);
  CHECK(value_of(page, "grove_resources_in_use{kind=\"fds\"}") >= 2);  // the listener and this connection
  CHECK(value_of(page, "grove_http_server_requests_total{server=\"api\"}") == 2);  // /hello and this one
  CHECK(value_of(page, "grove_http_server_responses_total{server=\"api\",class=\"2xx\"}") == 1);  // /hello's
  CHECK(value_of(page, "grove_http_server_connections_open{server=\"api\"}") == 1);
  // Only GET and HEAD at the path.
  auto post = c.post(url_of(srv, "/metrics"), "x", "text/plain", svc::deadline::after(patience));
  REQUIRE(post);
  CHECK(post->status == 405);
  // Stopped, the server's figures leave the page.
  srv.stop(1s);
  const std::string after = grove::metrics::prometheus_text();
  CHECK(after.find("server=\"api\"") == std::string::npos);
  CHECK(after.find("grove_processes ") != std::string::npos);
}

TEST_CASE("a named client's stats are on the metrics page while a copy of it lives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = http::server::start_link({}, [](const http::request&, const svc::deadline&) {
               return http::response{.status = 200, .headers = {}, .body = "ok"};
             }).value();
  std::uint16_t closed_port = 0;
  {
    auto l = net::listener::listen(net::address::loopback(0));  // a port just freed: nobody listens
    REQUIRE(l);
    closed_port = l->local_address()->port();
  }
  {
    http::client c({.metrics_name = "inventory"});
    for (int i = 0; i < 3; ++i) REQUIRE(c.get(url_of(srv, "/"), svc::deadline::after(patience)));
    CHECK_FALSE(c.get("http://127.0.0.1:" + std::to_string(closed_port) + "/", svc::deadline::after(patience)));
    http::client copy = c;
    {
      http::client gone = std::move(c);  // the original's state lives on in the copies
    }
    const std::string page = grove::metrics::prometheus_text();
    check_format(page);
    CHECK(value_of(page, "grove_http_client_requests_total{client=\"inventory\"}") == 4);
    CHECK(value_of(page, "grove_http_client_responses_total{client=\"inventory\"}") == 3);
    CHECK(value_of(page, "grove_http_client_connects_total{client=\"inventory\"}") == 1);  // kept alive, reused
    CHECK(value_of(page, "grove_http_client_reused_total{client=\"inventory\"}") == 2);
    CHECK(value_of(page, "grove_http_client_in_flight{client=\"inventory\"}") == 0);
    CHECK(value_of(page, "grove_http_client_failures_total{client=\"inventory\",why=\"connect\"}") == 1);
    CHECK(value_of(page, "grove_http_client_failures_total{client=\"inventory\",why=\"io\"}") == 0);
    CHECK(value_of(page, "grove_http_client_latency_seconds{client=\"inventory\",quantile=\"0.5\"}") > 0);
    CHECK(copy.stats().requests == 4);
  }
  CHECK(grove::metrics::prometheus_text().find("client=\"inventory\"") == std::string::npos);  // the last copy gone
  http::client unnamed;
  REQUIRE(unnamed.get(url_of(srv, "/"), svc::deadline::after(patience)));
  CHECK(grove::metrics::prometheus_text().find("grove_http_client_requests_total") == std::string::npos);
  srv.stop(1s);
}

TEST_CASE("without a next handler other paths are 404") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = http::server::start_link({}, http::metrics_handler()).value();
  auto r = http::client().get(url_of(srv, "/nothing"), svc::deadline::after(patience));
  REQUIRE(r);
  CHECK(r->status == 404);
  srv.stop(1s);
}

TEST_CASE("collectors add families; one that throws adds nothing; labels are escaped; removed, it is gone") {
  namespace m = grove::metrics;
  CHECK(m::label("path", "a\"b\\c\nd") == "path=\"a\\\"b\\\\c\\nd\"");
  const auto good = m::add_collector([](std::string& out) {
    m::write_family(out, "app_orders_total", m::kind::counter, "Orders taken.", {{m::label("shop", "north"), 42}});
  });
  const auto bad = m::add_collector([](std::string& out) {
    m::write_family(out, "app_half_written", m::kind::gauge, "Never seen.", {{"", 1}});
    throw std::runtime_error("collector failed");
  });
  std::string page = m::prometheus_text();  // no runtime: only the collectors
  CHECK(page.find("grove_processes") == std::string::npos);
  CHECK(page.find("# TYPE app_orders_total counter\napp_orders_total{shop=\"north\"} 42\n") != std::string::npos);
  CHECK(page.find("app_half_written") == std::string::npos);
  m::remove_collector(good);
  m::remove_collector(bad);
  CHECK(m::prometheus_text().find("app_orders_total") == std::string::npos);
}
