// http_aggregator.hpp: the aggregator experiment over real sockets, shared by
// examples/http_aggregator.cpp (the demo) and tests/http/aggregator_test.cpp (its shape, short).
// The in-process version (aggregator.hpp) is the model; here every hop is HTTP on 127.0.0.1.
//
//   backends    three grove::http servers. Each request is admitted by a backend server process
//               (aggregator.hpp's `backend`: `capacity` served at once, a FIFO queue, 503 past
//               overload_limit) with the request's deadline, which travels in X-Deadline-Ms.
//               Phase D's `second` also fails a fifth of its requests at once with a 503 (flaky).
//   aggregator  a grove::http server; each request's handler fans out to the three backends with
//               gather under one deadline (1.2 s, or the client's X-Deadline-Ms if sooner), each
//               leg an http::client call: A one client with unbounded pools; B every call inside
//               one shared services::pool of 5; C one http::client per backend whose per-host pool
//               is the bulkhead (6 for first and third, 3 for second); D as C, with a retry policy
//               for `second` (at most 3 attempts, 20 ms backoff) that stays inside the deadline.
//   clients     10 processes calling the aggregator over HTTP in a loop until the phase ends.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include <grove/http/client.hpp>
#include <grove/http/server.hpp>

#include "aggregator.hpp"

namespace http_aggregator {

namespace demo = aggregator_demo;
namespace http = grove::http;
namespace svc = grove::services;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

struct http_phase {
  demo::phase_config base;  // label, fan-out mode, degraded, duration, clients, time scale
  bool flaky_second_with_retry = false;
};

inline std::array<http_phase, 4> phases(milliseconds duration, int clients, double scale) {
  auto p = demo::phases(duration, clients, scale);
  demo::phase_config d = p[2];
  d.label = 'D';
  d.second_degraded = false;
  return {http_phase{p[0]}, http_phase{p[1]}, http_phase{p[2]}, http_phase{d, true}};
}

inline std::string describe(const http_phase& p) {
  if (p.flaky_second_with_retry)
    return "pools per backend as in C, second healthy but failing 20% at once, retried (3 attempts, 20 ms backoff)";
  return demo::describe(p.base);
}

// The deadline a request carries: X-Deadline-Ms (ms left when it was sent), or `fallback`.
inline svc::deadline carried(const http::request& req, const svc::deadline& fallback) {
  if (const std::string* v = req.headers.find("x-deadline-ms")) {
    try {
      return earliest(fallback, svc::deadline::after(milliseconds(std::stol(*v))));
    } catch (const std::exception&) {
    }
  }
  return fallback;
}

inline http::request with_deadline(const svc::deadline& d) {
  http::request r;
  if (!d.is_never())
    r.headers.set("X-Deadline-Ms", std::to_string(std::chrono::duration_cast<milliseconds>(d.remaining()).count()));
  return r;
}

// The result of one leg, as the aggregator tells its client: "ok", "late", "rejected", "failed".
inline demo::call_result classify_leg(const svc::outcome<http::response>& r) {
  if (!r) {
    if (r.error() == svc::errc::deadline_exceeded) return demo::call_result::late;
    if (r.error() == svc::errc::pool_full) return demo::call_result::rejected;
    return demo::call_result::failed;
  }
  if (r->status == 200) return demo::call_result::ok;
  if (r->status == 504) return demo::call_result::late;
  return demo::call_result::failed;  // 503
}

struct running_phase {
  std::array<svc::server_ref<demo::backend>, demo::backend_count> admission{};
  std::array<http::server, demo::backend_count> backends;
  http::server aggregator;
  std::vector<std::pair<std::string, svc::pool>> pools;
  std::array<std::optional<http::client>, demo::backend_count> clients;  // C, D: one per backend; A, B: [0] for all
  std::shared_ptr<svc::retry_policy> retry;
};

inline std::string url(const http::server& s, const char* path) {
  return "http://127.0.0.1:" + std::to_string(s.local_address().port()) + path;
}

inline demo::phase_result run_phase(const http_phase& hp) {
  const demo::phase_config& pc = hp.base;
  running_phase rp;
  auto flaky_count = std::make_shared<std::atomic<std::uint64_t>>(0);
  for (int i = 0; i < demo::backend_count; ++i) {
    const auto b = static_cast<std::size_t>(i);
    rp.admission[b] = svc::start_link<demo::backend>({}, std::string(demo::backend_names[b]),
                                                     demo::model_for(i, pc.second_degraded, pc.time_scale))
                          .value();
    const bool flaky = hp.flaky_second_with_retry && i == 1;
    auto handler = [ref = rp.admission[b], flaky, flaky_count](const http::request& req, const svc::deadline& d) {
      if (flaky && flaky_count->fetch_add(1, std::memory_order_relaxed) % 5 == 0)
        return http::response{.status = 503, .headers = {}, .body = "flaky\n"};
      auto r = svc::call(ref, demo::query{}, carried(req, d));
      if (r) return http::response{.status = 200, .headers = {}, .body = *r};
      const bool late = r.error() == svc::errc::deadline_exceeded || r.error() == grove::errc::timeout;
      return http::response{.status = late ? 504 : 503, .headers = {}, .body = r.failure().to_string()};
    };
    rp.backends[b] = http::server::start_link({.max_connections = 100'000}, handler).value();
  }
  const std::size_t unbounded = 100'000;
  if (pc.mode == demo::fan_out::split_pools) {
    for (int i = 0; i < demo::backend_count; ++i)
      rp.clients[static_cast<std::size_t>(i)].emplace(http::client_options{.max_connections_per_host = i == 1 ? 3u : 6u});
  } else {
    rp.clients[0].emplace(http::client_options{.max_connections_per_host = unbounded});
  }
  if (pc.mode == demo::fan_out::shared_pool)
    rp.pools.emplace_back("shared (5)", svc::pool::start_link({.size = 5, .max_waiting = 30}).value());
  if (hp.flaky_second_with_retry) {
    rp.retry = std::make_shared<svc::retry_policy>(svc::retry_policy{.max_attempts = 3, .initial_backoff = milliseconds(20),
                                                                     .max_backoff = milliseconds(20)});
    rp.retry->retry_if = [](const svc::failure& f) { return f.code == std::errc::resource_unavailable_try_again; };
  }

  const milliseconds budget = demo::scaled(milliseconds(1200), pc.time_scale);
  std::array<std::string, demo::backend_count> urls{url(rp.backends[0], "/q"), url(rp.backends[1], "/q"), url(rp.backends[2], "/q")};
  const grove::pid shared_pool = rp.pools.empty() ? grove::pid() : rp.pools[0].second.pid();
  auto aggregate = [&rp, urls, budget, shared_pool](const http::request& req, const svc::deadline& d) {
    const svc::deadline all = earliest(carried(req, d), svc::deadline::after(budget));
    auto leg = [&](int i) {
      const auto b = static_cast<std::size_t>(i);
      http::client c = rp.clients[b] ? *rp.clients[b] : *rp.clients[0];
      const std::string u = urls[b];
      std::shared_ptr<svc::retry_policy> retry = i == 1 ? rp.retry : nullptr;
      return [c, u, retry, shared_pool](const svc::deadline& left) mutable -> svc::outcome<http::response> {
        // By value: a pool worker may still run it after this leg has given up at the deadline.
        auto once = [c, u, retry](const svc::deadline& dd) mutable -> svc::outcome<http::response> {
          auto r = c.send(u, with_deadline(dd), dd);
          if (retry && r && r->status == 503)  // for the retry policy, a 503 is a failure to retry
            return svc::failure(std::make_error_code(std::errc::resource_unavailable_try_again));
          return r;
        };
        if (retry) return svc::retry(*retry, left, once);
        if (!shared_pool.is_null()) return svc::pool(shared_pool).run(left, once);
        return once(left);
      };
    };
    auto [first, second, third] = svc::gather(all, leg(0), leg(1), leg(2));
    std::string body;
    for (const auto* r : {&first, &second, &third}) {
      const auto c = static_cast<std::size_t>(classify_leg(*r));
      body += static_cast<char>('0' + c);
    }
    return http::response{.status = 200, .headers = {}, .body = body};
  };
  rp.aggregator = http::server::start_link({.max_connections = 100'000}, aggregate).value();

  // The clients: each its own process and connection, a 5 s deadline per call.
  demo::phase_result out;
  out.config = pc;
  const grove::pid me = grove::self();
  const auto start = clock_type::now();
  const auto end = start + pc.duration;
  const std::string agg_url = url(rp.aggregator, "/");
  for (int c = 0; c < pc.clients; ++c) {
    grove::spawn([agg_url, end, me] {
      http::client self_client({.max_connections_per_host = 1});
      demo::client_report rep;
      while (clock_type::now() < end) {
        const auto t0 = clock_type::now();
        const auto d = svc::deadline::after(std::chrono::seconds(5));
        auto r = self_client.send(agg_url, with_deadline(d), d);
        rep.latencies_ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
        if (!r || r->status != 200 || r->body.size() != demo::backend_count) {
          ++rep.errors;
          continue;
        }
        bool full = true;
        for (std::size_t b = 0; b < demo::backend_count; ++b) {
          const auto k = static_cast<std::size_t>(r->body[b] - '0');
          ++rep.calls[b][std::min<std::size_t>(k, 3)];
          full = full && k == 0;
        }
        (full ? rep.full : rep.partial) += 1;
      }
      grove::send(me, std::move(rep));
    });
  }
  for (int c = 0; c < pc.clients; ++c) {
    auto got = grove::receive([](demo::client_report r) { return std::optional<demo::client_report>(std::move(r)); },
                              grove::after(pc.duration + std::chrono::seconds(60), [] { return std::optional<demo::client_report>(); }));
    if (!got) break;
    out.latencies_ms.insert(out.latencies_ms.end(), got->latencies_ms.begin(), got->latencies_ms.end());
    out.full += got->full;
    out.partial += got->partial;
    out.errors += got->errors;
    for (std::size_t b = 0; b < demo::backend_count; ++b)
      for (std::size_t k = 0; k < 4; ++k) out.calls[b][k] += got->calls[b][k];
  }
  out.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  out.requests = out.latencies_ms.size();
  out.retries = rp.retry ? rp.retry->stats().retries : 0;
  for (auto& [name, p] : rp.pools) {
    if (auto s = p.stats()) out.pools.emplace_back(name, *s);
    (void)p.stop();
  }
  rp.aggregator.stop(std::chrono::seconds(2));
  for (auto& b : rp.backends) b.stop(std::chrono::seconds(2));
  for (auto& a : rp.admission) (void)svc::stop(a);
  return out;
}

// demo::format, with this phase's description and what only HTTP adds.
inline std::string format(const http_phase& hp, const demo::phase_result& r) {
  std::string s = demo::format(r);
  const std::size_t eol = s.find('\n');
  s = fmt::format("phase {}: {} (HTTP on 127.0.0.1)", r.config.label, describe(hp)) + s.substr(eol);
  if (hp.flaky_second_with_retry) {
    const std::size_t at = s.find("  retries ");
    s = s.substr(0, at) + fmt::format("  retries    {} (second's 503s, retried within the deadline by the policy)\n", r.retries);
  }
  return s;
}

}  // namespace http_aggregator
