// perfetto_encoder.hpp: writes Perfetto's protobuf trace format (a `Trace` message) into a string,
// for the tracer's export of the per-worker event rings. No dependency: the wire format is written
// by hand, and only the few fields below.
//
// WHAT IT WRITES
//   A Perfetto trace file is a `Trace` message: nothing but `repeated TracePacket packet = 1`. Each
//   call below appends one whole packet, tagged as field 1 of Trace, so the buffer is a valid trace
//   after every call and chunks handed out by take() concatenate into one (protobuf concatenation
//   appends to a repeated field). The subset of the schema used (field numbers are in the .cpp,
//   each next to its proto field name, read from google/perfetto's protos/perfetto/):
//     TracePacket      timestamp, trusted_packet_sequence_id, clock_snapshot, track_descriptor,
//                      track_event
//     ClockSnapshot    primary_trace_clock (= BUILTIN_CLOCK_MONOTONIC)
//     TrackDescriptor  uuid, parent_uuid, name, process {pid, process_name},
//                      thread {pid, tid, thread_name}, counter {} (empty: marks a counter track)
//     TrackEvent       type (SLICE_BEGIN, SLICE_END, INSTANT, COUNTER), track_uuid, name, categories,
//                      flow_ids, terminating_flow_ids, counter_value, double_counter_value,
//                      debug_annotations {name, bool/uint/int/double/string value}
//   No interning (names are written in full each time), so no sequence_flags and no incremental
//   state: every packet reads on its own.
//
// INVARIANTS
//   1. Between calls, bytes() is a sequence of whole `packet` fields: never a partial packet, even
//      when a call throws (the call truncates what it wrote).
//   2. The first packet an encoder writes, and the first after clear(), is the clock header: a
//      ClockSnapshot whose primary_trace_clock is BUILTIN_CLOCK_MONOTONIC. Timestamps are
//      CLOCK_MONOTONIC nanoseconds (clock.hpp's now_ns(): libstdc++'s steady_clock), and a packet
//      with no timestamp_clock_id is in the trace's clock, which this header makes MONOTONIC. Written
//      lazily, so an encoder that records nothing yields an empty trace (also valid: zero packets).
//   3. Every packet carries the encoder's trusted_packet_sequence_id (non-zero: zero is the schema's
//      "invalid"). Without interning the value only groups packets; one per encoder is enough.
//   4. Lengths are minimal varints (the canonical encoding); see "nested lengths" below.
//
// CLOCK: WHY A ONE-PACKET HEADER (the alternatives)
//   - Nothing: Perfetto then takes timestamps as BOOTTIME (its default trace clock). The UI shows
//     the same picture, but the trace names the wrong clock, which matters once it is merged with a
//     system trace.
//   - timestamp_clock_id = 3 (BUILTIN_CLOCK_MONOTONIC) on every packet: 3 more bytes per event, and
//     it converts to the trace clock (BOOTTIME) only through a ClockSnapshot that holds both clocks:
//     without one, trace processors up to at least v50 (2025) drop every such packet (stat
//     clock_sync_failure). The exporter would have to read both clocks and write that snapshot.
//   - ClockSnapshot.primary_trace_clock = MONOTONIC, once: the trace clock is then MONOTONIC and our
//     timestamps need no conversion, in every trace processor since the field came (2020). Chosen.
//
// NESTED LENGTHS
//   A submessage's length comes before it and is known only after it. Each one gets a one-byte
//   length slot; when it closes at 128 bytes or more, its body moves up to make room for the longer
//   varint. Events and descriptors are tens of bytes, so that move almost never happens. Rejected: a
//   scratch buffer per nesting level (a copy of every body, and state to reuse); a padded 4- or
//   5-byte redundant varint (legal, and Perfetto's own writer does it, but 3-4 wasted bytes per
//   level, two or three levels per event: 20-30% of the probe's ~35-byte events).
//
// REJECTED: THE PERFETTO SDK, LIBPROTOBUF, THE JSON FORMAT
//   - Perfetto SDK: not packaged by Debian, and it is a tracing system (service, shared-memory
//     buffers, its own threads) where Grove needs a file writer for rings it already recorded.
//   - libprotobuf: needs Perfetto's .proto files vendored and compiled into the build, and goes
//     through message objects to serialise; we write a dozen fields by hand.
//   - JSON trace event format: text, ~3.6x the bytes for the events of the probe below (125 bytes
//     an event against 35, its flow as an "s" event), timestamps as decimal microseconds, and tracks
//     implied by pid/tid (plus async ids and per-process counters) instead of declared with a uuid
//     and a parent.
//
// COST
//   ~45 ns and ~35 bytes per event, no allocation once the buffer has grown: 10^6 pairs of
//   slice_begin (a category, one int annotation, one flow id) and slice_end, best of 5 rounds into a
//   cleared buffer; g++ 12 -O2 on the 2-core dev machine. Re-measured by
//   `build/release/bench/grove/perfetto_encoder_probe`.
//
// Not thread-safe: one encoder per thread (each worker's export owns its own).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

namespace grove::internal {

// One debug annotation (an event argument): shown under "Arguments" in the Perfetto UI. A string
// literal becomes a string_view (C++20 variant does not convert a pointer to bool); an `int` picks
// int64_t (the only alternative it converts to without narrowing).
struct annotation {
  std::string_view name;
  std::variant<bool, std::int64_t, std::uint64_t, double, std::string_view> value;
};

// The optional parts of a slice_begin or an instant, meant for designated initialisers:
// enc.slice_begin(track, ts, "run", {.category = "sched", .flow_ids = ids}).
struct event_details {
  std::string_view category = {};                            // empty: no category
  std::span<const annotation> annotations = {};
  std::span<const std::uint64_t> flow_ids = {};              // flows that start at or pass through this event
  std::span<const std::uint64_t> terminating_flow_ids = {};  // flows that end at this event
};

class perfetto_encoder {
 public:
  // sequence_id: the packets' trusted_packet_sequence_id. Throws std::invalid_argument if 0.
  explicit perfetto_encoder(std::uint32_t sequence_id);

  // Track descriptors. A uuid is global to the trace and must not be 0 (0 is the trace-global
  // track); tracks are described before the events that name them. parent_uuid 0: a root track.
  // A process track, named `name` (also its process_name): the UI's group for everything with this pid.
  void process_track(std::uint64_t uuid, std::int32_t pid, std::string_view name);
  // A thread track, named `name` (written as its thread_name too). Perfetto places it under its
  // process by pid (it ignores parent_uuid when a track has a thread), so it takes no parent.
  void thread_track(std::uint64_t uuid, std::int32_t pid, std::int64_t tid, std::string_view name);
  // A slice track that belongs to no thread, nested under parent_uuid. Under a process or thread
  // track, Perfetto shows it beside that track, in the same process group.
  void named_track(std::uint64_t uuid, std::uint64_t parent_uuid, std::string_view name);
  // A counter track: takes only counter() events.
  void counter_track(std::uint64_t uuid, std::uint64_t parent_uuid, std::string_view name);

  // Events, at ts_ns (CLOCK_MONOTONIC ns). Slices on one track must nest: a slice_end closes the
  // latest open slice_begin of its track. An instant nests under the open slice, if any.
  void slice_begin(std::uint64_t track_uuid, std::uint64_t ts_ns, std::string_view name,
                   const event_details& details = {});
  void slice_end(std::uint64_t track_uuid, std::uint64_t ts_ns);
  void instant(std::uint64_t track_uuid, std::uint64_t ts_ns, std::string_view name,
               const event_details& details = {});
  // A counter track's new value. Pass an int64_t or a double (an `int` literal is ambiguous).
  void counter(std::uint64_t track_uuid, std::uint64_t ts_ns, std::int64_t value);
  void counter(std::uint64_t track_uuid, std::uint64_t ts_ns, double value);

  // The trace so far. Write it to a file as is.
  const std::string& bytes() const noexcept { return buf_; }
  // Hands over the bytes and empties the encoder, which keeps writing the same trace (no new clock
  // header): chunks taken one after another concatenate into one file. The next packet allocates
  // anew; to reuse the storage, write bytes() out and call clear_bytes().
  std::string take() noexcept;
  // Drops the bytes, keeping the storage, to go on with the same trace (no new clock header).
  void clear_bytes() noexcept { buf_.clear(); }
  // Drops the bytes and starts a new trace: the next packet writes the clock header again.
  void clear() noexcept;

 private:
  template <class Body>
  void append_packet(std::uint64_t ts_ns, bool has_ts, Body&& body);
  void write_event(std::uint64_t track_uuid, std::uint64_t ts_ns, std::uint64_t type, std::string_view name,
                   const event_details& details);

  std::string buf_;            // whole packets (invariant 1)
  std::uint32_t sequence_id_;  // trusted_packet_sequence_id of every packet
  bool wrote_header_ = false;  // the clock header is in this trace (invariant 2)
};

}  // namespace grove::internal
