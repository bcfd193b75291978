// image_pool.cpp: see image_pool.hpp.
#include "image_pool.hpp"

#include <cstdlib>
#include <new>

#include "memory.hpp"

namespace grove::internal {

namespace {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool pooled = false;
#else
constexpr bool pooled = true;
#endif
}  // namespace

image_pool::image_pool(unsigned workers) : lists_(workers ? workers : 1) {}

image_pool::~image_pool() {
  for (void* c : chunks_) release_region(c, chunk_bytes);
}

char* image_pool::take_chunk() {
  void* c = reserve_region(chunk_bytes, true);  // throws std::bad_alloc
  std::lock_guard<std::mutex> g(chunks_lock_);
  try {
    chunks_.push_back(c);
  } catch (...) {
    release_region(c, chunk_bytes);
    throw;
  }
  return static_cast<char*>(c);
}

void* image_pool::allocate(unsigned worker, std::size_t bytes) {
  if (!pooled || bytes > max_pooled_bytes) return allocate_bytes(bytes);
  worker_lists& w = lists_[worker];
  free_block*& head = w.heads[bytes / granule - 1];
  if (free_block* b = head) {
    head = b->next;
    return b;
  }
  if (static_cast<std::size_t>(w.bump_end - w.bump) < bytes) {
    // The rest of the old chunk (less than one image) is left unused.
    w.bump = take_chunk();
    w.bump_end = w.bump + chunk_bytes;
  }
  void* p = w.bump;
  w.bump += bytes;
  return p;
}

void image_pool::free(unsigned worker, void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (!pooled || bytes > max_pooled_bytes) return free_bytes(p, bytes);
  free_block*& head = lists_[worker].heads[bytes / granule - 1];
  auto* b = static_cast<free_block*>(p);
  b->next = head;
  head = b;
}

}  // namespace grove::internal
