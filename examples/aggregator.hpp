// aggregator.hpp: the aggregator experiment, shared by examples/aggregator.cpp (the demo) and
// tests/services/aggregator_test.cpp (its shape, in short phases). See aggregator.cpp for the story.
//
// The pieces, all built from grove::services:
//   backend     a server with `capacity` requests served at once (each by a helper process that
//               sleeps the service time and replies through the call's reply_to) and a FIFO queue for
//               the rest: it "can serve only a few requests at once before it slows further". With
//               more than overload_limit requests serving or queued it answers "503 overloaded" (after
//               a tenth of its latency: refusing takes a moment too). A request whose deadline (which
//               travels with the call) has passed when its turn comes is dropped, not served.
//   aggregator  a server; each call is handed to a request process (the reply_to travels with it)
//               that fans out to the three backends with gather under one deadline: the client's
//               deadline or 1.2 s, whichever comes first. Fan-out: direct calls (A), or calls run
//               in a shared pool (B), or in a fast pool for first/third and a slow pool for second (C).
//   clients     processes that call the aggregator in a loop until the phase ends and report.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include <grove/grove.hpp>
#include <grove/services.hpp>

namespace aggregator_demo {

namespace svc = grove::services;
using std::chrono::milliseconds;

enum class fan_out { unbounded, shared_pool, split_pools };
inline constexpr int backend_count = 3;
inline constexpr std::array<const char*, backend_count> backend_names{"first", "second", "third"};

struct phase_config {
  char label = 'A';
  fan_out mode = fan_out::unbounded;
  bool second_degraded = false;
  milliseconds duration{30000};  // clients start requests until then
  int clients = 10;
  double time_scale = 1.0;  // multiplies every latency and the deadline (the smoke run shrinks them)
};

// The three phases of the experiment.
inline std::array<phase_config, 3> phases(milliseconds duration, int clients, double time_scale) {
  return {phase_config{'A', fan_out::unbounded, false, duration, clients, time_scale},
          phase_config{'B', fan_out::shared_pool, true, duration, clients, time_scale},
          phase_config{'C', fan_out::split_pools, true, duration, clients, time_scale}};
}

inline milliseconds scaled(milliseconds t, double s) {
  return milliseconds(static_cast<milliseconds::rep>(std::llround(static_cast<double>(t.count()) * s)));
}

// ---- backends ----

struct backend_model {
  milliseconds latency;        // service time of one request
  std::size_t capacity;        // requests served at once; the rest wait in its queue
  std::size_t overload_limit;  // serving + queued beyond this: 503
};

inline backend_model model_for(int backend, bool second_degraded, double scale) {
  if (backend == 1) return {scaled(second_degraded ? milliseconds(1300) : milliseconds(200), scale), 2, 8};
  return {scaled(milliseconds(200), scale), 6, 8};
}

struct query {
  using reply_type = svc::outcome<std::string>;
};

class backend {
 public:
  struct done {};

  backend(std::string name, backend_model m) : name_(std::move(name)), m_(m) {}

  void handle_call(query, svc::reply_to<svc::outcome<std::string>> r) {
    if (serving_ + queue_.size() >= m_.overload_limit) {
      // Even a refusal takes a moment (a tenth of the service latency).
      grove::spawn([r = std::move(r), delay = m_.latency / 10]() mutable {
        grove::sleep_for(delay);
        r(svc::failure(std::make_error_code(std::errc::resource_unavailable_try_again), grove::exit_reason("503 overloaded")));
      });
      return;
    }
    queue_.push_back(std::move(r));
    serve();
  }
  void handle_cast(done) {
    --serving_;
    serve();
  }

 private:
  void serve() {
    while (serving_ < m_.capacity && !queue_.empty()) {
      svc::reply_to<svc::outcome<std::string>> r = std::move(queue_.front());
      queue_.pop_front();
      if (r.deadline().has_passed()) continue;  // its caller has gone: the deadline travelled here
      ++serving_;
      const grove::pid me = grove::self();
      grove::spawn([r = std::move(r), service = m_.latency, me, body = name_ + ": ok"]() mutable {
        grove::sleep_for(service);
        r(body);
        svc::cast(svc::server_ref<backend>(me), done{});
      });
    }
  }

  std::string name_;
  backend_model m_;
  std::size_t serving_ = 0;
  std::deque<svc::reply_to<svc::outcome<std::string>>> queue_;
};

// ---- the aggregator ----

enum class call_result : std::uint8_t { ok, late, rejected, failed };
inline constexpr std::array<const char*, 4> call_result_names{"ok", "late", "rejected by pool", "failed"};

inline call_result classify(const svc::outcome<std::string>& r) {
  if (r) return call_result::ok;
  if (r.error() == svc::errc::deadline_exceeded || r.error() == grove::errc::timeout) return call_result::late;
  if (r.error() == svc::errc::pool_full) return call_result::rejected;
  return call_result::failed;  // 503, or a process that died
}

struct response {
  std::array<call_result, backend_count> calls{};
  bool full() const {
    return std::all_of(calls.begin(), calls.end(), [](call_result c) { return c == call_result::ok; });
  }
};

struct aggregate {
  using reply_type = response;
};

class aggregator {
 public:
  aggregator(std::array<grove::pid, backend_count> backends, std::array<grove::pid, backend_count> pools, milliseconds budget)
      : backends_(backends), pools_(pools), budget_(budget) {}

  void handle_call(aggregate, svc::reply_to<response> r) {
    grove::spawn([r = std::move(r), backends = backends_, pools = pools_, budget = budget_]() mutable {
      const svc::deadline d = earliest(r.deadline(), svc::deadline::after(budget));
      auto fetch = [&](int i) {
        return [b = svc::server_ref<backend>(backends[static_cast<std::size_t>(i)]),
                p = pools[static_cast<std::size_t>(i)]](const svc::deadline& left) -> svc::outcome<std::string> {
          if (p.is_null()) return svc::call(b, query{}, left);  // A: straight to the backend
          return svc::pool(p).run(left, [b](const svc::deadline& in_pool) { return svc::call(b, query{}, in_pool); });
        };
      };
      auto [first, second, third] = svc::gather(d, fetch(0), fetch(1), fetch(2));
      r(response{{classify(first), classify(second), classify(third)}});
    });
  }

 private:
  std::array<grove::pid, backend_count> backends_;
  std::array<grove::pid, backend_count> pools_;  // null: no pool (direct calls)
  milliseconds budget_;
};

// ---- clients and a phase ----

struct phase_result {
  phase_config config;
  double seconds = 0;
  std::size_t requests = 0, full = 0, partial = 0, errors = 0;
  std::vector<double> latencies_ms;
  std::array<std::array<std::size_t, 4>, backend_count> calls{};  // [backend][call_result]
  std::vector<std::pair<std::string, svc::pool_stats>> pools;
  std::uint64_t retries = 0;

  double percentile(double p) const {
    if (latencies_ms.empty()) return 0;
    std::vector<double> v = latencies_ms;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
  }
  std::size_t calls_to(int b) const {
    std::size_t n = 0;
    for (std::size_t c : calls[static_cast<std::size_t>(b)]) n += c;
    return n;
  }
  std::size_t misses(int b) const { return calls_to(b) - calls[static_cast<std::size_t>(b)][0]; }
  double miss_share(int b) const {
    const std::size_t n = calls_to(b);
    return n ? static_cast<double>(misses(b)) / static_cast<double>(n) : 0.0;
  }
};

struct client_report {
  std::vector<double> latencies_ms;
  std::size_t full = 0, partial = 0, errors = 0;
  std::array<std::array<std::size_t, 4>, backend_count> calls{};
};

// Runs one phase from the calling process (a process or a scoped_process): fresh backends, pools and
// aggregator, `clients` clients until the phase ends, then everything is stopped.
inline phase_result run_phase(const phase_config& pc) {
  using clock = std::chrono::steady_clock;
  phase_result out;
  out.config = pc;
  std::array<grove::pid, backend_count> backends{};
  for (int i = 0; i < backend_count; ++i)
    backends[static_cast<std::size_t>(i)] =
        svc::start_link<backend>({}, std::string(backend_names[static_cast<std::size_t>(i)]), model_for(i, pc.second_degraded, pc.time_scale))
            .value()
            .pid();
  std::vector<std::pair<std::string, svc::pool>> pools;
  std::array<grove::pid, backend_count> pool_of{};
  if (pc.mode == fan_out::shared_pool) {
    pools.emplace_back("shared (5)", svc::pool::start_link({.size = 5, .max_waiting = 30}).value());
    pool_of = {pools[0].second.pid(), pools[0].second.pid(), pools[0].second.pid()};
  } else if (pc.mode == fan_out::split_pools) {
    pools.emplace_back("fast (6)", svc::pool::start_link({.size = 6, .max_waiting = 30}).value());
    pools.emplace_back("slow (3)", svc::pool::start_link({.size = 3, .max_waiting = 30}).value());
    pool_of = {pools[0].second.pid(), pools[1].second.pid(), pools[0].second.pid()};
  }
  auto agg = svc::start_link<aggregator>({}, backends, pool_of, scaled(milliseconds(1200), pc.time_scale)).value();

  const grove::pid me = grove::self();
  const auto start = clock::now();
  const auto end = start + pc.duration;
  for (int c = 0; c < pc.clients; ++c) {
    grove::spawn([agg, end, me] {
      client_report rep;
      while (clock::now() < end) {
        const auto t0 = clock::now();
        auto r = svc::call(agg, aggregate{}, std::chrono::seconds(5));
        rep.latencies_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
        if (!r) {
          ++rep.errors;
          continue;
        }
        (r->full() ? rep.full : rep.partial) += 1;
        for (std::size_t b = 0; b < backend_count; ++b) ++rep.calls[b][static_cast<std::size_t>(r->calls[b])];
      }
      grove::send(me, std::move(rep));
    });
  }
  for (int c = 0; c < pc.clients; ++c) {
    auto got = grove::receive([](client_report r) { return std::optional<client_report>(std::move(r)); },
                              grove::after(pc.duration + std::chrono::seconds(60), [] { return std::optional<client_report>(); }));
    if (!got) break;  // a client died (not expected): report what came
    client_report& rep = *got;
    out.latencies_ms.insert(out.latencies_ms.end(), rep.latencies_ms.begin(), rep.latencies_ms.end());
    out.full += rep.full;
    out.partial += rep.partial;
    out.errors += rep.errors;
    for (std::size_t b = 0; b < backend_count; ++b)
      for (std::size_t k = 0; k < 4; ++k) out.calls[b][k] += rep.calls[b][k];
  }
  out.seconds = std::chrono::duration<double>(clock::now() - start).count();
  out.requests = out.latencies_ms.size();
  for (auto& [name, p] : pools) {
    if (auto s = p.stats()) out.pools.emplace_back(name, *s);
    (void)p.stop();
  }
  (void)svc::stop(agg);
  for (grove::pid b : backends) (void)svc::stop(svc::server_ref<backend>(b));
  return out;
}

inline std::string describe(const phase_config& pc) {
  switch (pc.mode) {
    case fan_out::unbounded: return "unbounded fan-out, every backend healthy";
    case fan_out::shared_pool: return "one shared pool of 5, second degraded";
    case fan_out::split_pools: return "fast pool of 6 (first, third) + slow pool of 3 (second), second degraded";
  }
  return "";
}

inline std::string format(const phase_result& r) {
  std::string s = fmt::format("phase {}: {}\n", r.config.label, describe(r.config));
  s += fmt::format("  {} clients for {:.1f} s\n", r.config.clients, r.seconds);
  s += fmt::format("  requests   {:>6}   {:.1f}/s\n", r.requests, r.seconds > 0 ? static_cast<double>(r.requests) / r.seconds : 0.0);
  s += fmt::format("  latency    p50 {:.0f} ms   p90 {:.0f} ms   p99 {:.0f} ms\n", r.percentile(50), r.percentile(90),
                   r.percentile(99));
  const double n = r.requests ? static_cast<double>(r.requests) : 1.0;
  s += fmt::format("  responses  full {} ({:.0f}%)   partial {} ({:.0f}%)", r.full, 100.0 * static_cast<double>(r.full) / n,
                   r.partial, 100.0 * static_cast<double>(r.partial) / n);
  s += r.errors ? fmt::format("   errors {}\n", r.errors) : "\n";
  s += "  misses     (late = past the deadline, rejected = pool full, failed = 503 or a dead process)\n";
  for (int b = 0; b < backend_count; ++b) {
    const auto& c = r.calls[static_cast<std::size_t>(b)];
    s += fmt::format("    {:<7} {:>6} of {:>6} ({:>3.0f}%)   late {:>5}   rejected {:>5}   failed {:>5}\n",
                     backend_names[static_cast<std::size_t>(b)], r.misses(b), r.calls_to(b), 100.0 * r.miss_share(b), c[1],
                     c[2], c[3]);
  }
  for (auto& [name, p] : r.pools)
    s += fmt::format("  pool {:<10} served {}   peak queued {}   rejected {}   timed out in queue {}\n", name, p.served,
                     p.peak_queued, p.rejected, p.timed_out);
  s += fmt::format("  retries    {} (nothing retries unless asked)\n", r.retries);
  return s;
}

}  // namespace aggregator_demo
