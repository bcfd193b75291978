// metrics.cpp: grove/http/metrics.hpp.
#include <grove/http/metrics.hpp>

#include <utility>

#include <grove/metrics.hpp>

namespace grove::http {

handler metrics_handler(handler next, std::string path) {
  return [next = std::move(next), path = std::move(path)](const request& req, const services::deadline& d) {
    const std::string_view target = std::string_view(req.target).substr(0, req.target.find('?'));
    if (target != path) {
      if (next) return next(req, d);
      return response{.status = 404, .headers = {}, .body = "not found\n"};
    }
    response r;
    if (req.method != "GET" && req.method != "HEAD") {
      r.status = 405;
      r.headers.set("Allow", "GET, HEAD");
      return r;
    }
    r.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    r.body = metrics::prometheus_text();
    return r;
  };
}

}  // namespace grove::http
