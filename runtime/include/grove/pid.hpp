// grove/pid.hpp: the process identifier, a value type.
//
// A pid names one process for ever: it packs the process's table index and a serial number that
// changes each time the table entry is reused, so the pid of a dead process stays dead even after
// its slot holds a new process. Cheap to copy (8 bytes), comparable, hashable, printable with fmt
// and iostreams as <0.INDEX.SERIAL> (Erlang's shape; node 0 is the local runtime).
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

  constexpr bool is_null() const noexcept { return bits_ == 0; }
  constexpr explicit operator bool() const noexcept { return bits_ != 0; }
  constexpr std::uint32_t index() const noexcept { return static_cast<std::uint32_t>(bits_); }
  constexpr std::uint32_t serial() const noexcept { return static_cast<std::uint32_t>(bits_ >> 32); }
  constexpr std::uint64_t bits() const noexcept { return bits_; }

  static constexpr pid from_bits(std::uint64_t bits) noexcept { return pid(bits); }
  static constexpr pid from_parts(std::uint32_t index, std::uint32_t serial) noexcept {
    return pid((std::uint64_t{serial} << 32) | index);
  }

  friend constexpr bool operator==(pid, pid) noexcept = default;
  friend constexpr auto operator<=>(pid, pid) noexcept = default;

 private:
  constexpr explicit pid(std::uint64_t bits) noexcept : bits_(bits) {}
  std::uint64_t bits_ = 0;  // serial << 32 | index; serial is never 0 for a real process
};

inline std::ostream& operator<<(std::ostream& os, pid p) {
  return os << "<0." << p.index() << '.' << p.serial() << '>';
}

}  // namespace grove

template <>
struct std::hash<grove::pid> {
  std::size_t operator()(grove::pid p) const noexcept {
    std::uint64_t x = p.bits() * 0x9E3779B97F4A7C15ull;  // Fibonacci hashing spreads index and serial
    return static_cast<std::size_t>(x ^ (x >> 32));
  }
};

template <>
struct fmt::formatter<grove::pid> : fmt::formatter<fmt::string_view> {
  template <class Ctx>
  auto format(grove::pid p, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), "<0.{}.{}>", p.index(), p.serial());
  }
};

GROVE_PUBLIC_END
