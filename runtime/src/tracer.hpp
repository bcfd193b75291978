// tracer.hpp: the recording half of grove/trace.hpp: the switch every recording site tests, the
// per-worker rings, and record(). The design is in tracer.cpp; the Perfetto export in trace_export.cpp.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <grove/exit_reason.hpp>
#include <grove/logger.hpp>
#include <grove/trace.hpp>

namespace grove::internal {

using trace::event_kind;

struct process;

// Which event kinds may be recorded (trace::bit): those recorded for every process, and those any
// process's flags select (trace_process); 0 when tracing is off. relaxed at every site: a switch
// only; the ring it leads to is published with release by tracer::start (record() loads it acquire).
inline std::atomic<std::uint32_t> trace_mask{0};
// The kinds recorded for every process (options::kinds); relaxed: a switch, as trace_mask.
inline std::atomic<std::uint32_t> trace_all_kinds{0};

// Past the mask, whether this process's event of kind k is recorded: for every process, or by its
// own flags (process::trace_flags). Out of line: only events that may be recorded get here.
bool traced_process_event(event_kind k, const process* p) noexcept;

// The test at every recording site, for an event of process p (null: a thread that is not one).
// Off: one relaxed load and a branch.
[[gnu::always_inline]] inline bool tracing(event_kind k, const process* p) noexcept {
  if ((trace_mask.load(std::memory_order_relaxed) & trace::bit(k)) == 0) [[likely]]
    return false;
  return traced_process_event(k, p);
}

// One event: six words, each a relaxed atomic so that a reader may copy a slot the owner is
// rewriting (tracer.cpp, "Reading while recording"); on x86 they are plain moves.
struct trace_slot {
  std::atomic<std::uint64_t> w[6];
};

// A worker's ring (or the shared one of other threads, written under tracer::foreign_lock).
struct trace_ring {
  explicit trace_ring(std::size_t capacity);
  const std::uint64_t mask;                  // capacity - 1 (a power of two)
  std::unique_ptr<trace_slot[]> slots;
  std::atomic<std::uint64_t> head{0};        // events ever written; owner stores (release), readers load
  std::atomic<int> tid{0};                   // the writing thread's id, set at its first event (relaxed)
  std::uint64_t start_from = 0;              // guarded by tracer::lock: events before the latest start
};

// Records one event (a, b, c, d: per kind, as tracer.cpp's table says). Called only when tracing(k).
void record(event_kind k, std::uint8_t arg, std::uint32_t x, std::uint64_t a, std::uint64_t b = 0, std::uint64_t c = 0,
            std::uint64_t d = 0) noexcept;
// A text for an event: an id into the tracer's table (0: the table is full, or out of memory). The
// same text gets the same id.
std::uint64_t intern_trace_text(std::string_view text) noexcept;
// An exit reason's text for an exit, down or exit-signal event: 0 for the kinds whose name says it
// all (normal, shutdown, kill, killed, noproc); the interned to_string() for the others.
std::uint64_t intern_reason_text(const exit_reason& reason) noexcept;

// The runtime's tracer (runtime_state::tracer).
struct tracer {
  std::mutex lock;                                   // start and readers
  std::vector<std::unique_ptr<trace_ring>> rings;    // guarded by lock (and foreign_lock to change): one
                                                     // per worker, then the foreign one
  std::vector<std::unique_ptr<trace_ring>> retired;  // guarded by lock: rings of earlier starts, which a
                                                     // worker may still be writing (freed with the runtime)
  std::mutex foreign_lock;                           // writers of the foreign ring
  trace_ring* foreign_out = nullptr;                 // guarded by foreign_lock: the foreign ring
  std::mutex text_lock;
  std::vector<std::string> texts;                    // guarded by text_lock: interned texts (id - 1): exit
                                                     // reasons and annotations, kept for the runtime's
                                                     // life (at most 65,536)
  std::unordered_map<std::string, std::uint64_t> text_ids;  // guarded by text_lock: text → id
  std::string env_path;                              // GROVE_TRACE: written at stop (owner: the runtime's thread)
  std::string dump_file;                             // guarded by lock: options::dump_file
  std::atomic<std::uint64_t> last_dump_ns{0};        // shared: trace::dump's rate limit (relaxed: a hint)
  std::atomic<bool> started{false};                  // shared: a start is in effect (relaxed: a state flag)
  std::uint32_t flag_kinds = 0;                      // guarded by lock: kinds trace_process ever selected
  // options::dump_signal (tracer.cpp, "Dump on a signal"), all guarded by signal_lock.
  std::mutex signal_lock;
  int dump_signal = 0;                               // installed now; 0: none
  struct sigaction previous {};                      // the disposition it replaced
  int wake_read = -1, wake_write = -1;               // the pipe the handler writes to
  std::thread dumper;                                // reads it and dumps
};

// Reads every ring (tracer.cpp), oldest first, message ids paired.
std::vector<trace::event> trace_snapshot(tracer& t);
// The last n messages process p took, oldest first, from the newest 4,096 events of each ring
// (crash reports: log_event::last_messages). Throws only std::bad_alloc.
std::vector<received_message> last_received(tracer& t, pid p, std::size_t n);
// GROVE_TRACE / GROVE_TRACE_BUFFER at runtime start, and the file at stop (runtime.cpp).
void start_tracing_from_environment(tracer& t) noexcept;
void finish_tracing(tracer& t) noexcept;

}  // namespace grove::internal
