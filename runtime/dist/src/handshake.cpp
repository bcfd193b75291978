// handshake.cpp: how two nodes agree to talk (OTP's erl_dist_protocol, "Distribution Handshake").
//
//   A (initiator)                          B (acceptor)
//   send_name 'N' flags creation name  ->
//                                      <-  send_status 's' "ok" | "ok_simultaneous" | "nok" | "alive" | ...
//   ('alive': send_status "true"|"false" ->)
//                                      <-  send_challenge 'N' flags challengeB creation name
//   ('c' complement, after an old 'n' name ->)
//   send_challenge_reply 'r' challengeA digest(challengeB) ->
//                                      <-  send_challenge_ack 'a' digest(challengeA)
// Every message has a 2-byte length; digests are MD5(cookie ++ decimal(challenge)). Each side
// proves it knows the cookie by the digest of the other's random challenge, so a wrong cookie is
// refused by whichever side checks first (B, as OTP), and nothing about the cookie crosses.
//
// A handshake message is at most a few hundred bytes (a name is at most 255 characters), so any
// length past 2,048 is a peer that is not a node, refused before anything is read into memory; every
// read has the caller's deadline (node_options::setup_timeout). The flags both sides need
// (dflag::required) are checked on both sides: a peer without them is refused with the names of
// those it lacks.
#include "handshake.hpp"

#include <openssl/evp.h>
#include <sys/random.h>

#include <cstring>
#include <random>

#include <fmt/format.h>

namespace grove::dist::internal {

namespace {

constexpr std::size_t max_handshake_message = 2048;

void put16(std::string& out, std::uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}
void put32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>(v >> shift);
}
void put64(std::string& out, std::uint64_t v) {
  put32(out, static_cast<std::uint32_t>(v >> 32));
  put32(out, static_cast<std::uint32_t>(v));
}
std::uint16_t get16(const std::string& s, std::size_t at) {
  return static_cast<std::uint16_t>(static_cast<unsigned char>(s[at]) << 8 | static_cast<unsigned char>(s[at + 1]));
}
std::uint32_t get32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(s[at + i]);
  return v;
}
std::uint64_t get64(const std::string& s, std::size_t at) { return std::uint64_t{get32(s, at)} << 32 | get32(s, at + 4); }

bool write_message(net::stream& s, const std::string& body, net::until u, std::string& why) {
  std::string framed;
  put16(framed, static_cast<std::uint16_t>(body.size()));
  framed += body;
  if (auto e = s.write_all(framed, u)) {
    why = fmt::format("handshake write: {}", e.message());
    return false;
  }
  return true;
}

bool read_message(net::stream& s, std::string& body, net::until u, std::string& why) {
  unsigned char len[2];
  if (auto e = s.read_exact(len, 2, u)) {
    why = fmt::format("handshake read: {}", e.message());
    return false;
  }
  const std::size_t n = static_cast<std::size_t>(len[0] << 8 | len[1]);
  if (n == 0 || n > max_handshake_message) {
    why = fmt::format("a handshake message of {} bytes: not a node", n);
    return false;
  }
  body.resize(n);
  if (auto e = s.read_exact(body.data(), n, u)) {
    why = fmt::format("handshake read: {}", e.message());
    return false;
  }
  return true;
}

std::uint32_t new_challenge() {
  std::uint32_t c = 0;
  if (getrandom(&c, sizeof c, 0) != static_cast<ssize_t>(sizeof c)) {
    std::random_device rd;  // getrandom cannot fail for 4 bytes on Linux >= 3.17; this is the fallback
    c = rd();
  }
  return c;
}

bool check_flags(std::uint64_t flags, std::string& why) {
  const std::uint64_t missing = dflag::required & ~flags;
  if (missing == 0) return true;
  why = fmt::format("the peer lacks the distribution flags {:#x} that OTP 25 and Grove require", missing);
  return false;
}

bool valid_node_name(std::string_view name) {
  const auto at = name.find('@');
  return name.size() <= 255 && at != std::string_view::npos && at > 0 && at + 1 < name.size();
}

}  // namespace

void challenge_digest(std::uint32_t challenge, std::string_view cookie, unsigned char out[16]) {
  const std::string text = fmt::format("{}{}", cookie, challenge);
  unsigned int n = 16;
  EVP_Digest(text.data(), text.size(), out, &n, EVP_md5(), nullptr);
}

std::string send_name_and_receive_status(net::stream& s, const identity& me, net::until u, std::string& why) {
  std::string name;
  name += 'N';
  put64(name, me.flags);
  put32(name, me.creation);
  put16(name, static_cast<std::uint16_t>(me.name.size()));
  name += me.name;
  if (!write_message(s, name, u, why)) return "";
  std::string status;
  if (!read_message(s, status, u, why)) return "";
  if (status[0] != 's') {
    why = fmt::format("a status message of tag {}: not a node", static_cast<int>(static_cast<unsigned char>(status[0])));
    return "";
  }
  if (status.rfind("snamed:", 0) == 0) {
    why = "the peer named us (we did not ask)";
    return "";
  }
  return status.substr(1);
}

bool answer_alive(net::stream& s, bool go_on, net::until u, std::string& why) {
  return write_message(s, go_on ? "strue" : "sfalse", u, why);
}

bool complete_as_initiator(net::stream& s, const identity& me, std::string_view expected, peer& them, net::until u,
                           std::string& why) {
  std::string challenge;
  if (!read_message(s, challenge, u, why)) return false;
  // 'N' Flags(8) Challenge(4) Creation(4) Nlen(2) Name
  if (challenge[0] != 'N' || challenge.size() < 19) {
    why = "a challenge message that is not version 6's";
    return false;
  }
  them.flags = get64(challenge, 1);
  const std::uint32_t their_challenge = get32(challenge, 9);
  them.creation = get32(challenge, 13);
  const std::size_t nlen = get16(challenge, 17);
  if (19 + nlen > challenge.size()) {
    why = "a challenge whose name runs past its end";
    return false;
  }
  them.name = challenge.substr(19, nlen);
  if (them.name != expected) {
    why = fmt::format("reached {} instead of {}", them.name, expected);
    return false;
  }
  if (!check_flags(them.flags, why)) return false;
  const std::uint32_t ours = new_challenge();
  std::string reply;
  reply += 'r';
  put32(reply, ours);
  unsigned char digest[16];
  challenge_digest(their_challenge, me.cookie, digest);
  reply.append(reinterpret_cast<const char*>(digest), 16);
  if (!write_message(s, reply, u, why)) return false;
  std::string ack;
  if (!read_message(s, ack, u, why)) {
    why += " (a peer with another cookie closes here)";
    return false;
  }
  unsigned char expected_digest[16];
  challenge_digest(ours, me.cookie, expected_digest);
  if (ack.size() != 17 || ack[0] != 'a' || std::memcmp(ack.data() + 1, expected_digest, 16) != 0) {
    why = "the peer's challenge ack does not match our cookie";
    return false;
  }
  return true;
}

bool receive_name(net::stream& s, peer& them, net::until u, std::string& why) {
  std::string name;
  if (!read_message(s, name, u, why)) return false;
  if (name[0] == 'N' && name.size() >= 15) {
    // 'N' Flags(8) Creation(4) Nlen(2) Name
    them.flags = get64(name, 1);
    them.creation = get32(name, 9);
    const std::size_t nlen = get16(name, 13);
    if (15 + nlen > name.size()) {
      why = "a name message whose name runs past its end";
      return false;
    }
    them.name = name.substr(15, nlen);
  } else if (name[0] == 'n' && name.size() >= 7) {
    // 'n' Version(2) = 5, Flags(4), Name: an OTP 23/24 node that did not ask EPMD our version
    them.flags = get32(name, 3);
    them.name = name.substr(7);
    them.old_name_message = true;
  } else {
    why = fmt::format("a name message of tag {}: not a node", static_cast<int>(static_cast<unsigned char>(name[0])));
    return false;
  }
  if (!valid_node_name(them.name)) {
    why = "a name message without a valid node name";
    return false;
  }
  if (!(them.flags & dflag::handshake_23)) {
    why = "the peer does not speak handshake version 6 (OTP 23 or later)";
    return false;
  }
  if (them.flags & dflag::name_me) {
    why = "the peer asks to be named (DFLAG_NAME_ME), which Grove does not do";
    return false;
  }
  return true;
}

bool send_status(net::stream& s, std::string_view status, net::until u, std::string& why) {
  return write_message(s, "s" + std::string(status), u, why);
}

bool receive_alive_answer(net::stream& s, bool& go_on, net::until u, std::string& why) {
  std::string answer;
  if (!read_message(s, answer, u, why)) return false;
  if (answer != "strue" && answer != "sfalse") {
    why = "an answer to 'alive' that is neither true nor false";
    return false;
  }
  go_on = answer == "strue";
  return true;
}

bool complete_as_acceptor(net::stream& s, const identity& me, peer& them, net::until u, std::string& why) {
  const std::uint32_t ours = new_challenge();
  std::string challenge;
  challenge += 'N';
  put64(challenge, me.flags);
  put32(challenge, ours);
  put32(challenge, me.creation);
  put16(challenge, static_cast<std::uint16_t>(me.name.size()));
  challenge += me.name;
  if (!write_message(s, challenge, u, why)) return false;
  if (them.old_name_message) {
    std::string complement;  // 'c' FlagsHigh(4) Creation(4)
    if (!read_message(s, complement, u, why)) return false;
    if (complement[0] != 'c' || complement.size() != 9) {
      why = "a complement message that is not one";
      return false;
    }
    them.flags |= std::uint64_t{get32(complement, 1)} << 32;
    them.creation = get32(complement, 5);
  }
  if (!check_flags(them.flags, why)) return false;
  std::string reply;
  if (!read_message(s, reply, u, why)) return false;
  if (reply[0] != 'r' || reply.size() != 21) {
    why = "a challenge reply that is not one";
    return false;
  }
  unsigned char expected[16];
  challenge_digest(ours, me.cookie, expected);
  if (std::memcmp(reply.data() + 5, expected, 16) != 0) {
    why = "the peer's digest does not match our cookie: refused";
    return false;
  }
  unsigned char digest[16];
  challenge_digest(get32(reply, 1), me.cookie, digest);
  std::string ack;
  ack += 'a';
  ack.append(reinterpret_cast<const char*>(digest), 16);
  return write_message(s, ack, u, why);
}

}  // namespace grove::dist::internal
