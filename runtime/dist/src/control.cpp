// control.cpp: frames of control messages (control.hpp).
#include "control.hpp"

#include <fmt/format.h>

namespace grove::dist::internal {

namespace {
void finish(std::string& out, std::size_t start, std::size_t max_bytes) {
  const std::size_t n = out.size() - start - 4;
  if (n > max_bytes || n > UINT32_MAX) {
    out.resize(start);
    throw error(errc::bad_argument, fmt::format("a message of {} bytes, past max_frame_bytes ({})", n, max_bytes));
  }
  for (int i = 0; i < 4; ++i) out[start + static_cast<std::size_t>(i)] = static_cast<char>(n >> (24 - 8 * i));
}
}  // namespace

void append_frame(std::string& out, std::initializer_list<term> control, const term* payload, const codec_context& ctx,
                  std::size_t max_bytes) {
  const std::size_t start = out.size();
  try {
    out.append(4, '\0');
    out += static_cast<char>(version_magic);
    out += static_cast<char>(68);   // DIST_HEADER
    out += static_cast<char>(0);    // naming no atoms: the terms carry theirs
    out += static_cast<char>(104);  // SMALL_TUPLE_EXT: control tuples have a few elements
    out += static_cast<char>(control.size());
    for (const term& e : control) encode_term(out, e, ctx);
    if (payload) encode_term(out, *payload, ctx);
  } catch (...) {
    out.resize(start);
    throw;
  }
  finish(out, start, max_bytes);
}

std::string to_pass_through(std::string_view frames, const codec_context& ctx) {
  std::string out;
  std::size_t at = 0;
  while (frames.size() - at >= 4) {
    const auto* u = reinterpret_cast<const unsigned char*>(frames.data() + at);
    const std::size_t n = std::size_t{u[0]} << 24 | std::size_t{u[1]} << 16 | std::size_t{u[2]} << 8 | u[3];
    const std::string_view body = frames.substr(at + 4, n);
    at += 4 + n;
    if (n == 0) {  // a tick
      out.append(4, '\0');
      continue;
    }
    // 131 68 0, then the control term, then maybe the payload: where the control term ends is found
    // by reading it (this runs only for a peer without headers, and only on what it is sent).
    std::size_t pos = 3;
    (void)decode_term(body, pos, ctx);
    const std::size_t start = out.size();
    out.append(4, '\0');
    out += static_cast<char>(pass_through);
    out += static_cast<char>(version_magic);
    out.append(body.substr(3, pos - 3));
    if (pos < body.size()) {
      out += static_cast<char>(version_magic);
      out.append(body.substr(pos));
    }
    finish(out, start, UINT32_MAX);
  }
  return out;
}

std::string make_frame(const term& control, const term* payload, const codec_context& ctx, std::size_t max_bytes) {
  std::string out(4, '\0');
  out += static_cast<char>(pass_through);
  out += static_cast<char>(version_magic);
  encode_term(out, control, ctx);
  if (payload) {
    out += static_cast<char>(version_magic);
    encode_term(out, *payload, ctx);
  }
  finish(out, 0, max_bytes);
  return out;
}

namespace {

constexpr std::uint8_t dist_header = 68, dist_frag_header = 69;

[[noreturn]] void malformed(const std::string& what) { throw error(errc::bad_argument, what); }

// Reads a distribution header at bytes[pos] (after 131 68): the atoms it names, new entries stored
// in the cache. Advances pos past it.
std::size_t read_header(std::string_view bytes, std::size_t& pos, atom_cache& cache, std::array<grove::atom, 255>& refs) {
  const auto need = [&](std::size_t n) {
    if (n > bytes.size() - pos) malformed(fmt::format("a distribution header cut short at byte {}", pos));
  };
  need(1);
  const std::size_t n = static_cast<std::uint8_t>(bytes[pos++]);
  if (n == 0) return 0;
  const std::size_t flag_bytes = n / 2 + 1;
  need(flag_bytes);
  const std::string_view flags = bytes.substr(pos, flag_bytes);
  pos += flag_bytes;
  // Half a byte per reference, even ones in the low half; the half after the last holds LongAtoms.
  const auto half = [&](std::size_t i) { return (static_cast<std::uint8_t>(flags[i / 2]) >> ((i % 2) * 4)) & 0xF; };
  const bool long_atoms = half(n) & 0x1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned h = half(i);
    need(1);
    const std::size_t index = (h & 0x7) * 256 + static_cast<std::uint8_t>(bytes[pos++]);
    if (h & 0x8) {  // a new entry: its text follows
      need(long_atoms ? 2 : 1);
      std::size_t len = static_cast<std::uint8_t>(bytes[pos++]);
      if (long_atoms) len = len << 8 | static_cast<std::uint8_t>(bytes[pos++]);
      need(len);
      try {
        cache.atoms[index] = grove::atom(bytes.substr(pos, len));
      } catch (const error& e) {
        malformed(fmt::format("atom cache entry {}: {}", index, e.what()));
      }
      cache.set.set(index);
      pos += len;
    } else if (!cache.set.test(index)) {
      malformed(fmt::format("a reference to atom cache entry {}, never set", index));
    }
    refs[i] = cache.atoms[index];
  }
  return n;
}

}  // namespace

frame read_frame(std::string_view bytes, const codec_context& ctx, atom_cache* cache) {
  frame f;
  std::size_t pos = 1;
  std::array<grove::atom, 255> refs;
  atom_refs named;
  bool versioned = true;  // pass-through: each term has its version byte
  if (!bytes.empty() && static_cast<std::uint8_t>(bytes[0]) == pass_through) {
  } else if (bytes.size() >= 2 && static_cast<std::uint8_t>(bytes[0]) == version_magic &&
             static_cast<std::uint8_t>(bytes[1]) == dist_header && cache) {
    pos = 2;
    named = {refs.data(), read_header(bytes, pos, *cache, refs)};
    versioned = false;
  } else if (bytes.size() >= 2 && static_cast<std::uint8_t>(bytes[0]) == version_magic &&
             static_cast<std::uint8_t>(bytes[1]) == dist_frag_header) {
    malformed("a fragmented message (fragments were not agreed)");
  } else {
    malformed(fmt::format("a frame of type {} (pass-through, 112, {}was agreed)",
                          bytes.empty() ? -1 : static_cast<int>(static_cast<std::uint8_t>(bytes[0])),
                          cache ? "or a distribution header, 131 68, " : ""));
  }
  const auto next = [&](term& into) {
    if (versioned) {
      if (pos >= bytes.size() || static_cast<std::uint8_t>(bytes[pos]) != version_magic)
        malformed(fmt::format("a frame's term without its version byte at byte {}", pos));
      ++pos;
    }
    into = decode_term(bytes, pos, ctx, named);
  };
  next(f.control);
  if (!f.control.is_tuple() || f.control.size() == 0 || f.control[0].type() != term::kind::integer)
    malformed(fmt::format("a control message that is not a tagged tuple: {}", f.control.to_string(200)));
  if (pos < bytes.size()) {
    next(f.payload);
    f.has_payload = true;
  }
  if (pos != bytes.size()) malformed(fmt::format("{} bytes after a frame's terms", bytes.size() - pos));
  return f;
}

}  // namespace grove::dist::internal
