// grove/arena.hpp: the calling process's own heap.
//
// Each process may allocate from its arena, a std::pmr::memory_resource that belongs to it alone:
// pooled, unsynchronised (only the owner uses it), and released all at once when the process exits.
// Objects from it must not outlive the process or be used by other processes (send copies instead).
// With spawn_options::max_heap_bytes set, an allocation that would take the arena past the limit ends
// the process at once with exit_reason::max_heap_size (untrappable, like BEAM's max_heap_size kill),
// and links and monitors are told.
#pragma once

#include <cstddef>
#include <memory_resource>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// The calling process's arena (created on first use). Throws grove::error(errc::not_in_process)
// outside a process.
std::pmr::memory_resource& arena();
// Bytes the calling process's arena holds from the system (0 before first use).
std::size_t arena_bytes() noexcept;

}  // namespace grove

GROVE_PUBLIC_END
