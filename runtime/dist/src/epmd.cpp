// epmd.cpp: a node's two EPMD requests (OTP's erl_dist_protocol, "EPMD Protocol").
//
// Registration: ALIVE2_REQ on a connection the node keeps open for as long as it is registered (EPMD
// forgets the name when it closes), answered by ALIVE2_X_RESP with the node's creation (32 bits).
// Lookup: PORT_PLEASE2_REQ on a connection of its own, answered by PORT2_RESP, after which EPMD
// closes. Every request is a 2-byte length and the request; every integer big-endian. Answers are
// read with fixed sizes and checked lengths, so a process that is not EPMD gets a clear error.
#include "epmd.hpp"

#include <fmt/format.h>

namespace grove::dist::internal {

namespace {

constexpr std::uint8_t alive2_req = 120, alive2_x_resp = 118, alive2_resp = 121;
constexpr std::uint8_t port_please2_req = 122, port2_resp = 119;
constexpr std::uint8_t node_type_normal = 77, node_type_hidden = 72, protocol_tcp = 0;

void put16(std::string& out, std::uint16_t v) {
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

std::uint16_t get16(const unsigned char* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }

std::error_code not_epmd() { return make_error_code(errc::bad_argument); }

}  // namespace

result<registration> register_node(const net::address& epmd, std::string_view alive, std::uint16_t port, bool hidden,
                                   net::until u) {
  auto s = net::stream::connect(epmd, u);
  if (!s) return s.error();
  std::string req;
  req += static_cast<char>(alive2_req);
  put16(req, port);
  req += static_cast<char>(hidden ? node_type_hidden : node_type_normal);
  req += static_cast<char>(protocol_tcp);
  put16(req, dist_version);  // highest
  put16(req, dist_version);  // lowest
  put16(req, static_cast<std::uint16_t>(alive.size()));
  req += alive;
  put16(req, 0);  // no extra
  std::string framed;
  put16(framed, static_cast<std::uint16_t>(req.size()));
  framed += req;
  if (auto e = s->write_all(framed, u)) return e;
  unsigned char head[2];
  if (auto e = s->read_exact(head, 2, u)) return e;
  if (head[0] == alive2_x_resp || head[0] == alive2_resp) {
    if (head[1] != 0) return make_error_code(errc::name_taken);
    unsigned char c[4];
    const std::size_t n = head[0] == alive2_x_resp ? 4 : 2;
    if (auto e = s->read_exact(c, n, u)) return e;
    registration r{std::move(*s), 0};
    r.creation = n == 4 ? (std::uint32_t{c[0]} << 24 | std::uint32_t{c[1]} << 16 | std::uint32_t{c[2]} << 8 | c[3]) : get16(c);
    return r;
  }
  return not_epmd();
}

result<std::uint16_t> port_of(const net::address& epmd, std::string_view alive, net::until u) {
  auto s = net::stream::connect(epmd, u);
  if (!s) return s.error();
  std::string framed;
  put16(framed, static_cast<std::uint16_t>(alive.size() + 1));
  framed += static_cast<char>(port_please2_req);
  framed += alive;
  if (auto e = s->write_all(framed, u)) return e;
  unsigned char head[2];
  if (auto e = s->read_exact(head, 2, u)) return e;
  if (head[0] != port2_resp) return not_epmd();
  if (head[1] != 0) return make_error_code(errc::no_such_name);
  // PortNo 2, NodeType 1, Protocol 1, HighestVersion 2, LowestVersion 2 (then the name and extra,
  // which are not needed).
  unsigned char rest[8];
  if (auto e = s->read_exact(rest, sizeof rest, u)) return e;
  const std::uint16_t highest = get16(rest + 4), lowest = get16(rest + 6);
  if (rest[3] != protocol_tcp || highest < dist_version || lowest > dist_version) return not_epmd();
  return get16(rest);
}

}  // namespace grove::dist::internal
