// arena.hpp: a process's own heap (grove/arena.hpp is the API).
//
// A std::pmr::unsynchronized_pool_resource (size-class pools, freed blocks reused) over an upstream
// that takes chunks from the system, counts them against the process's max_heap_bytes and returns
// them all when the process exits. Unsynchronised on purpose: only the owning process uses it, and a
// process runs on one worker at a time. Created on first use: most processes never pay for one.
#pragma once

#include <cstddef>
#include <memory_resource>

namespace grove::internal {

struct process;

class process_arena final : public std::pmr::memory_resource {
 public:
  process_arena(process* owner, std::size_t limit_bytes);
  ~process_arena() override;
  std::size_t bytes() const noexcept { return upstream_.held; }

 private:
  struct counting_upstream final : std::pmr::memory_resource {
    counting_upstream(process* o, std::size_t l) noexcept : owner(o), limit(l) {}  // before pool_ takes from it
    process* owner;
    std::size_t limit;      // 0: none
    std::size_t held = 0;   // bytes taken from the system
    void* do_allocate(std::size_t bytes, std::size_t align) override;
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override;
    void publish() noexcept;  // held, in KiB, into owner->arena_kib (process_summary::arena_bytes)
    bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
  };

  void* do_allocate(std::size_t bytes, std::size_t align) override { return pool_.allocate(bytes, align); }
  void do_deallocate(void* p, std::size_t bytes, std::size_t align) override { pool_.deallocate(p, bytes, align); }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  counting_upstream upstream_;
  std::pmr::unsynchronized_pool_resource pool_;
};

// Exit protocol: frees p's arena if it has one.
void destroy_arena(process* p) noexcept;

}  // namespace grove::internal
