// control.hpp: the distribution's control messages and the frames that carry them.
//
// A frame on a connection: a 4-byte length (0: a tick), then either 112 ("pass through") and the
// control message and, for sends and exit payloads, one more term, each with its own version byte
// 131; or (DFLAG_DIST_HDR_ATOM_CACHE agreed, as every OTP node does) a distribution header, 131
// 68, naming the atoms the terms refer to by ATOM_CACHE_REF, and the terms without version bytes.
// A Grove node reads both and writes headers (pass-through frames to a peer that did not agree: an
// OTP node refuses a pass-through frame once headers are agreed). The control message is a tuple
// whose first element says what it is (erl_dist_protocol, "Protocol between Connected Nodes").
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <grove/term.hpp>

#include "external_format.hpp"

namespace grove::dist::internal {

namespace op {
inline constexpr int link = 1;
inline constexpr int send = 2;
inline constexpr int exit = 3;
inline constexpr int unlink = 4;  // obsolete (UNLINK_ID replaces it), still read
inline constexpr int node_link = 5;
inline constexpr int reg_send = 6;
inline constexpr int group_leader = 7;
inline constexpr int exit2 = 8;
inline constexpr int send_tt = 12;
inline constexpr int exit_tt = 13;
inline constexpr int reg_send_tt = 16;
inline constexpr int exit2_tt = 18;
inline constexpr int monitor_p = 19;
inline constexpr int demonitor_p = 20;
inline constexpr int monitor_p_exit = 21;
inline constexpr int send_sender = 22;
inline constexpr int send_sender_tt = 23;
inline constexpr int payload_exit = 24;
inline constexpr int payload_exit_tt = 25;
inline constexpr int payload_exit2 = 26;
inline constexpr int payload_exit2_tt = 27;
inline constexpr int payload_monitor_p_exit = 28;
inline constexpr int spawn_request = 29;
inline constexpr int spawn_request_tt = 30;
inline constexpr int spawn_reply = 31;
inline constexpr int spawn_reply_tt = 32;
inline constexpr int alias_send = 33;
inline constexpr int alias_send_tt = 34;
inline constexpr int unlink_id = 35;
inline constexpr int unlink_id_ack = 36;
}  // namespace op

inline constexpr std::uint8_t pass_through = 112;

// Appends a whole frame to `out`: length, a distribution header that names no atoms (131 68 0), the
// control tuple of `control`'s elements (written as a tuple without making one) and, if given, the
// payload term. Throws grove::error(errc::bad_argument) past max_bytes
// (node_options::max_frame_bytes); `out` then holds what it held before. For frames made before the
// peer's flags are known (queued while connecting) and for peers without headers (to_pass_through).
void append_frame(std::string& out, std::initializer_list<term> control, const term* payload, const codec_context& ctx,
                  std::size_t max_bytes);

// ## Atoms sent through the cache
// With headers agreed, a frame names its atoms (and its pids' node names) once in its header and
// refers to them by ATOM_CACHE_REF, as OTP's own frames do: the peer keeps 2,048 entries per
// connection, set by a header's "new entry" (the atom's text) and used again by index alone, so
// after a connection's first frames an atom costs two bytes and no lookup by text on either side.
// The frame's body is encoded with frame-local indices (encode_term into frame_atoms) wherever the
// sender runs; the header, which depends on what the peer's cache holds, is written under the
// connection's lock when the frame takes its place on the wire (connection::enqueue), so headers
// reach the peer in the order they changed sent_atom_cache. An entry's home is a hash of the key,
// with three more places to probe, so that two atoms of one frame never share an entry.
// Measured (`python3 bench/harness/dist_send.py --runs 3`, bench/RESULTS.md, "Distribution"): a
// stream of small terms to an Erlang node 1.09x -> 1.59x Erlang's own, of 1 KB binaries 0.83x ->
// 0.98x. Rejected: one place per atom (OTP's), where the second of two atoms of a frame that share
// it goes as text, and two atoms used in turn replace each other's entry every frame.

// The body of a frame for a peer with headers: the control tuple of `control`'s elements and, if
// given, the payload, their atoms into `refs`. Throws grove::error(errc::bad_argument) if the frame
// could pass max_bytes with its header; `out` then holds what it held before.
void append_frame_body(std::string& out, std::initializer_list<term> control, const term* payload,
                       const codec_context& ctx, frame_atoms& refs, std::size_t max_bytes);

// What the peer's atom cache holds, as far as the frames written so far set it: per entry, the
// key (frame_atoms) + 1, 0 for never set. Guarded by the connection's lock.
struct sent_atom_cache {
  std::array<std::uint64_t, 2048> keys{};
};
// Appends a frame's length and distribution header for a body of body_bytes that refers to `refs`,
// and records in `cache` the entries it sets. The frame must go on the wire next.
void append_frame_head(std::string& out, const frame_atoms& refs, std::size_t body_bytes, sent_atom_cache& cache,
                       const codec_context& ctx);

// `frames` (whole frames, back to back, as append_frame writes them) as pass-through frames, for a
// peer that did not agree to distribution headers.
std::string to_pass_through(std::string_view frames, const codec_context& ctx);
// A pass-through frame as a string, from a control tuple that is a term (tests, hostile peers).
std::string make_frame(const term& control, const term* payload, const codec_context& ctx, std::size_t max_bytes);

// The atom cache the peer's distribution headers fill (erl_ext_dist, "Distribution Header"): 2,048
// entries, 8 segments of 256. Owned by the connection's reader alone.
struct atom_cache {
  std::array<grove::atom, 2048> atoms{};
  std::bitset<2048> set;
};

// A frame's contents (after its length), read: the control message and the payload if there is one.
struct frame {
  term control;
  term payload;
  bool has_payload = false;
};
// Reads a pass-through frame, or, with `cache` (the peer agreed to DFLAG_DIST_HDR_ATOM_CACHE), one
// with a distribution header, whose new entries it stores in the cache. Throws
// grove::error(errc::bad_argument) for anything else: a header of another kind (fragments were not
// agreed), a reference to an entry never set, a control message that is not a tuple tagged with an
// integer, more than one payload term, bytes after it.
frame read_frame(std::string_view bytes, const codec_context& ctx, atom_cache* cache = nullptr);

}  // namespace grove::dist::internal
