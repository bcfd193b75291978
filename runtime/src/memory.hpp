// memory.hpp: where Grove's own memory comes from.
//
// Two kinds: small heap blocks (messages, control-block extras, large stack images) through
// allocate_bytes/free_bytes, which are the program's malloc and free: Grove never replaces its host's
// allocator, and a failed allocation is a std::bad_alloc; and reserved regions (the process table,
// the execution stacks, the chunks of image_pool.hpp) straight from mmap. Page faults are the
// dominant cost of fresh memory on this project's machines (~2.7-13 µs per 4 KiB page,
// runtime/DESIGN.md §1), so regions that fill densely ask for transparent huge pages (MADV_HUGEPAGE,
// 2 MiB-aligned: ~0.5-1 GB/s instead of ~0.3 GB/s). Message nodes are recycled per thread on top of
// malloc (memory.cpp).
#pragma once

#include <cstddef>

namespace grove::internal {

void* allocate_bytes(std::size_t bytes);                 // throws std::bad_alloc
void free_bytes(void* p, std::size_t bytes) noexcept;    // p may be null

// Address space only (MAP_NORESERVE); pages cost memory when first touched. With huge_pages, 2 MiB
// aligned and advised MADV_HUGEPAGE. Throws std::bad_alloc (mmap failed: e.g. an address-space limit).
void* reserve_region(std::size_t bytes, bool huge_pages);
void release_region(void* p, std::size_t bytes) noexcept;
// Makes [p, p+bytes) inaccessible (a guard page).
void protect_region(void* p, std::size_t bytes) noexcept;

std::size_t page_bytes() noexcept;

}  // namespace grove::internal
