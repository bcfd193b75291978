// control.cpp: frames of control messages (control.hpp).
#include "control.hpp"

#include <bitset>
#include <forward_list>

#include <fmt/format.h>

#include <grove/remote.hpp>

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

void append_frame_body(std::string& out, std::initializer_list<term> control, const term* payload,
                       const codec_context& ctx, frame_atoms& refs, std::size_t max_bytes) {
  const std::size_t start = out.size();
  try {
    out += static_cast<char>(104);  // SMALL_TUPLE_EXT
    out += static_cast<char>(control.size());
    for (const term& e : control) encode_term(out, e, ctx, &refs);
    if (payload) encode_term(out, *payload, ctx, &refs);
  } catch (...) {
    out.resize(start);
    throw;
  }
  const std::size_t n = out.size() - start + refs.head_bytes_at_most() - 4;  // the frame's length leaves out its own 4
  if (n > max_bytes || n > UINT32_MAX) {
    out.resize(start);
    throw error(errc::bad_argument, fmt::format("a message of {} bytes, past max_frame_bytes ({})", n, max_bytes));
  }
}

namespace {
// An entry's home in the peer's cache: a mix of the key (atom indices are small and dense, node
// keys differ in their high half), so that the atoms of one message spread over the segments.
std::size_t home_of(std::uint64_t key) {
  key ^= key >> 29;
  key *= 0xbf58476d1ce4e5b9ull;
  key ^= key >> 32;
  return static_cast<std::size_t>(key) & 2047;
}
constexpr std::size_t probe_places = 4;
}  // namespace

void append_frame_head(std::string& out, const frame_atoms& refs, std::size_t body_bytes, sent_atom_cache& cache,
                       const codec_context& ctx) {
  // Where each reference goes, and whether it sets its entry; the cache changes only once the head
  // is written whole (a throw leaves it as the peer knows it). The calling thread's (5 KB: a
  // sender's stack may be 16 KiB in all, as in node_state::transmit); this runs under the
  // connection's lock and never parks, so they are this call's.
  struct scratch {
    std::array<std::uint16_t, frame_atoms::capacity> entry;
    std::bitset<frame_atoms::capacity> fresh;
    std::bitset<2048> claimed;
    std::array<frame_atoms::text, frame_atoms::capacity> text;  // of the new entries (trivial: left unset)
  };
  thread_local scratch work;
  work.fresh.reset();
  work.claimed.reset();
  auto& entry = work.entry;
  auto& fresh = work.fresh;
  auto& claimed = work.claimed;
  auto& text = work.text;
  std::forward_list<std::string> node_texts;  // the names of other nodes this frame sets entries for (rare)
  bool long_atoms = false;
  for (std::size_t i = 0; i < refs.count; ++i) {
    const std::uint64_t key = refs.keys[i];
    const std::size_t home = home_of(key);
    std::size_t at = 2048;
    for (std::size_t k = 0; k < probe_places && at == 2048; ++k) {
      const std::size_t e = (home + k) & 2047;
      // The peer has it, unless an earlier reference of this frame takes that entry for another atom.
      if (cache.keys[e] == key + 1 && !claimed.test(e)) at = e;
    }
    if (at == 2048) {
      fresh.set(i);
      for (std::size_t k = 0; k < probe_places && at == 2048; ++k) {  // a never-set place first
        const std::size_t e = (home + k) & 2047;
        if (!claimed.test(e) && cache.keys[e] == 0) at = e;
      }
      for (std::size_t k = 0; at == 2048; ++k) {  // else the first this frame leaves (255 refs never claim all 2,048)
        const std::size_t e = (home + k) & 2047;
        if (!claimed.test(e)) at = e;
      }
      if (key & frame_atoms::node_key) {
        const auto slot = static_cast<std::uint32_t>(key);
        const std::string& name = slot == ctx.node_slot ? ctx.node_name : node_texts.emplace_front(remote::node_name(slot));
        text[i] = {name.data(), name.size()};
      } else {
        text[i] = refs.texts[i];
      }
      if (text[i].size > 255) long_atoms = true;
    }
    claimed.set(at);
    entry[i] = static_cast<std::uint16_t>(at);
  }
  const std::size_t start = out.size();
  try {
    out.append(4, '\0');
    out += static_cast<char>(version_magic);
    out += static_cast<char>(68);  // DIST_HEADER
    out += static_cast<char>(refs.count);
    if (refs.count > 0) {
      // Half a byte per reference (even ones in the low half): new-entry bit and segment; the half
      // after the last holds LongAtoms.
      const std::size_t flags_at = out.size();
      out.append(refs.count / 2 + 1, '\0');
      const auto set_half = [&](std::size_t i, unsigned v) {
        out[flags_at + i / 2] = static_cast<char>(static_cast<std::uint8_t>(out[flags_at + i / 2]) | (v << ((i % 2) * 4)));
      };
      for (std::size_t i = 0; i < refs.count; ++i) set_half(i, (fresh.test(i) ? 0x8u : 0u) | (entry[i] >> 8));
      if (long_atoms) set_half(refs.count, 0x1);
      for (std::size_t i = 0; i < refs.count; ++i) {
        out += static_cast<char>(entry[i] & 0xFF);
        if (!fresh.test(i)) continue;
        if (long_atoms) out += static_cast<char>(text[i].size >> 8);
        out += static_cast<char>(text[i].size);
        out.append(text[i].data, text[i].size);
      }
    }
  } catch (...) {
    out.resize(start);
    throw;
  }
  const std::size_t n = out.size() - start - 4 + body_bytes;
  for (int i = 0; i < 4; ++i) out[start + static_cast<std::size_t>(i)] = static_cast<char>(n >> (24 - 8 * i));
  for (std::size_t i = 0; i < refs.count; ++i)
    if (fresh.test(i)) cache.keys[entry[i]] = refs.keys[i] + 1;
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
