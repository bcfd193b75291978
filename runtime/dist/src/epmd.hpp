// epmd.hpp: the Erlang Port Mapper Daemon's protocol, the two requests a node needs (design in epmd.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <grove/errc.hpp>
#include <grove/net.hpp>

namespace grove::dist::internal {

inline constexpr std::uint16_t dist_version = 6;  // OTP 23's handshake; OTP 25 speaks nothing older

struct registration {
  net::stream connection;   // kept open while registered: closing it unregisters the name
  std::uint32_t creation = 0;
};

// ALIVE2_REQ to the EPMD at `epmd`: registers `alive` (the name before '@') as listening on `port`.
// Fails with errc::name_taken if EPMD already has the name, a socket error if EPMD cannot be reached,
// errc::bad_argument for an answer that is not EPMD's.
result<registration> register_node(const net::address& epmd, std::string_view alive, std::uint16_t port, bool hidden,
                                   net::until u);

// PORT_PLEASE2_REQ: the port `alive` listens on, on the host whose EPMD is `epmd`. Fails with
// errc::no_such_name if that EPMD does not know the name, errc::bad_argument if the node does not
// speak distribution version 6.
result<std::uint16_t> port_of(const net::address& epmd, std::string_view alive, net::until u);

}  // namespace grove::dist::internal
