// trace_export.cpp: grove::trace::write_perfetto, the rings (tracer.cpp) as a Perfetto trace
// (perfetto_encoder.hpp).
//
// Tracks: the program (a process track, pid getpid()); one thread track per worker (its OS thread
// id) holding a slice per process run, named "<0.42.1> name", with a counter track of its run-queue
// length sampled at each run; one thread track for the other threads' events; and one track per
// process that appears in the rings, named by pid and registered name (looked up now: a process
// already gone shows its pid only), holding its runs ("running on worker N"), its waits ("wait:
// receive", ..., from the end of a run to the next begin) and instants for send, receive, receive
// timeout, spawn, exit, link, unlink, monitor, demonitor, down, exit signal (what the receiver
// did), annotation, wake ("woken by <0.3.0> (message)"), send_after's timer fire and IO wait (the
// fd), with a counter track "mailbox <pid>" of the messages it still holds after each receive; a
// steal is an instant on the thief's worker track. A send (or a timer fire) starts a flow (its
// message id) that the receive of that message terminates: the UI draws the arrow.
//
// Slices are balanced on every track: the rings begin mid-stream (flight recorder), so an end
// whose begin was overwritten is dropped, and slices still open at the end are closed at the
// last event's time.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include <grove/registry.hpp>
#include <grove/trace.hpp>

#include "perfetto_encoder.hpp"
#include "scheduler.hpp"
#include "tracer.hpp"
#include "type_name.hpp"

namespace grove::internal {

namespace {

constexpr std::uint64_t program_track = 1;
constexpr std::uint64_t foreign_track = 2;
std::uint64_t worker_track(int w) { return 16 + static_cast<std::uint64_t>(w); }
std::uint64_t queue_track(int w) { return 0x10000 + static_cast<std::uint64_t>(w); }
std::uint64_t process_track_of(pid p) { return p.bits() | (std::uint64_t{1} << 63); }
std::uint64_t mailbox_track_of(pid p) { return p.bits() | (std::uint64_t{3} << 62); }

class exporter {
 public:
  exporter(runtime_state& rt, std::vector<int> tids) : rt_(rt), enc_(1), tids_(std::move(tids)) {}

  void write(const std::vector<trace::event>& events) {
    const int self = static_cast<int>(::getpid());
    enc_.process_track(program_track, self, "grove");
    enc_.thread_track(foreign_track, self, self, "other threads");
    for (std::size_t w = 0; w < tids_.size(); ++w) {
      enc_.thread_track(worker_track(static_cast<int>(w)), self, tids_[w] ? tids_[w] : self + 1 + static_cast<int>(w),
                        fmt::format("grove worker {}", w));
      enc_.counter_track(queue_track(static_cast<int>(w)), program_track, fmt::format("run queue, worker {}", w));
    }
    for (const trace::event& e : events) {
      last_ns_ = e.time_ns;
      const std::uint64_t thread = e.worker >= 0 ? worker_track(e.worker) : foreign_track;
      switch (e.kind) {
        case trace::event_kind::run_begin: {
          const std::uint64_t own = track_of(e.process);
          close_wait(e.process, e.time_ns);
          begin(thread, e.time_ns, label(e.process));
          begin(own, e.time_ns, fmt::format("running on worker {}", e.worker));
          enc_.counter(queue_track(e.worker), e.time_ns, static_cast<std::int64_t>(e.count));
          break;
        }
        case trace::event_kind::run_end: {
          const std::uint64_t own = track_of(e.process);
          end(thread, e.time_ns);
          end(own, e.time_ns);
          if (e.detail.rfind("wait", 0) == 0 || e.detail == "blocking call") {
            begin(own, e.time_ns, e.detail);
            waiting_[e.process.bits()] = true;
          }
          break;
        }
        case trace::event_kind::send: {
          const std::uint64_t from = e.process.is_null() ? thread : track_of(e.process);
          const std::uint64_t flow[] = {e.message_id};
          const annotation args[] = {{"to", std::string_view(scratch_ = fmt::format("{}", e.other))}};
          enc_.instant(from, e.time_ns, fmt::format("send {} to {}", demangled(e.message_type), label(e.other)),
                       {.category = "message", .annotations = args, .flow_ids = flow});
          break;
        }
        case trace::event_kind::receive: {
          const std::uint64_t flow[] = {e.message_id};
          const annotation args[] = {{"passed over", static_cast<std::int64_t>(e.count)}};
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("receive {}", demangled(e.message_type)),
                       {.category = "message",
                        .annotations = args,
                        .terminating_flow_ids = e.message_id ? std::span<const std::uint64_t>(flow) : std::span<const std::uint64_t>()});
          enc_.counter(mailbox_track(e.process), e.time_ns, static_cast<std::int64_t>(e.queued));
          break;
        }
        case trace::event_kind::timer_fire: {
          const std::uint64_t flow[] = {e.message_id};
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("timer fired: {}", demangled(e.message_type)),
                       {.category = "timer", .flow_ids = flow});
          break;
        }
        case trace::event_kind::wake: {
          const char* why = trace::to_string(e.cause);
          enc_.instant(track_of(e.process), e.time_ns,
                       e.other.is_null() ? fmt::format("woken ({})", why) : fmt::format("woken by {} ({})", label(e.other), why),
                       {.category = "scheduler"});
          break;
        }
        case trace::event_kind::io_wait:
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("io wait: fd {} {}", e.count, e.detail), {.category = "io"});
          break;
        case trace::event_kind::receive_timeout:
          enc_.instant(track_of(e.process), e.time_ns, "receive timed out", {.category = "timer"});
          break;
        case trace::event_kind::spawn:
          enc_.instant(e.process.is_null() ? thread : track_of(e.process), e.time_ns, fmt::format("spawn {}", e.other),
                       {.category = "process"});
          break;
        case trace::event_kind::exit:
          close_wait(e.process, e.time_ns);
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("exit: {}", e.detail), {.category = "process"});
          break;
        case trace::event_kind::link:
        case trace::event_kind::monitor: {
          const char* what = trace::to_string(e.kind);
          const std::string target = e.other.is_null() ? std::string("(a name nobody holds)") : label(e.other);
          enc_.instant(track_of(e.process), e.time_ns,
                       e.outcome == trace::signal_outcome::noproc ? fmt::format("{} {}: noproc", what, target)
                                                                  : fmt::format("{} {}", what, target),
                       {.category = "link"});
          break;
        }
        case trace::event_kind::unlink:
        case trace::event_kind::demonitor:
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("{} {}", trace::to_string(e.kind), label(e.other)),
                       {.category = "link"});
          break;
        case trace::event_kind::down:
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("DOWN {}: {}", label(e.other), e.detail),
                       {.category = "link"});
          break;
        case trace::event_kind::exit_signal: {
          const char* what = trace::to_string(e.outcome);
          const std::string from = e.other.is_null() ? std::string("a thread") : label(e.other);
          const annotation args[] = {{"through a link", e.count != 0}};
          enc_.instant(track_of(e.process), e.time_ns, fmt::format("exit signal from {}: {} ({})", from, e.detail, what),
                       {.category = "link", .annotations = args});
          break;
        }
        case trace::event_kind::steal: {
          const annotation args[] = {{"processes", static_cast<std::int64_t>(e.count)},
                                     {"first", std::string_view(scratch_ = fmt::format("{}", e.process))}};
          enc_.instant(thread, e.time_ns, fmt::format("steal {} from worker {}", e.count, e.from_worker),
                       {.category = "scheduler", .annotations = args});
          break;
        }
        case trace::event_kind::annotation:
          enc_.instant(e.process.is_null() ? thread : track_of(e.process), e.time_ns,
                       e.detail.empty() ? std::string_view("(annotation)") : std::string_view(e.detail), {.category = "user"});
          break;
      }
    }
    // Close what is still open at the last event (a process still waiting, a run in progress).
    for (auto& [track, depth] : open_)
      for (; depth > 0; --depth) enc_.slice_end(track, last_ns_);
  }

  const std::string& bytes() const { return enc_.bytes(); }

 private:
  std::string label(pid p) {
    auto it = labels_.find(p.bits());
    if (it != labels_.end()) return it->second;
    std::string name;
    try {
      name = rt_.names.name_of(p);
    } catch (...) {
    }
    std::string l = name.empty() ? fmt::format("{}", p) : fmt::format("{} {}", p, name);
    labels_.emplace(p.bits(), l);
    return l;
  }
  std::uint64_t track_of(pid p) {
    const std::uint64_t uuid = process_track_of(p);
    if (described_.emplace(uuid, true).second) enc_.named_track(uuid, program_track, label(p));
    return uuid;
  }
  std::uint64_t mailbox_track(pid p) {
    const std::uint64_t uuid = mailbox_track_of(p);
    if (described_.emplace(uuid, true).second) enc_.counter_track(uuid, program_track, fmt::format("mailbox {}", label(p)));
    return uuid;
  }
  void begin(std::uint64_t track, std::uint64_t ts, std::string_view name) {
    enc_.slice_begin(track, ts, name);
    ++open_[track];
  }
  void end(std::uint64_t track, std::uint64_t ts) {
    auto it = open_.find(track);
    if (it == open_.end() || it->second == 0) return;  // its begin is older than the rings
    enc_.slice_end(track, ts);
    --it->second;
  }
  void close_wait(pid p, std::uint64_t ts) {
    auto it = waiting_.find(p.bits());
    if (it == waiting_.end() || !it->second) return;
    it->second = false;
    end(track_of(p), ts);
  }

  runtime_state& rt_;
  perfetto_encoder enc_;
  std::vector<int> tids_;
  std::unordered_map<std::uint64_t, std::string> labels_;
  std::unordered_map<std::uint64_t, bool> described_;
  std::unordered_map<std::uint64_t, int> open_;      // slices open per track
  std::unordered_map<std::uint64_t, bool> waiting_;  // per process: a wait slice is open
  std::uint64_t last_ns_ = 0;
  std::string scratch_;
};

}  // namespace

}  // namespace grove::internal

namespace grove::trace {

using namespace grove::internal;

result<std::size_t> write_perfetto(const std::string& path) {
  runtime_state* rt = current_runtime();
  if (!rt) return make_error_code(errc::not_running);
  const std::vector<event> events = trace_snapshot(rt->tracer);
  std::vector<int> tids;
  {
    std::lock_guard<std::mutex> g(rt->tracer.lock);
    for (std::size_t i = 0; i + 1 < rt->tracer.rings.size(); ++i)
      tids.push_back(rt->tracer.rings[i]->tid.load(std::memory_order_relaxed));
  }
  if (tids.empty()) tids.resize(rt->workers.size(), 0);
  exporter x(*rt, std::move(tids));
  x.write(events);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return make_error_code(errc::bad_argument);
  const std::string& bytes = x.bytes();
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !ok) return make_error_code(errc::bad_argument);
  return events.size();
}

}  // namespace grove::trace
