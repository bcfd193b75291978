// memory.hpp: where Grove's own memory comes from.
//
// Two kinds: small heap blocks (messages, stack images, control-block extras) through
// allocate_bytes/free_bytes, so the allocator is chosen in one place (malloc today; under the
// sanitizers it must stay malloc so that ASan/LSan/TSan see every block); and large reserved regions
// (the process table, the execution stacks) straight from mmap. Page faults are the dominant cost of
// fresh memory on this project's machines (~12.9 µs per 4 KiB page, DESIGN-NOTES §1), so regions that
// fill densely ask for transparent huge pages (MADV_HUGEPAGE: ~0.5-1 GB/s instead of ~0.3 GB/s).
#pragma once

#include <cstddef>

namespace grove::internal {

void* allocate_bytes(std::size_t bytes);                 // throws std::bad_alloc
void free_bytes(void* p, std::size_t bytes) noexcept;    // p may be null

// Address space only (MAP_NORESERVE); pages cost memory when first touched. Throws std::bad_alloc.
void* reserve_region(std::size_t bytes, bool huge_pages);
void release_region(void* p, std::size_t bytes) noexcept;
// Makes [p, p+bytes) inaccessible (a guard page).
void protect_region(void* p, std::size_t bytes) noexcept;

std::size_t page_bytes() noexcept;

}  // namespace grove::internal
