// resources.hpp: counts of what Grove holds, for resources_in_use() (the tests' leak check); PCBs
// are counted by their tables (process_table::processes_in_use).
// Process-wide (not per runtime), relaxed: they are statistics, read when nothing else runs.
#pragma once

#include <atomic>
#include <cstddef>

namespace grove::internal {

struct resource_counters {
  std::atomic<std::size_t> stack_images{0};  // stack image buffers
  std::atomic<std::size_t> arenas{0};
  std::atomic<std::size_t> timers{0};        // pending send_after timers
  std::atomic<std::size_t> fds{0};           // sockets grove::net holds open
};

resource_counters& resources() noexcept;
// Message and signal nodes allocated and not yet freed, over all threads (memory.cpp).
std::size_t messages_in_use() noexcept;

inline void count_up(std::atomic<std::size_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }  // statistics
inline void count_down(std::atomic<std::size_t>& c) noexcept { c.fetch_sub(1, std::memory_order_relaxed); }  // statistics

}  // namespace grove::internal
