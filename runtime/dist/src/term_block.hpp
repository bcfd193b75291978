// term_block.hpp: the shared, counted blocks behind compound terms (grove/term.hpp).
//
// One allocation per block, header and contents together: a tuple of n elements is the header and n
// terms; a binary the header and its bytes. A block is immutable once its term is made, so any
// number of threads may read it; the count is the only thing written after.
//   refs: relaxed increments (a copy is made from a term someone already holds), acq_rel on the
//   decrement that may be the last (the last owner must see every other owner's reads done before it
//   frees, as std::shared_ptr does).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

#include <grove/term.hpp>

namespace grove::detail {

struct term_block {
  std::atomic<std::uint32_t> refs{1};
};

// Tuples and lists: `count` elements after the header; a list's tail (nil for a proper list).
struct sequence_block : term_block {
  std::uint32_t count = 0;
  term tail;
  term* items() noexcept { return reinterpret_cast<term*>(this + 1); }
  const term* items() const noexcept { return reinterpret_cast<const term*>(this + 1); }
};

// Maps: `count` key-value pairs after the header, sorted by key.
struct map_block : term_block {
  std::uint32_t count = 0;
  using entry = std::pair<term, term>;
  entry* items() noexcept { return reinterpret_cast<entry*>(this + 1); }
  const entry* items() const noexcept { return reinterpret_cast<const entry*>(this + 1); }
};

// Binaries, bitstrings, funs (their encoding) and big integers (little-endian magnitude): `count`
// bytes after the header.
struct bytes_block : term_block {
  std::uint32_t count = 0;
  std::uint8_t bits_in_last = 8;  // bitstrings: 1-8
  bool negative = false;          // big integers
  std::uint8_t* data() noexcept { return reinterpret_cast<std::uint8_t*>(this + 1); }
  const std::uint8_t* data() const noexcept { return reinterpret_cast<const std::uint8_t*>(this + 1); }
};

struct reference_block : term_block {
  grove::reference value;
};

static_assert(sizeof(sequence_block) % alignof(term) == 0);
static_assert(sizeof(map_block) % alignof(map_block::entry) == 0);

// Allocates a block of type B with room for `extra` bytes after it; the header is constructed.
template <class B>
B* allocate_block(std::size_t extra) {
  void* mem = ::operator new(sizeof(B) + extra);
  return ::new (mem) B();
}
template <class B>
void free_block(B* b) noexcept {
  b->~B();
  ::operator delete(static_cast<void*>(b));
}

}  // namespace grove::detail

namespace grove::dist::internal {
// Makes terms from blocks filled in place (external_format.cpp's reader).
struct term_access {
  static term make(term::kind k, detail::term_block* b) noexcept { return term(k, b); }
  static grove::atom atom_at(std::uint32_t index) noexcept {  // an index the table has handed out
    grove::atom a;
    a.index_ = index;
    return a;
  }
};
}  // namespace grove::dist::internal
