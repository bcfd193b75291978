// Unit tests for runtime/src/perfetto_encoder.hpp. Two independent readings of the bytes:
// - `protoc --decode_raw` (Debian's protobuf-compiler; the test fails, not skips, without it), which
//   proves the buffer parses as protobuf and shows each packet's fields by number, compared here with
//   the numbers of Perfetto's schema (the .cpp names each one);
// - a small wire-format reader below, for what decode_raw's text cannot show: how many bytes a varint
//   or a length took, and strings byte for byte.
// No timing here; the cost figure in the header's design comment comes from a throwaway probe.
#include "perfetto_encoder.hpp"
#include "support/protoc.hpp"

#include <doctest/doctest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

using grove::internal::annotation;
using grove::internal::perfetto_encoder;

constexpr std::uint32_t seq = 7;

// The clock header every trace starts with: packet {trusted_packet_sequence_id: 7,
// clock_snapshot {primary_trace_clock: BUILTIN_CLOCK_MONOTONIC}}.
constexpr std::string_view header_text =
    "1 {\n"
    "  10: 7\n"
    "  6 {\n"
    "    2: 3\n"
    "  }\n"
    "}\n";

using grove_test::protoc_decode_raw;

// decode_raw's text cut into its top-level fields: for a trace, one "1 {\n ... }\n" block per packet.
std::vector<std::string> packets_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const std::size_t end = text.find("\n}\n", begin);
    REQUIRE_MESSAGE(end != std::string::npos, "unterminated packet in: " << text);
    REQUIRE_MESSAGE(text.compare(begin, 4, "1 {\n") == 0, "not a Trace.packet field at " << begin << ": " << text);
    out.push_back(text.substr(begin, end + 3 - begin));
    begin = end + 3;
  }
  return out;
}

// A minimal reader of the protobuf wire format, independent of the encoder's code.
struct wire_field {
  std::uint32_t number = 0;
  std::uint32_t wire_type = 0;
  std::uint64_t value = 0;     // wire type 0 (varint) and 1 (fixed64)
  std::string_view bytes;      // wire type 2 (length-delimited)
  std::size_t varint_size = 0; // bytes taken by the varint value, or by the length of wire type 2
};

std::uint64_t read_varint(std::string_view in, std::size_t& pos, std::size_t& size) {
  std::uint64_t v = 0;
  const std::size_t start = pos;
  for (int shift = 0; shift < 64; shift += 7) {
    REQUIRE_MESSAGE(pos < in.size(), "truncated varint");
    const auto byte = static_cast<unsigned char>(in[pos++]);
    v |= std::uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) {
      size = pos - start;
      return v;
    }
  }
  FAIL("varint longer than 10 bytes");
  return 0;
}

std::vector<wire_field> parse(std::string_view in) {
  std::vector<wire_field> out;
  std::size_t pos = 0;
  while (pos < in.size()) {
    std::size_t key_size = 0;
    const std::uint64_t key = read_varint(in, pos, key_size);
    wire_field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.wire_type = static_cast<std::uint32_t>(key & 7);
    if (f.wire_type == 0) {
      f.value = read_varint(in, pos, f.varint_size);
    } else if (f.wire_type == 1) {
      REQUIRE(pos + 8 <= in.size());
      for (int i = 0; i < 8; ++i) f.value |= std::uint64_t{static_cast<unsigned char>(in[pos + i])} << (8 * i);
      pos += 8;
    } else if (f.wire_type == 2) {
      const std::uint64_t n = read_varint(in, pos, f.varint_size);
      REQUIRE_MESSAGE(n <= in.size() - pos, "length past the end");
      f.bytes = in.substr(pos, n);
      pos += n;
    } else {
      FAIL("unexpected wire type " << f.wire_type);
    }
    out.push_back(f);
  }
  return out;
}

// The one field `number` of a parsed message (fails unless there is exactly one).
wire_field only(const std::vector<wire_field>& fields, std::uint32_t number) {
  const wire_field* found = nullptr;
  for (const wire_field& f : fields) {
    if (f.number != number) continue;
    REQUIRE_MESSAGE(found == nullptr, "field " << number << " appears twice");
    found = &f;
  }
  REQUIRE_MESSAGE(found != nullptr, "field " << number << " missing");
  return *found;
}

bool has(const std::vector<wire_field>& fields, std::uint32_t number) {
  for (const wire_field& f : fields) {
    if (f.number == number) return true;
  }
  return false;
}

// The payloads of a trace's packets (Trace.packet = 1), header included.
std::vector<std::string_view> packet_payloads(std::string_view trace) {
  std::vector<std::string_view> out;
  for (const wire_field& f : parse(trace)) {
    REQUIRE(f.number == 1);
    REQUIRE(f.wire_type == 2);
    out.push_back(f.bytes);
  }
  return out;
}

// The TrackEvent (TracePacket.track_event = 11) of a packet payload.
std::vector<wire_field> track_event_of(std::string_view packet) {
  const wire_field e = only(parse(packet), 11);
  REQUIRE(e.wire_type == 2);
  return parse(e.bytes);
}

// The TrackDescriptor (TracePacket.track_descriptor = 60) of a packet payload.
std::vector<wire_field> track_descriptor_of(std::string_view packet) {
  const wire_field d = only(parse(packet), 60);
  REQUIRE(d.wire_type == 2);
  return parse(d.bytes);
}

}  // namespace

TEST_CASE("an encoder that records nothing yields an empty trace, which protoc reads as zero packets") {
  perfetto_encoder enc(seq);
  CHECK(enc.bytes().empty());
  CHECK(protoc_decode_raw(enc.bytes()).empty());
  CHECK(enc.take().empty());
}

TEST_CASE("a trace of tracks, a slice with a flow into another thread's instant, and counters decodes with "
          "protoc to the field numbers of Perfetto's schema") {
  perfetto_encoder enc(seq);
  enc.process_track(42, 4242, "grove");
  enc.thread_track(43, 4242, 4243, "worker 0");
  enc.thread_track(44, 4242, 4244, "worker 1");
  enc.counter_track(45, 42, "run queue");
  enc.named_track(46, 42, "timers");
  const std::uint64_t flow[] = {0x1234'5678'9abc'def0};
  const annotation args[] = {{"mailbox", std::int64_t{3}}};
  enc.slice_begin(43, 1'000, "run", {.category = "sched", .annotations = args, .flow_ids = flow});
  enc.slice_end(43, 2'000);
  enc.instant(44, 2'500, "recv", {.terminating_flow_ids = flow});
  enc.counter(45, 3'000, std::int64_t{12});
  enc.counter(45, 3'100, 2.5);

  const std::vector<std::string> packets = packets_of(protoc_decode_raw(enc.bytes()));
  REQUIRE(packets.size() == 11);  // the clock header and ten calls
  CHECK(packets[0] == header_text);
  // TracePacket: 10 trusted_packet_sequence_id, 60 track_descriptor. TrackDescriptor: 1 uuid, 2 name,
  // 3 process {1 pid, 6 process_name}.
  CHECK(packets[1] ==
        "1 {\n  10: 7\n  60 {\n    1: 42\n    2: \"grove\"\n"
        "    3 {\n      1: 4242\n      6: \"grove\"\n    }\n  }\n}\n");
  // TrackDescriptor 4 thread {1 pid, 2 tid, 5 thread_name}; no parent_uuid (Perfetto ignores it there).
  CHECK(packets[2] ==
        "1 {\n  10: 7\n  60 {\n    1: 43\n    2: \"worker 0\"\n"
        "    4 {\n      1: 4242\n      2: 4243\n      5: \"worker 0\"\n    }\n  }\n}\n");
  CHECK(packets[3] ==
        "1 {\n  10: 7\n  60 {\n    1: 44\n    2: \"worker 1\"\n"
        "    4 {\n      1: 4242\n      2: 4244\n      5: \"worker 1\"\n    }\n  }\n}\n");
  // TrackDescriptor 5 parent_uuid, 8 counter (an empty CounterDescriptor: decode_raw shows "").
  CHECK(packets[4] == "1 {\n  10: 7\n  60 {\n    1: 45\n    5: 42\n    2: \"run queue\"\n    8: \"\"\n  }\n}\n");
  CHECK(packets[5] == "1 {\n  10: 7\n  60 {\n    1: 46\n    5: 42\n    2: \"timers\"\n  }\n}\n");
  // TracePacket 8 timestamp, 11 track_event. TrackEvent: 9 type (1 SLICE_BEGIN), 11 track_uuid,
  // 22 categories, 23 name, 4 debug_annotations {10 name, 4 int_value}, 47 flow_ids (fixed64).
  CHECK(packets[6] ==
        "1 {\n  8: 1000\n  10: 7\n  11 {\n    9: 1\n    11: 43\n    22: \"sched\"\n    23: \"run\"\n"
        "    4 {\n      10: \"mailbox\"\n      4: 3\n    }\n"
        "    47: 0x123456789abcdef0\n  }\n}\n");
  // 9 type 2 (SLICE_END) needs only the track.
  CHECK(packets[7] == "1 {\n  8: 2000\n  10: 7\n  11 {\n    9: 2\n    11: 43\n  }\n}\n");
  // 9 type 3 (INSTANT) on the other thread; 48 terminating_flow_ids carries the same id.
  CHECK(packets[8] ==
        "1 {\n  8: 2500\n  10: 7\n  11 {\n    9: 3\n    11: 44\n    23: \"recv\"\n"
        "    48: 0x123456789abcdef0\n  }\n}\n");
  // 9 type 4 (COUNTER); 30 counter_value; 44 double_counter_value (2.5 is 0x4004000000000000).
  CHECK(packets[9] == "1 {\n  8: 3000\n  10: 7\n  11 {\n    9: 4\n    11: 45\n    30: 12\n  }\n}\n");
  CHECK(packets[10] ==
        "1 {\n  8: 3100\n  10: 7\n  11 {\n    9: 4\n    11: 45\n    44: 0x4004000000000000\n  }\n}\n");
}

TEST_CASE("every annotation type is written in its own DebugAnnotation field") {
  perfetto_encoder enc(seq);
  const annotation args[] = {
      {"flag", true},                                // 2 bool_value
      {"unsigned", std::uint64_t{7}},                // 3 uint_value
      {"signed", -5},                                // 4 int_value: an int becomes int64_t
      {"ratio", 1.5},                                // 5 double_value
      {"text", "hello"},                             // 6 string_value: a literal is not a bool
  };
  enc.instant(1, 10, "args", {.annotations = args});
  const std::vector<std::string> packets = packets_of(protoc_decode_raw(enc.bytes()));
  REQUIRE(packets.size() == 2);
  CHECK(packets[1] ==
        "1 {\n  8: 10\n  10: 7\n  11 {\n    9: 3\n    11: 1\n    23: \"args\"\n"
        "    4 {\n      10: \"flag\"\n      2: 1\n    }\n"
        "    4 {\n      10: \"unsigned\"\n      3: 7\n    }\n"
        "    4 {\n      10: \"signed\"\n      4: 18446744073709551611\n    }\n"
        "    4 {\n      10: \"ratio\"\n      5: 0x3ff8000000000000\n    }\n"
        "    4 {\n      10: \"text\"\n      6: \"hello\"\n    }\n"
        "  }\n}\n");
}

TEST_CASE("varints at 0, 127, 128, 2^32 and 2^64-1 round-trip in their shortest form") {
  struct boundary {
    std::uint64_t value;
    std::size_t bytes;
  };
  const boundary cases[] = {{0, 1}, {127, 1}, {128, 2}, {std::uint64_t{1} << 32, 5},
                            {std::numeric_limits<std::uint64_t>::max(), 10}};
  for (const boundary& b : cases) {
    CAPTURE(b.value);
    perfetto_encoder enc(seq);
    enc.slice_end(b.value, b.value);  // track_uuid and timestamp are both uint64
    const std::vector<std::string_view> packets = packet_payloads(enc.bytes());
    REQUIRE(packets.size() == 2);
    const std::vector<wire_field> packet = parse(packets[1]);
    const wire_field ts = only(packet, 8);  // TracePacket.timestamp
    CHECK(ts.value == b.value);
    CHECK(ts.varint_size == b.bytes);
    const wire_field track = only(track_event_of(packets[1]), 11);  // TrackEvent.track_uuid
    CHECK(track.value == b.value);
    CHECK(track.varint_size == b.bytes);
    const std::string text = protoc_decode_raw(enc.bytes());
    CHECK(text.find("  8: " + std::to_string(b.value) + "\n") != std::string::npos);
    CHECK(text.find("    11: " + std::to_string(b.value) + "\n") != std::string::npos);
  }
}

TEST_CASE("negative int32 and int64 values are sign-extended to ten-byte varints, not zigzag-encoded") {
  perfetto_encoder enc(seq);
  enc.thread_track(1, -1, -2, "t");  // ThreadDescriptor: int32 pid, int64 tid
  enc.counter(2, 5, std::int64_t{-1});
  const std::vector<std::string_view> packets = packet_payloads(enc.bytes());
  REQUIRE(packets.size() == 3);
  const std::vector<wire_field> thread = parse(only(track_descriptor_of(packets[1]), 4).bytes);
  CHECK(only(thread, 1).value == std::numeric_limits<std::uint64_t>::max());
  CHECK(only(thread, 1).varint_size == 10);
  CHECK(only(thread, 2).value == std::numeric_limits<std::uint64_t>::max() - 1);
  const wire_field value = only(track_event_of(packets[2]), 30);  // TrackEvent.counter_value
  CHECK(value.value == std::numeric_limits<std::uint64_t>::max());
  CHECK(value.varint_size == 10);
}

TEST_CASE("strings keep non-ASCII and NUL bytes exactly, and an empty name is an empty string") {
  const std::string odd = std::string("w\xc3\xb6rker \xe2\x86\x92 ") + '\0' + "\xff";
  perfetto_encoder enc(seq);
  enc.named_track(1, 0, odd);
  enc.named_track(2, 0, "");
  enc.slice_begin(1, 10, "", {.category = odd});
  const std::vector<std::string_view> packets = packet_payloads(enc.bytes());
  REQUIRE(packets.size() == 4);
  const std::vector<wire_field> first = track_descriptor_of(packets[1]);
  CHECK(only(first, 2).bytes == odd);
  CHECK_FALSE(has(first, 5));  // parent 0: a root track, no parent_uuid
  const std::vector<wire_field> empty = track_descriptor_of(packets[2]);
  CHECK(only(empty, 2).wire_type == 2);
  CHECK(only(empty, 2).bytes.empty());
  const std::vector<wire_field> event = track_event_of(packets[3]);
  CHECK(only(event, 23).bytes.empty());
  CHECK(only(event, 22).bytes == odd);
  // protoc agrees, showing bytes past ASCII as octal escapes.
  const std::vector<std::string> text = packets_of(protoc_decode_raw(enc.bytes()));
  REQUIRE(text.size() == 4);
  CHECK(text[1] == "1 {\n  10: 7\n  60 {\n    1: 1\n    2: \"w\\303\\266rker \\342\\206\\222 \\000\\377\"\n  }\n}\n");
  CHECK(text[2] == "1 {\n  10: 7\n  60 {\n    1: 2\n    2: \"\"\n  }\n}\n");
}

TEST_CASE("messages of 128 bytes and more get multi-byte lengths, nested ones included") {
  for (const std::size_t size : {std::size_t{100}, std::size_t{127}, std::size_t{128}, std::size_t{300},
                                 std::size_t{20'000}, std::size_t{70'000}}) {
    CAPTURE(size);
    const std::string name(size, 'n');
    const std::string text(size, 't');
    const annotation args[] = {{"long", std::string_view(text)}};
    perfetto_encoder enc(seq);
    enc.named_track(9, 0, name);
    enc.slice_begin(9, 1, name, {.annotations = args});
    enc.slice_end(9, 2);
    const std::vector<std::string_view> packets = packet_payloads(enc.bytes());
    REQUIRE(packets.size() == 4);
    CHECK(only(track_descriptor_of(packets[1]), 2).bytes == name);
    const std::vector<wire_field> event = track_event_of(packets[2]);
    CHECK(only(event, 23).bytes == name);
    const wire_field arg = only(event, 4);
    CHECK(arg.varint_size == (arg.bytes.size() < 128 ? 1u : arg.bytes.size() < 16'384 ? 2u : 3u));
    CHECK(only(parse(arg.bytes), 6).bytes == text);
    CHECK(only(track_event_of(packets[3]), 9).value == 2);  // the next packet starts where it should
    // Every length took its shortest varint.
    for (const wire_field& f : parse(enc.bytes())) {
      CHECK(f.varint_size == (f.bytes.size() < 128 ? 1u : f.bytes.size() < 16'384 ? 2u : 3u));
    }
    CHECK(packets_of(protoc_decode_raw(enc.bytes())).size() == 4);
  }
}

TEST_CASE("every packet carries the sequence id, and only events carry a timestamp") {
  perfetto_encoder enc(99);
  enc.process_track(1, 10, "p");
  enc.counter_track(2, 1, "c");
  enc.slice_begin(1, 5, "s");
  enc.slice_end(1, 6);
  enc.counter(2, 7, 1.0);
  const std::vector<std::string_view> packets = packet_payloads(enc.bytes());
  REQUIRE(packets.size() == 6);
  for (std::size_t i = 0; i < packets.size(); ++i) {
    CAPTURE(i);
    const std::vector<wire_field> fields = parse(packets[i]);
    CHECK(only(fields, 10).value == 99);  // trusted_packet_sequence_id
    CHECK(has(fields, 8) == (i >= 3));    // timestamp
    CHECK_FALSE(has(fields, 13));         // no sequence_flags: nothing is interned
  }
}

TEST_CASE("chunks taken one after another concatenate into one trace with a single clock header") {
  perfetto_encoder enc(seq);
  enc.thread_track(1, 10, 11, "w");
  std::string file = enc.take();
  CHECK(enc.bytes().empty());
  enc.slice_begin(1, 100, "a");
  enc.slice_end(1, 200);
  file += enc.take();
  enc.instant(1, 300, "b");
  file += enc.bytes();
  enc.clear_bytes();
  CHECK(enc.bytes().empty());
  enc.counter(1, 400, std::int64_t{1});
  file += enc.bytes();

  const std::vector<std::string> packets = packets_of(protoc_decode_raw(file));
  REQUIRE(packets.size() == 6);
  CHECK(packets[0] == header_text);
  for (std::size_t i = 1; i < packets.size(); ++i) CHECK(packets[i].find("\n  6 {\n") == std::string::npos);
}

TEST_CASE("clear starts a new trace that opens with the clock header again") {
  perfetto_encoder enc(seq);
  enc.slice_begin(1, 100, "a");
  enc.clear();
  CHECK(enc.bytes().empty());
  enc.slice_end(1, 200);
  const std::vector<std::string> packets = packets_of(protoc_decode_raw(enc.bytes()));
  REQUIRE(packets.size() == 2);
  CHECK(packets[0] == header_text);
  CHECK(packets[1] == "1 {\n  8: 200\n  10: 7\n  11 {\n    9: 2\n    11: 1\n  }\n}\n");
}

TEST_CASE("a call that throws leaves the trace as it was, clock header state included") {
  // A 2 GiB name, in pages that are mapped but never touched: the encoder must refuse it before
  // reading any of it (a protobuf length cannot reach 2 GiB).
  const std::size_t huge = std::size_t{1} << 31;
  void* pages = ::mmap(nullptr, huge, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(pages != MAP_FAILED);
  const std::string_view too_long(static_cast<const char*>(pages), huge);

  perfetto_encoder enc(seq);
  CHECK_THROWS_AS(enc.named_track(1, 0, too_long), std::length_error);
  CHECK(enc.bytes().empty());  // not even the clock header
  enc.named_track(1, 0, "ok");
  const std::string before = enc.bytes();
  CHECK_THROWS_AS(enc.instant(1, 5, too_long), std::length_error);
  CHECK(enc.bytes() == before);
  CHECK_THROWS_AS(enc.instant(1, 5, "x", {.category = too_long}), std::length_error);
  CHECK(enc.bytes() == before);
  ::munmap(pages, huge);

  const std::vector<std::string> packets = packets_of(protoc_decode_raw(enc.bytes()));
  REQUIRE(packets.size() == 2);
  CHECK(packets[0] == header_text);
}

TEST_CASE("a sequence id of 0 is refused, since Perfetto reads 0 as no sequence") {
  CHECK_THROWS_AS(perfetto_encoder(0), std::invalid_argument);
}
