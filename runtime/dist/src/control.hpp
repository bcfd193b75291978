// control.hpp: the distribution's control messages and the frames that carry them.
//
// A frame on a connection: a 4-byte length (0: a tick), 112 ("pass through": no atom cache was
// agreed), then the control message and, for sends and exit payloads, one more term, each with its
// own version byte 131. The control message is a tuple whose first element says what it is
// (erl_dist_protocol, "Protocol between Connected Nodes").
#pragma once

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

// Appends a whole frame to `out`: length, pass-through byte, the control tuple of `control`'s
// elements (written as a tuple without making one) and, if given, the payload term. Throws
// grove::error(errc::bad_argument) past max_bytes (node_options::max_frame_bytes); `out` then holds
// what it held before.
void append_frame(std::string& out, std::initializer_list<term> control, const term* payload, const codec_context& ctx,
                  std::size_t max_bytes);
// The same as a string, from a control tuple that is a term (tests, hostile peers).
std::string make_frame(const term& control, const term* payload, const codec_context& ctx, std::size_t max_bytes);

// A frame's contents (after its length), read: the control message and the payload if there is one.
struct frame {
  term control;
  term payload;
  bool has_payload = false;
};
// Throws grove::error(errc::bad_argument) for anything but pass-through, one control tuple whose
// first element is an integer, and at most one payload term, with nothing after.
frame read_frame(std::string_view bytes, const codec_context& ctx);

}  // namespace grove::dist::internal
