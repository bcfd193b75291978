// resources.hpp: counts of what Grove holds, for resources_in_use() (the tests' leak check); PCBs
// are counted by their tables (process_table::processes_in_use).
// Process-wide (not per runtime), relaxed: they are statistics, read when nothing else runs.
//
// Each count is striped: a thread adds to the stripe its thread was given, on a cache line of its
// own, and a reader sums the stripes. A single shared atomic was a cross-core miss at every count
// when two workers count at once: spawning a million sleepers on 2 workers counts a stack image for
// each, and that one `lock add` on a line the other worker had just written took ~4% of the run
// (perf annotate of `build/release/bench/grove/spawn --n 1000000`; bench/RESULTS.md, "spawn").
// Any stripe gives the right sum, so a thread whose stripe is stale (a process that moved to another
// worker) counts correctly, only on a line it may share. The sum is exact when nothing counts
// meanwhile (the leak check's moment: after a stop); read while others count, it may be off by the
// counts in flight, and it is never reported below 0 (as messages_in_use).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace grove::internal {

// The stripe of the calling thread (introspection.cpp): threads take stripes in turn.
unsigned this_thread_stripe() noexcept;

class striped_count {
 public:
  static constexpr unsigned stripes = 16;
  void add(std::int64_t d) noexcept { stripes_[this_thread_stripe() % stripes].n.fetch_add(d, std::memory_order_relaxed); }  // statistics
  // The sum; never below 0 (a stripe alone may be: one thread counts up, another down).
  std::size_t load() const noexcept {
    std::int64_t sum = 0;
    for (const stripe& s : stripes_) sum += s.n.load(std::memory_order_relaxed);  // statistics
    return sum > 0 ? static_cast<std::size_t>(sum) : 0;
  }

 private:
  struct alignas(128) stripe {  // 128: Intel's adjacent-line prefetch pairs 64-byte lines
    std::atomic<std::int64_t> n{0};
  };
  stripe stripes_[stripes];
};

struct resource_counters {
  striped_count stack_images;  // stack image buffers
  striped_count arenas;
  striped_count timers;        // pending send_after timers
  striped_count fds;           // sockets grove::net holds open
};

resource_counters& resources() noexcept;
// Message and signal nodes allocated and not yet freed, over all threads (memory.cpp).
std::size_t messages_in_use() noexcept;

inline void count_up(striped_count& c) noexcept { c.add(1); }
inline void count_down(striped_count& c) noexcept { c.add(-1); }

}  // namespace grove::internal
