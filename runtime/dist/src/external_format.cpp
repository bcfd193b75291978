// external_format.cpp: Erlang's external term format (OTP's erl_ext_dist), written and read here.
//
// ## Why our own codec, and libei as the oracle
// libei (erlang-dev) encodes and decodes the format too, but into its own C types, one call per
// value with a caller-sized buffer and type queries between; building grove::term through it would
// cost a pass over libei's types and a second over ours, and its decoder's handling of hostile input
// is not what a node facing a network should rely on unchecked. The format is small and fixed (20
// tags read, 13 written), so it is read here straight into terms, with every length checked against
// what is left before anything is allocated, and the tests check both directions against libei on
// the same terms (tests/dist/external_format_test.cpp) and feed the reader random and mutated input
// under AddressSanitizer and UBSan.
//
// ## Writing (what OTP 25 writes, so any peer from OTP 23 on reads it)
// integers: SMALL_INTEGER_EXT (0-255), INTEGER_EXT (int32), SMALL_BIG_EXT/LARGE_BIG_EXT; floats:
// NEW_FLOAT_EXT; atoms: SMALL_ATOM_UTF8_EXT/ATOM_UTF8_EXT; pids: NEW_PID_EXT; ports: NEW_PORT_EXT
// or V4_PORT_EXT; references: NEWER_REFERENCE_EXT; tuples: SMALL/LARGE_TUPLE_EXT; maps: MAP_EXT;
// lists: NIL_EXT, STRING_EXT (a proper list of 1 to 65,535 bytes, as OTP writes it) or LIST_EXT;
// binaries: BINARY_EXT, BIT_BINARY_EXT; funs: the encoding they arrived in.
//
// ## Reading (everything OTP 23+ may send, and the old forms a term_to_binary of old may hold)
// Also ATOM_EXT/SMALL_ATOM_EXT (Latin-1), PID_EXT, PORT_EXT, REFERENCE_EXT, NEW_REFERENCE_EXT,
// FLOAT_EXT, NEW_FUN_EXT, EXPORT_EXT, and ATOM_CACHE_REF inside a distribution header's frame
// (control.cpp reads the header). Refused with a reason: ATOM_CACHE_REF anywhere else, COMPRESSED, LOCAL_EXT, FUN_EXT (pre-R8), non-finite
// floats (Erlang refuses them too), truncated or trailing bytes, counts larger than the bytes left
// could hold, nesting past max_term_depth (each level is a frame of this recursive reader, and of
// term's destructor later: a process's stack is 256 KiB).
#include "external_format.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include <grove/introspection.hpp>
#include <grove/remote.hpp>

#include "term_block.hpp"
#include "utf8.hpp"

namespace grove::dist::internal {

namespace {

enum tag : std::uint8_t {
  new_float_ext = 70,
  bit_binary_ext = 77,
  compressed = 80,
  atom_cache_ref = 82,
  new_pid_ext = 88,
  new_port_ext = 89,
  newer_reference_ext = 90,
  small_integer_ext = 97,
  integer_ext = 98,
  float_ext = 99,
  atom_ext = 100,
  reference_ext = 101,
  port_ext = 102,
  pid_ext = 103,
  small_tuple_ext = 104,
  large_tuple_ext = 105,
  nil_ext = 106,
  string_ext = 107,
  list_ext = 108,
  binary_ext = 109,
  small_big_ext = 110,
  large_big_ext = 111,
  new_fun_ext = 112,
  export_ext = 113,
  new_reference_ext = 114,
  small_atom_ext = 115,
  map_ext = 116,
  fun_ext = 117,
  atom_utf8_ext = 118,
  small_atom_utf8_ext = 119,
  v4_port_ext = 120,
  local_ext = 121,
};

// ---- writing ----

void put8(std::string& out, std::uint8_t v) { out += static_cast<char>(v); }
void put16(std::string& out, std::uint16_t v) {
  const char b[2] = {static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 2);
}
void put32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, 4);
}
void put64(std::string& out, std::uint64_t v) {
  put32(out, static_cast<std::uint32_t>(v >> 32));
  put32(out, static_cast<std::uint32_t>(v));
}

void put_atom_text(std::string& out, std::string_view name) {
  if (name.size() <= 255) {
    put8(out, small_atom_utf8_ext);
    put8(out, static_cast<std::uint8_t>(name.size()));
  } else {
    put8(out, atom_utf8_ext);
    put16(out, static_cast<std::uint16_t>(name.size()));  // at most 255 characters: 1,020 bytes
  }
  out += name;
}

// A node's name: this node's for slot 0 (and for its own slot), else the table's. The table's names
// never change, so a per-thread copy of the last few is always right (and no park happens in here).
std::string_view node_text(std::uint32_t slot, const codec_context& ctx) {
  if (slot == 0 || slot == ctx.node_slot) return ctx.node_name;
  thread_local std::uint32_t cached_slot = 0;
  thread_local std::string cached_name;
  if (cached_slot != slot) {
    cached_name = remote::node_name(slot);
    cached_slot = slot;
  }
  return cached_name;
}

// An atom as an ATOM_CACHE_REF when the frame has a header to name it in (room for 255), else as text.
void put_atom(std::string& out, std::uint64_t key, std::string_view name, frame_atoms* refs) {
  if (refs) {
    std::size_t i = 0;
    while (i < refs->count && refs->keys[i] != key) ++i;
    if (i == refs->count && i < frame_atoms::capacity) {
      refs->keys[i] = key;
      // Atoms' names last forever; a node's (node_text's view) only until the next node's.
      refs->texts[i] = key & frame_atoms::node_key ? frame_atoms::text{nullptr, 0} : frame_atoms::text{name.data(), name.size()};
      refs->text_bytes += name.size();
      ++refs->count;
    }
    if (i < refs->count) {
      put8(out, atom_cache_ref);
      put8(out, static_cast<std::uint8_t>(i));
      return;
    }
  }
  put_atom_text(out, name);
}

void put_node(std::string& out, std::uint32_t slot, const codec_context& ctx, frame_atoms* refs) {
  if (slot == 0) slot = ctx.node_slot;
  // A node's text is fetched again when a header names it, so frame_atoms keeps its key and size.
  put_atom(out, frame_atoms::node_key | slot, node_text(slot, ctx), refs);
}

std::uint32_t checked_count(std::size_t n, const char* what) {
  if (n > UINT32_MAX) throw error(errc::bad_argument, fmt::format("term_to_binary: a {} of {} elements", what, n));
  return static_cast<std::uint32_t>(n);
}

void put_term(std::string& out, const term& t, const codec_context& ctx, frame_atoms* refs) {
  switch (t.type()) {
    case term::kind::integer: {
      const std::int64_t v = t.as_int();
      if (v >= 0 && v <= 255) {
        put8(out, small_integer_ext);
        put8(out, static_cast<std::uint8_t>(v));
      } else if (v >= INT32_MIN && v <= INT32_MAX) {
        put8(out, integer_ext);
        put32(out, static_cast<std::uint32_t>(static_cast<std::int32_t>(v)));
      } else {
        const std::uint64_t m = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
        std::uint8_t n = 0;
        for (std::uint64_t x = m; x; x >>= 8) ++n;
        put8(out, small_big_ext);
        put8(out, n);
        put8(out, v < 0 ? 1 : 0);
        for (std::uint8_t i = 0; i < n; ++i) put8(out, static_cast<std::uint8_t>(m >> (8 * i)));
      }
      return;
    }
    case term::kind::big_integer: {
      const std::vector<std::uint8_t> m = t.magnitude();
      if (m.size() <= 255) {
        put8(out, small_big_ext);
        put8(out, static_cast<std::uint8_t>(m.size()));
      } else {
        put8(out, large_big_ext);
        put32(out, checked_count(m.size(), "big integer"));
      }
      put8(out, t.is_negative() ? 1 : 0);
      out.append(reinterpret_cast<const char*>(m.data()), m.size());
      return;
    }
    case term::kind::floating:
      put8(out, new_float_ext);
      put64(out, std::bit_cast<std::uint64_t>(t.as_double()));
      return;
    case term::kind::atom: put_atom(out, t.as_atom().index(), t.as_atom().name(), refs); return;
    case term::kind::reference: {
      const reference& r = t.as_reference();
      put8(out, newer_reference_ext);
      put16(out, r.length);
      put_node(out, r.node, ctx, refs);
      put32(out, r.node == 0 ? ctx.creation : r.creation);
      for (std::uint8_t i = 0; i < r.length; ++i) put32(out, r.words[i]);
      return;
    }
    case term::kind::fun: {
      const auto e = t.fun_encoding();
      out.append(reinterpret_cast<const char*>(e.data()), e.size());
      return;
    }
    case term::kind::port: {
      const port& p = t.as_port();
      if (p.id > UINT32_MAX) {
        put8(out, v4_port_ext);
        put_node(out, p.node, ctx, refs);
        put64(out, p.id);
      } else {
        put8(out, new_port_ext);
        put_node(out, p.node, ctx, refs);
        put32(out, static_cast<std::uint32_t>(p.id));
      }
      put32(out, p.node == 0 ? ctx.creation : p.creation);
      return;
    }
    case term::kind::pid: {
      const pid p = t.as_pid();
      put8(out, new_pid_ext);
      put_node(out, p.node(), ctx, refs);
      put32(out, p.index());
      put32(out, p.serial());
      put32(out, p.is_remote() ? p.creation() : ctx.creation);
      return;
    }
    case term::kind::tuple: {
      const auto e = t.elements();
      if (e.size() <= 255) {
        put8(out, small_tuple_ext);
        put8(out, static_cast<std::uint8_t>(e.size()));
      } else {
        put8(out, large_tuple_ext);
        put32(out, checked_count(e.size(), "tuple"));
      }
      for (const term& x : e) put_term(out, x, ctx, refs);
      return;
    }
    case term::kind::map: {
      put8(out, map_ext);
      put32(out, checked_count(t.size(), "map"));
      for (const auto& [k, v] : t.entries()) {
        put_term(out, k, ctx, refs);
        put_term(out, v, ctx, refs);
      }
      return;
    }
    case term::kind::nil: put8(out, nil_ext); return;
    case term::kind::list: {
      const auto e = t.elements();
      bool bytes = t.tail().is_nil() && e.size() <= 65535;
      for (const term& x : e)
        if (x.type() != term::kind::integer || x.as_int() < 0 || x.as_int() > 255) {
          bytes = false;
          break;
        }
      if (bytes) {
        put8(out, string_ext);
        put16(out, static_cast<std::uint16_t>(e.size()));
        for (const term& x : e) put8(out, static_cast<std::uint8_t>(x.as_int()));
        return;
      }
      put8(out, list_ext);
      put32(out, checked_count(e.size(), "list"));
      for (const term& x : e) put_term(out, x, ctx, refs);
      put_term(out, t.tail(), ctx, refs);
      return;
    }
    case term::kind::binary: {
      const std::string_view b = t.as_binary();
      put8(out, binary_ext);
      put32(out, checked_count(b.size(), "binary"));
      out += b;
      return;
    }
    case term::kind::bitstring: {
      const std::string_view b = t.as_binary();
      put8(out, bit_binary_ext);
      put32(out, checked_count(b.size(), "bitstring"));
      put8(out, t.bits_in_last_byte());
      out += b;
      return;
    }
  }
}

// ---- reading ----

class reader {
 public:
  reader(std::string_view data, std::size_t pos, const codec_context& ctx, atom_refs refs)
      : data_(data), pos_(pos), ctx_(ctx), refs_(refs) {}
  std::size_t pos() const noexcept { return pos_; }

  // Each level of nesting is a call of this function and of one helper (tuple, list or map), so
  // they are kept lean: everything rare, or that formats text, is out of line (read_rare, the
  // failure paths). `objdump`-free check: external_format_test.cpp decodes max_term_depth levels
  // inside a Grove process (256 KiB of stack).
  term read_term(std::size_t depth) {
    if (depth > ctx_.max_depth) [[unlikely]]
      too_deep();
    const std::size_t at = pos_;
    const std::uint8_t t = u8();
    switch (t) {
      case small_integer_ext: return term(u8());
      case integer_ext: return term(static_cast<std::int32_t>(u32()));
      case small_atom_utf8_ext: return term(make_atom(bytes(u8()), at));
      case atom_cache_ref: return term(cached_atom(at));
      case small_tuple_ext: return tuple(u8(), depth);
      case nil_ext: return term();
      case list_ext: return list(depth, at);
      case map_ext: return map(depth, at);
      case binary_ext: return term::binary(bytes(u32()));
      case new_pid_ext: return read_pid(t, at);
      default: return read_rare(t, at, depth);
    }
  }

  [[noreturn]] void fail(const std::string& what, std::size_t at = SIZE_MAX) const {
    throw error(errc::bad_argument, fmt::format("binary_to_term: {} at byte {}", what, at == SIZE_MAX ? pos_ : at));
  }

 private:
  [[gnu::noinline, gnu::cold, noreturn]] void too_deep() const {
    fail(fmt::format("a term nested deeper than {} levels", ctx_.max_depth));
  }
  [[gnu::noinline, gnu::cold, noreturn]] void short_of(std::size_t n) const {
    fail(fmt::format("{} bytes wanted, {} left", n, data_.size() - pos_));
  }
  [[gnu::noinline, gnu::cold, noreturn]] void longer_than_left(const char* what, std::size_t at) const {
    fail(fmt::format("a {} longer than the {} bytes left", what, data_.size() - pos_), at);
  }

  [[gnu::noinline]] term read_pid(std::uint8_t t, std::size_t at) {
    const std::string_view node = node_name();
    const std::uint32_t id = u32(), serial = u32();
    const std::uint32_t creation = t == pid_ext ? u8() : u32();
    if (is_this_node(node, creation)) return term(pid::from_parts(id, serial));
    return term(pid::remote(slot_of(node, at), creation, id, serial));
  }

  // Tags seen less often, and those that take more room on the stack.
  [[gnu::noinline]] term read_rare(std::uint8_t t, std::size_t at, std::size_t depth) {
    switch (t) {
      case new_float_ext: return check_finite(std::bit_cast<double>(u64()), at);
      case float_ext: return old_float(at);
      case atom_ext: return term(make_atom(latin1(u16()), at));
      case small_atom_ext: return term(make_atom(latin1(u8()), at));
      case atom_utf8_ext: return term(make_atom(bytes(u16()), at));
      case pid_ext: return read_pid(t, at);
      case new_port_ext:
      case v4_port_ext:
      case port_ext: {
        const std::string_view node = node_name();
        port p;
        p.id = t == v4_port_ext ? u64() : u32();
        p.creation = t == port_ext ? u8() : u32();
        p.node = is_this_node(node, p.creation) ? 0 : slot_of(node, at);
        return term(p);
      }
      case newer_reference_ext:
      case new_reference_ext: {
        const std::uint16_t len = u16();
        if (len < 1 || len > 5) fail(fmt::format("a reference of {} words", len), at);
        const std::string_view node = node_name();
        reference r;
        r.creation = t == new_reference_ext ? u8() : u32();
        r.length = static_cast<std::uint8_t>(len);
        for (std::uint16_t i = 0; i < len; ++i) r.words[i] = u32();
        r.node = is_this_node(node, r.creation) ? 0 : slot_of(node, at);
        if (r.node == 0) r.creation = 0;
        return term(r);
      }
      case reference_ext: {
        const std::string_view node = node_name();
        reference r;
        r.length = 1;
        r.words[0] = u32();
        r.creation = u8();
        r.node = is_this_node(node, r.creation) ? 0 : slot_of(node, at);
        if (r.node == 0) r.creation = 0;
        return term(r);
      }
      case large_tuple_ext: return tuple(u32(), depth);
      case string_ext: {
        const std::string_view s = bytes(u16());
        std::vector<term> chars;
        chars.reserve(s.size());
        for (char c : s) chars.emplace_back(static_cast<unsigned char>(c));
        return term::list(std::move(chars));
      }
      case bit_binary_ext: {
        const std::uint32_t n = u32();
        const std::uint8_t bits = u8();
        const std::string_view b = bytes(n);
        if (n == 0 || bits < 1 || bits > 8) {
          if (n == 0 && bits == 0) return term::binary(std::string_view());  // <<>> as OTP may write it
          fail(fmt::format("a bitstring of {} bytes with {} bits in its last", n, bits), at);
        }
        return term::bitstring({reinterpret_cast<const std::uint8_t*>(b.data()), b.size()}, bits);
      }
      case small_big_ext: return big(u8(), at);
      case large_big_ext: return big(u32(), at);
      case new_fun_ext: return new_fun(at, depth);
      case export_ext: return export_fun(at, depth);
      case compressed: fail("a compressed term", at);
      case local_ext: fail("a LOCAL_EXT term", at);
      case fun_ext: fail("an old FUN_EXT fun", at);
      default: fail(fmt::format("unknown tag {}", t), at);
    }
  }

  [[gnu::noinline]] term list(std::size_t depth, std::size_t at) {
    const std::uint32_t n = u32();
    need(std::size_t{n} + 1, "list", at);
    if (n == 0) fail("a list of no elements", at);
    std::vector<term> elements;
    elements.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) elements.push_back(read_term(depth + 1));
    term tail = read_term(depth + 1);
    return term::list(std::move(elements), std::move(tail));
  }

  [[gnu::noinline]] term map(std::size_t depth, std::size_t at) {
    const std::uint32_t n = u32();
    need(std::size_t{n} * 2, "map", at);
    std::vector<std::pair<term, term>> entries;
    entries.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      term k = read_term(depth + 1);
      term v = read_term(depth + 1);
      entries.emplace_back(std::move(k), std::move(v));
    }
    return term::map(std::move(entries));
  }

  // A fun is kept as its encoding, written again here rather than copied: atoms that came as atom
  // cache references, and pids and references of this node, must mean the same wherever the fun
  // goes next (a copied ATOM_CACHE_REF would name another frame's atom).
  //   NEW_FUN_EXT: 112 Size(4) Arity(1) Uniq(16) Index(4) NumFree(4) Module OldIndex OldUniq Pid FreeVars...
  [[gnu::noinline]] term new_fun(std::size_t at, std::size_t depth) {
    const std::uint32_t size = u32();  // counts itself and what follows
    if (size < 29 || size - 4 > data_.size() - pos_) fail("a fun whose size does not fit", at);
    const std::size_t end = at + 1 + size;
    const std::uint8_t arity = u8();
    const std::string_view uniq = bytes(16);
    const std::uint32_t index = u32(), num_free = u32();
    need(num_free, "fun's free variables", at);
    term module = read_term(depth + 1);
    term old_index = read_term(depth + 1);
    term old_uniq = read_term(depth + 1);
    term creator = read_term(depth + 1);
    if (!module.is_atom() || !old_index.is_integer() || !old_uniq.is_integer() || !creator.is_pid())
      fail("a fun whose module, old index, old uniq or pid is not one", at);
    std::string out;
    out += static_cast<char>(new_fun_ext);
    put32(out, 0);  // the size, below
    put8(out, arity);
    out += uniq;
    put32(out, index);
    put32(out, num_free);
    for (const term* x : {&module, &old_index, &old_uniq, &creator}) put_term(out, *x, ctx_, nullptr);
    for (std::uint32_t i = 0; i < num_free; ++i) put_term(out, read_term(depth + 1), ctx_, nullptr);
    if (pos_ != end) fail("a fun whose size does not match its contents", at);
    const auto written = static_cast<std::uint32_t>(out.size() - 1);
    for (int i = 0; i < 4; ++i) out[1 + static_cast<std::size_t>(i)] = static_cast<char>(written >> (24 - 8 * i));
    return term::fun_from_encoding({reinterpret_cast<const std::uint8_t*>(out.data()), out.size()});
  }
  //   EXPORT_EXT: 113 Module Function Arity
  [[gnu::noinline]] term export_fun(std::size_t at, std::size_t depth) {
    term module = read_term(depth + 1);
    term function = read_term(depth + 1);
    term arity = read_term(depth + 1);
    if (!module.is_atom() || !function.is_atom() || arity.type() != term::kind::integer || arity.as_int() < 0 || arity.as_int() > 255)
      fail("an export fun whose module, function or arity is not one", at);
    std::string out;
    out += static_cast<char>(export_ext);
    for (const term* x : {&module, &function, &arity}) put_term(out, *x, ctx_, nullptr);
    return term::fun_from_encoding({reinterpret_cast<const std::uint8_t*>(out.data()), out.size()});
  }

  void need(std::size_t n, const char* what, std::size_t at) const {
    if (n > data_.size() - pos_) [[unlikely]]
      longer_than_left(what, at);
  }
  std::string_view bytes(std::size_t n) {
    if (n > data_.size() - pos_) [[unlikely]]
      short_of(n);
    std::string_view s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint8_t u8() { return static_cast<std::uint8_t>(bytes(1)[0]); }
  std::uint16_t u16() {
    const auto b = bytes(2);
    return static_cast<std::uint16_t>(static_cast<std::uint8_t>(b[0]) << 8 | static_cast<std::uint8_t>(b[1]));
  }
  std::uint32_t u32() {
    const auto b = bytes(4);
    std::uint32_t v = 0;
    for (char c : b) v = v << 8 | static_cast<std::uint8_t>(c);
    return v;
  }
  std::uint64_t u64() {
    const std::uint64_t hi = u32();
    return hi << 32 | u32();
  }

  term old_float(std::size_t at) {
    const std::string_view s = bytes(31);
    char buf[32];
    std::memcpy(buf, s.data(), 31);
    buf[31] = 0;
    char* end = nullptr;
    const double d = std::strtod(buf, &end);
    if (end == buf) fail("a FLOAT_EXT that is no number", at);
    return check_finite(d, at);
  }
  term check_finite(double d, std::size_t at) const {
    if (!std::isfinite(d)) fail("a float that is not finite", at);
    return term(d);
  }

  // Latin-1 text as UTF-8: a view of the input when it is all ASCII (the usual case), else a copy.
  std::string_view latin1(std::size_t n) {
    const std::string_view raw = bytes(n);
    bool ascii = true;
    for (char c : raw) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii) return raw;
    converted_.clear();
    for (char c : raw) append_code_point(converted_, static_cast<unsigned char>(c));
    return converted_;
  }
  // Atoms and node names repeat from frame to frame: a small per-thread cache of the last ones
  // seen saves the table's lock and hash (the cache holds names, which never change meaning; no park
  // happens while a term is read, so the thread's cache is this reader's for the whole read).
  struct name_cache {
    struct entry {
      std::string name;
      std::uint32_t value = 0;
      bool used = false;
    };
    std::array<entry, 64> entries;
    static std::size_t slot(std::string_view s) noexcept {
      std::uint64_t h = 1469598103934665603ull;  // FNV-1a
      for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
      return static_cast<std::size_t>(h & 63);
    }
  };
  grove::atom make_atom(std::string_view name, std::size_t at) const {
    thread_local name_cache cache;
    name_cache::entry& e = cache.entries[name_cache::slot(name)];
    if (e.used && e.name == name) return term_access::atom_at(e.value);
    try {
      const grove::atom a(name);
      e.name.assign(name);
      e.value = a.index();
      e.used = true;
      return a;
    } catch (const error& err) {
      fail(err.what(), at);
    }
  }
  // A node name where an atom is expected (pids, ports, references): kept out of the atom table.
  std::string_view node_name() {
    const std::size_t at = pos_;
    const std::uint8_t t = u8();
    std::string_view name;
    switch (t) {
      case atom_ext: name = latin1(u16()); break;
      case small_atom_ext: name = latin1(u8()); break;
      case atom_utf8_ext: name = bytes(u16()); break;
      case small_atom_utf8_ext: name = bytes(u8()); break;
      case atom_cache_ref: name = cached_atom(at).name(); break;
      default: fail(fmt::format("a node name of tag {}", t), at);
    }
    if (name.empty() || name.size() > 255 || code_points(name) < 0) fail("an invalid node name", at);
    return name;
  }
  grove::atom cached_atom(std::size_t at) {
    const std::uint8_t i = u8();
    if (i >= refs_.count)
      fail(refs_.count == 0 ? std::string("an atom cache reference outside a distribution header")
                            : fmt::format("atom cache reference {} of {}", i, refs_.count),
           at);
    return refs_.atoms[i];
  }
  bool is_this_node(std::string_view node, std::uint32_t creation) const noexcept {
    return creation == ctx_.creation && node == ctx_.node_name;
  }
  std::uint32_t slot_of(std::string_view node, std::size_t at) const {
    thread_local name_cache cache;  // as make_atom's: a node's slot never changes
    name_cache::entry& e = cache.entries[name_cache::slot(node)];
    if (e.used && e.name == node) return e.value;
    try {
      const std::uint32_t slot = remote::node_slot(node);
      e.name.assign(node);
      e.value = slot;
      e.used = true;
      return slot;
    } catch (const error& err) {
      fail(err.what(), at);
    }
  }
  [[gnu::noinline]] term tuple(std::uint32_t n, std::size_t depth) {
    const std::size_t at = pos_;
    need(n, "tuple", at);
    // Read straight into the tuple's block: the term owns the block from the start, so a throw half
    // way frees the elements read so far (the count says how many exist).
    auto* b = detail::allocate_block<detail::sequence_block>(std::size_t{n} * sizeof(term));
    term t = term_access::make(term::kind::tuple, b);
    for (std::uint32_t i = 0; i < n; ++i) {
      ::new (b->items() + i) term(read_term(depth + 1));
      b->count = i + 1;
    }
    return t;
  }
  term big(std::uint32_t n, std::size_t at) {
    const std::uint8_t sign = u8();
    if (sign > 1) fail(fmt::format("a big integer of sign {}", sign), at);
    const std::string_view m = bytes(n);
    return term::big_integer(sign == 1, {reinterpret_cast<const std::uint8_t*>(m.data()), m.size()});
  }

  std::string_view data_;
  std::size_t pos_;
  const codec_context& ctx_;
  atom_refs refs_;
  std::string converted_;  // latin1's output when it is not ASCII
};

}  // namespace

std::size_t depth_for_stack(std::size_t stack_bytes) noexcept {
  // What one level of nesting takes, at most, of a stack: reading it (read_term and a helper, 300-400
  // bytes at -O2 by -fstack-usage), and later printing, comparing or freeing the term; frames are
  // larger without optimisation and under AddressSanitizer. A quarter of the stack stays for the
  // process's own frames.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__OPTIMIZE__)
  constexpr std::size_t per_level = 2048;
#else
  constexpr std::size_t per_level = 512;
#endif
  return std::clamp<std::size_t>(stack_bytes * 3 / 4 / per_level, 8, max_term_depth);
}

codec_context current_codec_context() {
  codec_context ctx;
  try {
    ctx.node_name = remote::this_node();
    ctx.creation = remote::this_creation();
    ctx.max_depth = depth_for_stack(grove::system_info().stack_bytes);
  } catch (const error&) {
    // No runtime: nonode@nohost, creation 0, as a non-distributed Erlang node; a thread's stack.
  }
  ctx.node_slot = remote::node_slot(ctx.node_name);
  return ctx;
}

void encode_term(std::string& out, const term& t, const codec_context& ctx, frame_atoms* refs) { put_term(out, t, ctx, refs); }

term decode_term(std::string_view data, std::size_t& pos, const codec_context& ctx, atom_refs refs) {
  reader r(data, pos, ctx, refs);
  term t = r.read_term(0);
  pos = r.pos();
  return t;
}

}  // namespace grove::dist::internal

namespace grove {

std::string term_to_binary(const term& t) {
  const dist::internal::codec_context ctx = dist::internal::current_codec_context();
  std::string out;
  out += static_cast<char>(dist::internal::version_magic);
  dist::internal::encode_term(out, t, ctx);
  return out;
}

term binary_to_term(std::string_view bytes) {
  const dist::internal::codec_context ctx = dist::internal::current_codec_context();
  if (bytes.empty() || static_cast<std::uint8_t>(bytes[0]) != dist::internal::version_magic)
    throw error(errc::bad_argument, "binary_to_term: no version byte 131 at byte 0");
  std::size_t pos = 1;
  term t = dist::internal::decode_term(bytes, pos, ctx);
  if (pos != bytes.size()) throw error(errc::bad_argument, fmt::format("binary_to_term: {} bytes after the term", bytes.size() - pos));
  return t;
}

}  // namespace grove
