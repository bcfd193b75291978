// handshake.hpp: the distribution handshake (version 6, OTP 23+), step by step (design in handshake.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <grove/net.hpp>

namespace grove::dist::internal {

// Distribution flags (erl_dist_protocol, "Distribution Flags").
namespace dflag {
inline constexpr std::uint64_t published = 0x1;
inline constexpr std::uint64_t atom_cache = 0x2;
inline constexpr std::uint64_t extended_references = 0x4;
inline constexpr std::uint64_t dist_monitor = 0x8;
inline constexpr std::uint64_t fun_tags = 0x10;
inline constexpr std::uint64_t dist_monitor_name = 0x20;
inline constexpr std::uint64_t new_fun_tags = 0x80;
inline constexpr std::uint64_t extended_pids_ports = 0x100;
inline constexpr std::uint64_t export_ptr_tag = 0x200;
inline constexpr std::uint64_t bit_binaries = 0x400;
inline constexpr std::uint64_t new_floats = 0x800;
inline constexpr std::uint64_t unicode_io = 0x1000;
inline constexpr std::uint64_t dist_hdr_atom_cache = 0x2000;
inline constexpr std::uint64_t small_atom_tags = 0x4000;
inline constexpr std::uint64_t utf8_atoms = 0x10000;
inline constexpr std::uint64_t map_tag = 0x20000;
inline constexpr std::uint64_t big_creation = 0x40000;
inline constexpr std::uint64_t send_sender = 0x80000;
inline constexpr std::uint64_t big_seqtrace_labels = 0x100000;
inline constexpr std::uint64_t exit_payload = 0x400000;
inline constexpr std::uint64_t fragments = 0x800000;
inline constexpr std::uint64_t handshake_23 = 0x1000000;
inline constexpr std::uint64_t unlink_id = 0x2000000;
inline constexpr std::uint64_t spawn = std::uint64_t{1} << 32;
inline constexpr std::uint64_t name_me = std::uint64_t{1} << 33;
inline constexpr std::uint64_t v4_nc = std::uint64_t{1} << 34;
inline constexpr std::uint64_t alias = std::uint64_t{1} << 35;
inline constexpr std::uint64_t mandatory_25_digest = std::uint64_t{1} << 36;

// What OTP 25 refuses a connection without, plus what Grove relies on: UNLINK_ID (mandatory in
// OTP 26), V4_NC (32-bit pid IDs: Grove's table indices pass 15 bits), exit payloads, monitors.
inline constexpr std::uint64_t required = extended_references | fun_tags | new_fun_tags | extended_pids_ports |
                                          export_ptr_tag | bit_binaries | new_floats | utf8_atoms | map_tag |
                                          big_creation | handshake_23 | unlink_id | v4_nc | exit_payload |
                                          dist_monitor | dist_monitor_name;
// What a Grove node offers: the required set, and the rest it implements: the distribution
// header's atom cache (a peer then sends atoms as one-byte references; a Grove node reads them and
// writes its own frames pass-through), not fragments (a peer then sends a large message as one
// frame) nor SPAWN (Erlang's spawn on a Grove node: no Erlang code here).
inline constexpr std::uint64_t offered = required | unicode_io | small_atom_tags | send_sender | big_seqtrace_labels |
                                         alias | mandatory_25_digest | dist_hdr_atom_cache;
}  // namespace dflag

struct identity {
  std::string name;           // this node's full name
  std::uint64_t flags = 0;
  std::uint32_t creation = 0;
  std::string cookie;
};

struct peer {
  std::string name;
  std::uint64_t flags = 0;
  std::uint32_t creation = 0;
  bool old_name_message = false;  // it sent the version-5 'n' name: a complement follows our challenge
};

// Each step returns false with `why` set on anything but the expected answer (a peer that is not a
// node, a wrong cookie, a timeout, a closed socket); the caller then closes the socket.

// The initiator (A). Sends the name; returns the status B answered ("ok", "ok_simultaneous", "nok",
// "not_allowed", "alive", ...), or "" on failure.
std::string send_name_and_receive_status(net::stream& s, const identity& me, net::until u, std::string& why);
// After "alive": true continues (our old connection to B is gone), false gives up.
bool answer_alive(net::stream& s, bool go_on, net::until u, std::string& why);
// After "ok"/"ok_simultaneous" (or "alive" answered true): the challenges. `expected` is the node we
// meant to reach; B must be it.
bool complete_as_initiator(net::stream& s, const identity& me, std::string_view expected, peer& them, net::until u,
                           std::string& why);

// The acceptor (B). Reads A's name message.
bool receive_name(net::stream& s, peer& them, net::until u, std::string& why);
bool send_status(net::stream& s, std::string_view status, net::until u, std::string& why);
// After "alive": A's answer (true: go on).
bool receive_alive_answer(net::stream& s, bool& go_on, net::until u, std::string& why);
// After an "ok" status: the challenges; false (with why) for a wrong cookie.
bool complete_as_acceptor(net::stream& s, const identity& me, peer& them, net::until u, std::string& why);

// OTP's digest: MD5 of the cookie followed by the challenge as unsigned decimal text.
void challenge_digest(std::uint32_t challenge, std::string_view cookie, unsigned char out[16]);

}  // namespace grove::dist::internal
