// grove/metrics.hpp: the runtime's counters and gauges in Prometheus's text format (0.0.4), and a
// place for libraries and applications to add theirs.
//
//   std::string page = grove::metrics::prometheus_text();    // what /metrics answers
//   // over HTTP: grove::http::metrics_handler() (grove/http/metrics.hpp)
//
// The runtime's own, read without stopping anything (system_info, resources_in_use):
//   grove_processes, grove_process_limit, grove_processes_spawned_total, grove_dead_letters_total,
//   grove_global_queue_length, grove_stack_image_copies_total,
//   grove_stack_image_differences_total, grove_resources_in_use{kind},
//   per worker (label worker="N"): grove_worker_run_queue_length, grove_worker_context_switches_total,
//   grove_worker_steals_total, grove_worker_parks_total, grove_worker_timers_fired_total;
//   grove_trace_recording (1 while grove/trace.hpp records).
// A collector adds families of its own (grove::http's servers with server_options::metrics_name do:
// grove_http_server_*{server="name"}; named supervisors: grove_supervisor_restarts_total{supervisor="name"}). Without a running runtime the runtime's families are left
// out and the collectors still run.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::metrics {

enum class kind { counter, gauge };

// One sample of a family: its labels, already in text form (`worker="0"`, or empty), and its value.
struct sample {
  std::string labels;
  double value = 0;
};

// Appends one metric family to `out`: "# HELP name help", "# TYPE name counter|gauge", then one
// line per sample. `name` must match [a-zA-Z_:][a-zA-Z0-9_:]* (a counter's ends in _total);
// label values are escaped by label().
void write_family(std::string& out, std::string_view name, kind k, std::string_view help,
                  std::initializer_list<sample> samples);
void write_family(std::string& out, std::string_view name, kind k, std::string_view help, const sample* samples,
                  std::size_t count);
// `key="value"`, the value escaped as the format wants (\\, \", \n).
std::string label(std::string_view key, std::string_view value);

// Appends a collector's families to the page. Must be quick and thread-safe (it runs on the
// thread that asks for the page), must not block, and must not call add/remove_collector.
using collector = std::function<void(std::string& out)>;
// Registers a collector; the id unregisters it. Thread-safe.
std::uint64_t add_collector(collector c);
// Unregisters it; when this returns, the collector is not running and will not run again.
void remove_collector(std::uint64_t id) noexcept;

// The whole page: the runtime's families, then every collector's, in registration order.
std::string prometheus_text();

}  // namespace grove::metrics

GROVE_PUBLIC_END
