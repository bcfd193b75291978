// external_format.hpp: Erlang's external term format, both ways (design in external_format.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <grove/term.hpp>

namespace grove::dist::internal {

// What a pid, reference or port of this node is called on the wire.
struct codec_context {
  std::string node_name = "nonode@nohost";  // this node's name
  std::uint32_t node_slot = 0;              // remote::node_slot(node_name)
  std::uint32_t creation = 0;               // this node's creation
  std::size_t max_depth = max_term_depth;   // nesting read at most: depth_for_stack of the reader's stack
};

// The nesting a process with a stack of stack_bytes may read, print and free safely (at most
// max_term_depth). external_format.cpp has the figures.
std::size_t depth_for_stack(std::size_t stack_bytes) noexcept;

// This runtime's context (grove/remote.hpp's this_node, this_creation), or nonode@nohost and 0
// without a runtime.
codec_context current_codec_context();

inline constexpr std::uint8_t version_magic = 131;

// The atoms one frame's terms refer to by ATOM_CACHE_REF (ATOM_CACHE_REF i is entry i), for its
// distribution header (control.hpp, "sent_atom_cache"): an atom's key is its atom-table index, a
// node name's is node_key | its node-table slot; both name the same text for good.
struct frame_atoms {
  static constexpr std::size_t capacity = 255;  // what a header can name; later atoms go as text
  static constexpr std::uint64_t node_key = std::uint64_t{1} << 32;
  struct text {  // trivial, so that a frame_atoms costs nothing until used
    const char* data;
    std::size_t size;
  };
  std::array<std::uint64_t, capacity> keys;  // [0, count) set
  std::array<text, capacity> texts;          // an atom's name; empty for a node (fetched again)
  std::size_t count = 0;
  std::size_t text_bytes = 0;  // all their names together

  void clear() noexcept { count = text_bytes = 0; }

  // The largest a frame's length and distribution header naming these can be: 4 length bytes, 131
  // 68, the count, the flags, and per atom an index and a length of two bytes besides its text.
  std::size_t head_bytes_at_most() const noexcept { return 7 + (count / 2 + 1) + count * 3 + text_bytes; }
};

// Appends t's encoding, without the version byte. With `refs`, atoms (and node names in pids,
// references and ports) are written as ATOM_CACHE_REFs into it. Throws
// grove::error(errc::bad_argument) for a term the format cannot carry (a list, tuple or map of
// 2^32 elements or more).
void encode_term(std::string& out, const term& t, const codec_context& ctx, frame_atoms* refs = nullptr);

// The atoms a distribution header names (ATOM_CACHE_REF i in the frame's terms is atoms[i]).
struct atom_refs {
  const grove::atom* atoms = nullptr;
  std::size_t count = 0;
};

// Decodes one term that starts at data[pos] (no version byte), advancing pos past it. Throws
// grove::error(errc::bad_argument) naming what is wrong and its offset. ATOM_CACHE_REF is read
// through `refs` (refused without them).
term decode_term(std::string_view data, std::size_t& pos, const codec_context& ctx, atom_refs refs = {});

}  // namespace grove::dist::internal
