// metrics.cpp: grove/metrics.hpp, the Prometheus text page.
//
// The runtime's families come from system_info and resources_in_use (relaxed counters: a page may
// mix moments by a few events, as any scrape of a live process does). Collectors sit in a list
// under a mutex that is held while the page runs them: remove_collector takes it too, so when it
// returns its collector is not running, and the owner may free what the collector reads. Rejected:
// a lock-free list (the page is asked for once every few seconds; the lock is never contended).
#include <grove/metrics.hpp>

#include <cmath>
#include <iterator>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include <grove/introspection.hpp>
#include <grove/trace.hpp>

#include "scheduler.hpp"

namespace grove::metrics {

namespace {

struct registry {
  std::mutex lock;
  std::vector<std::pair<std::uint64_t, collector>> collectors;  // guarded by lock
  std::uint64_t next_id = 1;                                    // guarded by lock
};

registry& collectors() {
  static registry r;
  return r;
}

void write_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else if (v == std::floor(v) && std::fabs(v) < 1e15) {
    fmt::format_to(std::back_inserter(out), "{}", static_cast<long long>(v));
  } else {
    fmt::format_to(std::back_inserter(out), "{}", v);
  }
}

}  // namespace

std::string label(std::string_view key, std::string_view value) {
  std::string out(key);
  out += "=\"";
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

void write_family(std::string& out, std::string_view name, kind k, std::string_view help, const sample* samples,
                  std::size_t count) {
  fmt::format_to(std::back_inserter(out), "# HELP {} ", name);
  for (char c : help) out += c == '\n' ? ' ' : c;
  fmt::format_to(std::back_inserter(out), "\n# TYPE {} {}\n", name, k == kind::counter ? "counter" : "gauge");
  for (std::size_t i = 0; i < count; ++i) {
    out += name;
    if (!samples[i].labels.empty()) out.append("{").append(samples[i].labels).append("}");
    out += ' ';
    write_value(out, samples[i].value);
    out += '\n';
  }
}

void write_family(std::string& out, std::string_view name, kind k, std::string_view help,
                  std::initializer_list<sample> samples) {
  write_family(out, name, k, help, samples.begin(), samples.size());
}

std::uint64_t add_collector(collector c) {
  registry& r = collectors();
  std::lock_guard<std::mutex> g(r.lock);
  const std::uint64_t id = r.next_id++;
  r.collectors.emplace_back(id, std::move(c));
  return id;
}

void remove_collector(std::uint64_t id) noexcept {
  registry& r = collectors();
  std::lock_guard<std::mutex> g(r.lock);
  for (auto it = r.collectors.begin(); it != r.collectors.end(); ++it)
    if (it->first == id) {
      r.collectors.erase(it);
      return;
    }
}

std::string prometheus_text() {
  std::string out;
  if (internal::current_runtime()) {
    const system_details s = system_info();
    const resource_usage u = resources_in_use();
    const auto d = [](auto v) { return static_cast<double>(v); };
    write_family(out, "grove_processes", kind::gauge, "Live processes, scoped_processes included.", {{"", d(s.process_count)}});
    write_family(out, "grove_process_limit", kind::gauge, "The most live processes (runtime_config::process_limit).",
                 {{"", d(s.process_limit)}});
    write_family(out, "grove_processes_spawned_total", kind::counter, "Processes spawned since the runtime started.",
                 {{"", d(s.spawned)}});
    write_family(out, "grove_reductions_total", kind::counter, "Reductions of the processes workers ran.",
                 {{"", d(s.reductions)}});
    write_family(out, "grove_messages_sent_total", kind::counter,
                 "Messages sent by processes workers ran (to pids, names and aliases).", {{"", d(s.messages_sent)}});
    write_family(out, "grove_messages_received_total", kind::counter,
                 "Messages taken into the mailboxes of processes workers ran.", {{"", d(s.messages_received)}});
    write_family(out, "grove_dead_letters_total", kind::counter, "Messages sent to processes that were not alive.",
                 {{"", d(s.dead_letters)}});
    write_family(out, "grove_global_queue_length", kind::gauge, "Runnable processes in the shared inject queue.",
                 {{"", d(s.global_queue_length)}});
    write_family(out, "grove_stack_image_copies_total", kind::counter,
                 "Parked stacks copied out of an execution stack to make room for another process.",
                 {{"", d(s.stack_image_copies)}});
    write_family(out, "grove_stack_image_differences_total", kind::counter,
                 "Of the stacks copied out, those kept as their difference from another stack's image.",
                 {{"", d(s.stack_image_differences)}});
    write_family(out, "grove_resources_in_use", kind::gauge, "What live and exiting processes hold (resources_in_use).",
                 {{label("kind", "processes"), d(u.processes)},
                  {label("kind", "stack_images"), d(u.stack_images)},
                  {label("kind", "arenas"), d(u.arenas)},
                  {label("kind", "messages"), d(u.messages)},
                  {label("kind", "timers"), d(u.timers)},
                  {label("kind", "fds"), d(u.fds)}});
    struct per_worker {
      const char* name;
      kind k;
      const char* help;
      std::uint64_t (*get)(const worker_details&);
    };
    const per_worker families[] = {
        {"grove_worker_run_queue_length", kind::gauge, "Processes waiting in the worker's local queue.",
         [](const worker_details& w) -> std::uint64_t { return w.run_queue_length; }},
        {"grove_worker_context_switches_total", kind::counter, "Processes the worker resumed.",
         [](const worker_details& w) { return w.context_switches; }},
        {"grove_worker_steals_total", kind::counter, "Processes the worker took from other workers.",
         [](const worker_details& w) { return w.steals; }},
        {"grove_worker_parks_total", kind::counter, "Times the worker went idle and slept.",
         [](const worker_details& w) { return w.parks; }},
        {"grove_worker_timers_fired_total", kind::counter, "Timers the worker fired.",
         [](const worker_details& w) { return w.timers_fired; }},
        {"grove_worker_reductions_total", kind::counter, "Reductions of the processes the worker ran.",
         [](const worker_details& w) { return w.reductions; }},
        {"grove_worker_messages_sent_total", kind::counter, "Messages sent by the processes the worker ran.",
         [](const worker_details& w) { return w.messages_sent; }},
        {"grove_worker_messages_received_total", kind::counter,
         "Messages taken into the mailboxes of the processes the worker ran.",
         [](const worker_details& w) { return w.messages_received; }},

    };
    std::vector<sample> samples(s.workers.size());
    for (const per_worker& f : families) {
      for (std::size_t i = 0; i < s.workers.size(); ++i)
        samples[i] = {label("worker", std::to_string(i)), d(f.get(s.workers[i]))};
      write_family(out, f.name, f.k, f.help, samples.data(), samples.size());
    }
    write_family(out, "grove_trace_recording", kind::gauge, "1 while grove::trace records.",
                 {{"", trace::is_recording() ? 1.0 : 0.0}});
  }
  registry& r = collectors();
  std::lock_guard<std::mutex> g(r.lock);
  std::string part;
  for (auto& [id, c] : r.collectors) {
    part.clear();
    try {
      c(part);
      out += part;
    } catch (...) {
      // A collector that throws adds nothing (no half-written family); the page goes on.
    }
  }
  return out;
}

}  // namespace grove::metrics
