// grove/http/metrics.hpp: grove::metrics's page (grove/metrics.hpp) over HTTP, for Prometheus.
//
//   auto srv = http::server::start_link({.address = net::address::loopback(9100), .metrics_name = "admin"},
//                                       http::metrics_handler(my_handler)).value();
//   // curl http://127.0.0.1:9100/metrics
#pragma once

#include <string>

#include <grove/http/server.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::http {

// A handler that answers GET and HEAD of `path` with grove::metrics::prometheus_text() (200,
// Content-Type: text/plain; version=0.0.4), another method there with 405, and hands every other
// request to `next` (404 without one). The page is built in the connection's process, which reads
// counters only: it answers while every worker is busy as soon as one takes the connection.
handler metrics_handler(handler next = {}, std::string path = "/metrics");

}  // namespace grove::http

GROVE_PUBLIC_END
