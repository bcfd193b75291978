// image_pool.hpp: the memory of parked processes' stack images (stack_slots.hpp copies them out).
//
// A million sleeping processes are a million small images (~270 bytes for one in sleep_for), made
// and freed at the rate of spawns and evictions. Page faults dominate the cost of fresh memory on
// this project's machines (~2.7-13 µs per 4 KiB page, runtime/DESIGN.md §1), so images are carved
// from 2 MiB chunks the kernel may back with one transparent huge page (MADV_HUGEPAGE): one fault per
// 2 MiB instead of 512.
//
// Design:
//   - Size classes of `granule` (16) bytes up to max_pooled_bytes (4 KiB); a larger image comes
//     from malloc (a process parked 4 KiB deep is rare). 16, not 64: images of one park site all
//     have one size, so a class per 16 bytes wastes at most 15 bytes each (64-byte classes cost a
//     sleeper 46 bytes more: `build/release/bench/grove/spawn --n 1000000`, bytes_per_process 652
//     -> 606), and 256 list heads per worker are 2 KiB.
//   - Per worker: a free list per class and the unused tail of its current chunk. Only that worker's
//     thread touches them (an image is allocated and freed by a worker holding the process's stack
//     slot), so there are no atomics and no locks; an image freed by another worker than the one
//     that made it joins the freeing worker's lists.
//   - Chunks are taken under one mutex (once per 2 MiB) and all returned when the runtime's
//     stack_slots go away: freed images are kept for reuse by later processes of the same runtime.
//   - Under the sanitizers every image comes from malloc, so ASan and TSan see each one's lifetime.
// Rejected: mimalloc (Debian's libmimalloc replaces malloc for the whole program when linked, which a
// library must not do to its host); glibc malloc alone (4 KiB faults: bench/RESULTS.md has the
// figures); one shared free list per class (a lock or a CAS on every park that evicts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace grove::internal {

class image_pool {
 public:
  static constexpr std::size_t granule = 16;            // images are allocated in multiples of this
  static constexpr std::size_t max_pooled_bytes = 4096;  // larger ones come from malloc
  static constexpr std::size_t chunk_bytes = 2 * 1024 * 1024;

  explicit image_pool(unsigned workers);
  ~image_pool();
  image_pool(const image_pool&) = delete;
  image_pool& operator=(const image_pool&) = delete;

  // Rounds a request up to what allocate() gives.
  static std::size_t capacity_for(std::size_t bytes) noexcept { return (bytes + granule - 1) / granule * granule; }
  // Worker `worker`'s thread only. bytes must be capacity_for(bytes). Throws std::bad_alloc.
  void* allocate(unsigned worker, std::size_t bytes);
  void free(unsigned worker, void* p, std::size_t bytes) noexcept;

 private:
  static constexpr std::size_t classes = max_pooled_bytes / granule;
  struct free_block {
    free_block* next;
  };
  struct alignas(64) worker_lists {  // owner: that worker's thread
    free_block* heads[classes] = {};
    char* bump = nullptr;  // the unused tail of its current chunk
    char* bump_end = nullptr;
  };
  char* take_chunk();

  std::vector<worker_lists> lists_;
  std::mutex chunks_lock_;
  std::vector<void*> chunks_;  // guarded by chunks_lock_
};

}  // namespace grove::internal
