// grove/pid.hpp: the process identifier, a value type.
//
// A pid names one process for ever, on this runtime or on another node of a cluster:
//   - a local pid packs the process's table index and a serial number that changes each time the
//     table entry is reused, so the pid of a dead process stays dead even after its slot holds a
//     new process;
//   - a remote pid (grove/remote.hpp) holds what the Erlang distribution protocol says of a process
//     elsewhere: its node (a slot in this program's node table, never 0), the node's creation (its
//     incarnation) and the process's ID and serial on that node, each 32 bits as OTP 24's
//     NEW_PID_EXT carries them. Nothing is interned per process, so a remote pid costs nothing to
//     keep and is exact however many processes the peer spawns.
// Cheap to copy (16 bytes, trivially copyable), comparable, hashable, printable with fmt and
// iostreams as Erlang prints pids: <0.INDEX.SERIAL> here, <NODE.ID.SERIAL> for a remote one.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

#include <fmt/core.h>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

class pid {
 public:
  constexpr pid() noexcept = default;  // the null pid: names no process; sends to it are dropped

  constexpr bool is_null() const noexcept { return bits_ == 0 && node_ == 0; }
  constexpr explicit operator bool() const noexcept { return !is_null(); }
  // Whether it names a process of another node (grove/remote.hpp routes what is sent to it).
  constexpr bool is_remote() const noexcept { return node_ != 0; }
  // Local: the process table index. Remote: the process's ID on its node.
  constexpr std::uint32_t index() const noexcept { return static_cast<std::uint32_t>(bits_); }
  constexpr std::uint32_t serial() const noexcept { return static_cast<std::uint32_t>(bits_ >> 32); }
  // 0 for a local pid; else the node's slot in the node table (grove/remote.hpp, remote::node_name).
  constexpr std::uint32_t node() const noexcept { return node_; }
  // A remote pid's node incarnation (0 for a local pid).
  constexpr std::uint32_t creation() const noexcept { return creation_; }
  // A local pid's whole identity in 64 bits (serial << 32 | index). For a remote pid, only its ID
  // and serial: node() and creation() complete it.
  constexpr std::uint64_t bits() const noexcept { return bits_; }

  // A local pid from bits() or from its parts.
  static constexpr pid from_bits(std::uint64_t bits) noexcept { return pid(bits, 0, 0); }
  static constexpr pid from_parts(std::uint32_t index, std::uint32_t serial) noexcept {
    return pid((std::uint64_t{serial} << 32) | index, 0, 0);
  }
  // A pid of another node: `node` is a slot of the node table (remote::node_slot; not 0).
  static constexpr pid remote(std::uint32_t node, std::uint32_t creation, std::uint32_t id, std::uint32_t serial) noexcept {
    return pid((std::uint64_t{serial} << 32) | id, node, creation);
  }

  friend constexpr bool operator==(pid, pid) noexcept = default;
  friend constexpr auto operator<=>(pid, pid) noexcept = default;

 private:
  constexpr pid(std::uint64_t bits, std::uint32_t node, std::uint32_t creation) noexcept
      : bits_(bits), node_(node), creation_(creation) {}
  std::uint64_t bits_ = 0;       // serial << 32 | index (or the remote ID); serial is never 0 for a local process
  std::uint32_t node_ = 0;       // 0: this runtime
  std::uint32_t creation_ = 0;   // remote: the node's incarnation
};

inline std::ostream& operator<<(std::ostream& os, pid p) {
  return os << '<' << p.node() << '.' << p.index() << '.' << p.serial() << '>';
}

}  // namespace grove

template <>
struct std::hash<grove::pid> {
  std::size_t operator()(grove::pid p) const noexcept {
    // Fibonacci hashing spreads index and serial; a remote pid's node and creation are mixed in.
    std::uint64_t x = (p.bits() ^ (std::uint64_t{p.node()} << 40 ^ p.creation())) * 0x9E3779B97F4A7C15ull;
    return static_cast<std::size_t>(x ^ (x >> 32));
  }
};

template <>
struct fmt::formatter<grove::pid> : fmt::formatter<fmt::string_view> {
  template <class Ctx>
  auto format(grove::pid p, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), "<{}.{}.{}>", p.node(), p.index(), p.serial());
  }
};

GROVE_PUBLIC_END
