// Uses grove::http alone: a server on 127.0.0.1 and a client's GET to it.
#include <cstdio>

#include <grove/grove.hpp>
#include <grove/http/client.hpp>
#include <grove/http/server.hpp>

int main() {
  grove::runtime rt({.workers = 2});
  grove::scoped_process me;
  namespace http = grove::http;
  auto srv = http::server::start({.address = grove::net::address::loopback(0)},
                                 [](const http::request&, const grove::services::deadline&) {
                                   return http::response{.status = 200, .headers = {}, .body = "hello\n"};
                                 });
  if (!srv) return 1;
  http::client c;
  auto r = c.get("http://127.0.0.1:" + std::to_string(srv->local_address().port()) + "/",
                 grove::services::deadline::after(std::chrono::seconds(20)));
  std::printf("http: %d %s", r ? r->status : -1, r ? r->body.c_str() : "\n");
  srv->stop(std::chrono::seconds(1));
  return r && r->status == 200 && r->body == "hello\n" ? 0 : 1;
}
