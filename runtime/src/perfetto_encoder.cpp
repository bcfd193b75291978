// perfetto_encoder.cpp: see perfetto_encoder.hpp for the design.
//
// The wire format, all of it that is used here: a field is a key varint (field_number << 3 | wire
// type) then its value. Wire types: 0 varint, 1 fixed64 (8 bytes, little-endian), 2 length-delimited
// (a varint byte count, then the bytes: strings and submessages). int32/int64/uint32/uint64 are plain
// varints, a negative int32 or int64 sign-extended to 10 bytes; no field here is sint (zigzag).
// Repeated fields are written one key per value: the schema is proto2 and none of ours is
// [packed = true], which is what Perfetto's decoders expect for them.
//
// Field numbers: google/perfetto, protos/perfetto/, read at commit ec5d16b14b74 (2026-08-22); each
// constant names its proto file and field.
#include "perfetto_encoder.hpp"

#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace grove::internal {
namespace {

// trace/trace.proto, message Trace.
constexpr std::uint32_t trace_packet = 1;  // repeated TracePacket packet = 1

// trace/trace_packet.proto, message TracePacket.
constexpr std::uint32_t packet_timestamp = 8;                    // optional uint64 timestamp = 8
constexpr std::uint32_t packet_trusted_sequence_id = 10;         // uint32 trusted_packet_sequence_id = 10
constexpr std::uint32_t packet_clock_snapshot = 6;               // ClockSnapshot clock_snapshot = 6
constexpr std::uint32_t packet_track_event = 11;                 // TrackEvent track_event = 11
constexpr std::uint32_t packet_track_descriptor = 60;            // TrackDescriptor track_descriptor = 60

// trace/clock_snapshot.proto, message ClockSnapshot.
constexpr std::uint32_t clock_snapshot_primary_trace_clock = 2;  // optional BuiltinClock primary_trace_clock = 2
// common/builtin_clock.proto, enum BuiltinClock.
constexpr std::uint64_t builtin_clock_monotonic = 3;             // BUILTIN_CLOCK_MONOTONIC = 3

// trace/track_event/track_descriptor.proto, message TrackDescriptor.
constexpr std::uint32_t track_uuid = 1;         // optional uint64 uuid = 1
constexpr std::uint32_t track_name = 2;         // string name = 2 (oneof static_or_dynamic_name)
constexpr std::uint32_t track_process = 3;      // optional ProcessDescriptor process = 3
constexpr std::uint32_t track_thread = 4;       // optional ThreadDescriptor thread = 4
constexpr std::uint32_t track_parent_uuid = 5;  // optional uint64 parent_uuid = 5
constexpr std::uint32_t track_counter = 8;      // optional CounterDescriptor counter = 8

// trace/track_event/process_descriptor.proto, message ProcessDescriptor.
constexpr std::uint32_t process_pid = 1;   // optional int32 pid = 1
constexpr std::uint32_t process_name = 6;  // optional string process_name = 6

// trace/track_event/thread_descriptor.proto, message ThreadDescriptor.
constexpr std::uint32_t thread_pid = 1;   // optional int32 pid = 1
constexpr std::uint32_t thread_tid = 2;   // optional int64 tid = 2 (int32 in older schemas: same varint)
constexpr std::uint32_t thread_name = 5;  // optional string thread_name = 5

// trace/track_event/track_event.proto, message TrackEvent.
constexpr std::uint32_t event_debug_annotations = 4;        // repeated DebugAnnotation debug_annotations = 4
constexpr std::uint32_t event_type = 9;                     // optional Type type = 9
constexpr std::uint32_t event_track_uuid = 11;              // optional uint64 track_uuid = 11
constexpr std::uint32_t event_categories = 22;              // repeated string categories = 22
constexpr std::uint32_t event_name = 23;                    // string name = 23 (oneof name_field)
constexpr std::uint32_t event_counter_value = 30;           // int64 counter_value = 30
constexpr std::uint32_t event_double_counter_value = 44;    // double double_counter_value = 44
constexpr std::uint32_t event_flow_ids = 47;                // repeated fixed64 flow_ids = 47
constexpr std::uint32_t event_terminating_flow_ids = 48;    // repeated fixed64 terminating_flow_ids = 48
// enum TrackEvent.Type
constexpr std::uint64_t type_slice_begin = 1;  // TYPE_SLICE_BEGIN = 1
constexpr std::uint64_t type_slice_end = 2;    // TYPE_SLICE_END = 2
constexpr std::uint64_t type_instant = 3;      // TYPE_INSTANT = 3
constexpr std::uint64_t type_counter = 4;      // TYPE_COUNTER = 4

// trace/track_event/debug_annotation.proto, message DebugAnnotation.
constexpr std::uint32_t annotation_bool_value = 2;    // bool bool_value = 2 (oneof value)
constexpr std::uint32_t annotation_uint_value = 3;    // uint64 uint_value = 3
constexpr std::uint32_t annotation_int_value = 4;     // int64 int_value = 4
constexpr std::uint32_t annotation_double_value = 5;  // double double_value = 5
constexpr std::uint32_t annotation_string_value = 6;  // string string_value = 6
constexpr std::uint32_t annotation_name = 10;         // string name = 10 (oneof name_field)

constexpr std::uint32_t wire_varint = 0;
constexpr std::uint32_t wire_fixed64 = 1;
constexpr std::uint32_t wire_length_delimited = 2;

// Protobuf parsers reject a length-delimited field of 2 GiB or more.
constexpr std::size_t max_length_bytes = std::numeric_limits<std::int32_t>::max();

void put_varint(std::string& out, std::uint64_t v) {
  char tmp[10];
  std::size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  tmp[n++] = static_cast<char>(v);
  out.append(tmp, n);
}

std::size_t varint_size(std::uint64_t v) {
  return static_cast<std::size_t>(std::bit_width(v | 1) + 6) / 7;
}

void put_key(std::string& out, std::uint32_t field, std::uint32_t wire_type) {
  put_varint(out, (std::uint64_t{field} << 3) | wire_type);
}

void put_uint(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_key(out, field, wire_varint);
  put_varint(out, v);
}

// int32 and int64 fields: two's complement as a uint64 (so a negative value takes 10 bytes).
void put_int(std::string& out, std::uint32_t field, std::int64_t v) {
  put_uint(out, field, static_cast<std::uint64_t>(v));
}

void put_fixed64(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_key(out, field, wire_fixed64);
  char tmp[8];
  for (int i = 0; i < 8; ++i) tmp[i] = static_cast<char>((v >> (8 * i)) & 0xff);  // little-endian
  out.append(tmp, 8);
}

void put_double(std::string& out, std::uint32_t field, double v) {
  put_fixed64(out, field, std::bit_cast<std::uint64_t>(v));
}

void put_string(std::string& out, std::uint32_t field, std::string_view s) {
  if (s.size() > max_length_bytes) throw std::length_error("grove: perfetto_encoder: string over 2 GiB");
  put_key(out, field, wire_length_delimited);
  put_varint(out, s.size());
  out.append(s.data(), s.size());
}

// A submessage whose length is not known yet: writes its key and a one-byte length slot; returns
// the slot's offset for close_message (design comment, "nested lengths").
std::size_t open_message(std::string& out, std::uint32_t field) {
  put_key(out, field, wire_length_delimited);
  out.push_back('\0');
  return out.size() - 1;
}

// Writes the length of the submessage opened at `slot`, moving its body up when the length needs
// more than one byte. Submessages close innermost first, so an outer slot never moves.
void close_message(std::string& out, std::size_t slot) {
  const std::size_t body = out.size() - slot - 1;
  if (body < 0x80) {
    out[slot] = static_cast<char>(body);
    return;
  }
  if (body > max_length_bytes) throw std::length_error("grove: perfetto_encoder: message over 2 GiB");
  const std::size_t n = varint_size(body);
  out.insert(slot + 1, n - 1, '\0');  // the body moves up by n - 1 bytes
  std::uint64_t v = body;
  for (std::size_t i = 0; i < n; ++i, v >>= 7) {
    out[slot + i] = static_cast<char>((v & 0x7f) | (i + 1 < n ? 0x80 : 0));
  }
}

void put_annotation(std::string& out, const annotation& a) {
  const std::size_t slot = open_message(out, event_debug_annotations);
  put_string(out, annotation_name, a.name);
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          put_uint(out, annotation_bool_value, v ? 1 : 0);
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {
          put_uint(out, annotation_uint_value, v);
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          put_int(out, annotation_int_value, v);
        } else if constexpr (std::is_same_v<T, double>) {
          put_double(out, annotation_double_value, v);
        } else {
          static_assert(std::is_same_v<T, std::string_view>);
          put_string(out, annotation_string_value, v);
        }
      },
      a.value);
  close_message(out, slot);
}

// The fields every TrackDescriptor here has.
void put_track_fields(std::string& out, std::uint64_t uuid, std::uint64_t parent_uuid, std::string_view name) {
  put_uint(out, track_uuid, uuid);
  if (parent_uuid != 0) put_uint(out, track_parent_uuid, parent_uuid);
  put_string(out, track_name, name);
}

}  // namespace

perfetto_encoder::perfetto_encoder(std::uint32_t sequence_id) : sequence_id_(sequence_id) {
  if (sequence_id == 0) throw std::invalid_argument("grove: perfetto_encoder: sequence id 0 is invalid");
}

// Appends one `packet` field of Trace: the clock header first if this trace has none yet
// (invariant 2), then the packet's timestamp (when has_ts) and sequence id, then body(buf_) writes
// its payload field. On a throw, buf_ goes back to its size before the call (invariant 1).
template <class Body>
void perfetto_encoder::append_packet(std::uint64_t ts_ns, bool has_ts, Body&& body) {
  const std::size_t mark = buf_.size();
  try {
    if (!wrote_header_) {
      const std::size_t packet = open_message(buf_, trace_packet);
      put_uint(buf_, packet_trusted_sequence_id, sequence_id_);
      const std::size_t snapshot = open_message(buf_, packet_clock_snapshot);
      put_uint(buf_, clock_snapshot_primary_trace_clock, builtin_clock_monotonic);
      close_message(buf_, snapshot);
      close_message(buf_, packet);
    }
    const std::size_t packet = open_message(buf_, trace_packet);
    if (has_ts) put_uint(buf_, packet_timestamp, ts_ns);
    put_uint(buf_, packet_trusted_sequence_id, sequence_id_);
    body(buf_);
    close_message(buf_, packet);
  } catch (...) {
    buf_.resize(mark);
    throw;
  }
  wrote_header_ = true;
}

void perfetto_encoder::process_track(std::uint64_t uuid, std::int32_t pid, std::string_view name) {
  append_packet(0, false, [&](std::string& out) {
    const std::size_t track = open_message(out, packet_track_descriptor);
    put_track_fields(out, uuid, 0, name);
    const std::size_t process = open_message(out, track_process);
    put_int(out, process_pid, pid);
    put_string(out, process_name, name);
    close_message(out, process);
    close_message(out, track);
  });
}

void perfetto_encoder::thread_track(std::uint64_t uuid, std::int32_t pid, std::int64_t tid, std::string_view name) {
  append_packet(0, false, [&](std::string& out) {
    const std::size_t track = open_message(out, packet_track_descriptor);
    put_track_fields(out, uuid, 0, name);
    const std::size_t thread = open_message(out, track_thread);
    put_int(out, thread_pid, pid);
    put_int(out, thread_tid, tid);
    put_string(out, thread_name, name);
    close_message(out, thread);
    close_message(out, track);
  });
}

void perfetto_encoder::named_track(std::uint64_t uuid, std::uint64_t parent_uuid, std::string_view name) {
  append_packet(0, false, [&](std::string& out) {
    const std::size_t track = open_message(out, packet_track_descriptor);
    put_track_fields(out, uuid, parent_uuid, name);
    close_message(out, track);
  });
}

void perfetto_encoder::counter_track(std::uint64_t uuid, std::uint64_t parent_uuid, std::string_view name) {
  append_packet(0, false, [&](std::string& out) {
    const std::size_t track = open_message(out, packet_track_descriptor);
    put_track_fields(out, uuid, parent_uuid, name);
    const std::size_t counter = open_message(out, track_counter);  // empty: the default counter
    close_message(out, counter);
    close_message(out, track);
  });
}

void perfetto_encoder::write_event(std::uint64_t track, std::uint64_t ts_ns, std::uint64_t type,
                                   std::string_view name, const event_details& details) {
  append_packet(ts_ns, true, [&](std::string& out) {
    const std::size_t event = open_message(out, packet_track_event);
    put_uint(out, event_type, type);
    put_uint(out, event_track_uuid, track);
    if (!details.category.empty()) put_string(out, event_categories, details.category);
    put_string(out, event_name, name);
    for (const annotation& a : details.annotations) put_annotation(out, a);
    for (std::uint64_t id : details.flow_ids) put_fixed64(out, event_flow_ids, id);
    for (std::uint64_t id : details.terminating_flow_ids) put_fixed64(out, event_terminating_flow_ids, id);
    close_message(out, event);
  });
}

void perfetto_encoder::slice_begin(std::uint64_t track, std::uint64_t ts_ns, std::string_view name,
                                   const event_details& details) {
  write_event(track, ts_ns, type_slice_begin, name, details);
}

void perfetto_encoder::instant(std::uint64_t track, std::uint64_t ts_ns, std::string_view name,
                               const event_details& details) {
  write_event(track, ts_ns, type_instant, name, details);
}

// An end needs only its track: it closes that track's latest open slice, and takes the begin's name.
void perfetto_encoder::slice_end(std::uint64_t track, std::uint64_t ts_ns) {
  append_packet(ts_ns, true, [&](std::string& out) {
    const std::size_t event = open_message(out, packet_track_event);
    put_uint(out, event_type, type_slice_end);
    put_uint(out, event_track_uuid, track);
    close_message(out, event);
  });
}

void perfetto_encoder::counter(std::uint64_t track, std::uint64_t ts_ns, std::int64_t value) {
  append_packet(ts_ns, true, [&](std::string& out) {
    const std::size_t event = open_message(out, packet_track_event);
    put_uint(out, event_type, type_counter);
    put_uint(out, event_track_uuid, track);
    put_int(out, event_counter_value, value);
    close_message(out, event);
  });
}

void perfetto_encoder::counter(std::uint64_t track, std::uint64_t ts_ns, double value) {
  append_packet(ts_ns, true, [&](std::string& out) {
    const std::size_t event = open_message(out, packet_track_event);
    put_uint(out, event_type, type_counter);
    put_uint(out, event_track_uuid, track);
    put_double(out, event_double_counter_value, value);
    close_message(out, event);
  });
}

std::string perfetto_encoder::take() noexcept {
  std::string out = std::move(buf_);
  buf_.clear();  // a moved-from string is valid but unspecified
  return out;
}

void perfetto_encoder::clear() noexcept {
  buf_.clear();
  wrote_header_ = false;
}

}  // namespace grove::internal
