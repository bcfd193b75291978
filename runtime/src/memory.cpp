// memory.cpp: see memory.hpp.
#include "memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>

#if GROVE_USE_MIMALLOC
#include <mimalloc.h>
#endif

namespace grove::internal {

#if GROVE_USE_MIMALLOC
namespace {
const bool mimalloc_configured = [] {
  mi_option_set(mi_option_large_os_pages, 1);
  return true;
}();
}  // namespace

void* allocate_bytes(std::size_t bytes) {
  (void)mimalloc_configured;
  void* p = mi_malloc(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void free_bytes(void* p, std::size_t) noexcept { mi_free(p); }
#else
void* allocate_bytes(std::size_t bytes) {
  void* p = std::malloc(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void free_bytes(void* p, std::size_t) noexcept { std::free(p); }
#endif

void* reserve_region(std::size_t bytes, bool huge_pages) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge_pages) ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure just means 4 KiB pages
#else
  (void)huge_pages;
#endif
  return p;
}

void release_region(void* p, std::size_t bytes) noexcept {
  if (p) ::munmap(p, bytes);
}

void protect_region(void* p, std::size_t bytes) noexcept { ::mprotect(p, bytes, PROT_NONE); }

std::size_t page_bytes() noexcept {
  static const std::size_t bytes = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return bytes;
}

}  // namespace grove::internal

namespace grove::detail {

// Message nodes come and go at the rate of messages (every send allocates one, every receive frees
// one), so small ones are recycled through a per-thread cache of free lists by size (16-byte
// classes up to 128 bytes) before reaching the allocator: mimalloc's malloc+free cost ~105 of the
// ~980 instructions of a ring hop (callgrind). A node freed on another thread than it was
// allocated on simply joins that thread's cache; each list is capped, the excess goes back to the
// allocator, and a thread's cache is returned when the thread ends. Safe in process context
// because nothing here can park (no thread-local address is kept across a switch). Off under the
// sanitizers, so that ASan sees every message's lifetime.
namespace {

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr std::size_t node_class_bytes = 16;
constexpr std::size_t node_classes = 8;         // 16 .. 128 bytes
constexpr std::uint32_t node_cache_max = 512;   // per class and thread

struct node_cache {
  struct free_node_link {
    free_node_link* next;
  };
  free_node_link* heads[node_classes] = {};
  std::uint32_t counts[node_classes] = {};

  ~node_cache() {
    for (auto* head : heads) {
      while (head) {
        free_node_link* next = head->next;
        internal::free_bytes(head, 0);
        head = next;
      }
    }
  }
};

thread_local node_cache t_nodes;

inline bool cached_size(std::size_t bytes, std::size_t align) {
  return bytes <= node_class_bytes * node_classes && align <= alignof(std::max_align_t);
}
inline std::size_t class_of(std::size_t bytes) { return (bytes + node_class_bytes - 1) / node_class_bytes - 1; }
#endif

}  // namespace

void* allocate_node(std::size_t bytes, std::size_t align) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  if (cached_size(bytes, align)) {
    std::size_t c = class_of(bytes);
    node_cache& cache = t_nodes;
    if (auto* n = cache.heads[c]) {
      cache.heads[c] = n->next;
      --cache.counts[c];
      return n;
    }
    return internal::allocate_bytes((c + 1) * node_class_bytes);
  }
#endif
  if (align <= alignof(std::max_align_t)) return internal::allocate_bytes(bytes);
  return ::operator new(bytes, std::align_val_t(align));
}

void free_node(void* p, std::size_t bytes, std::size_t align) noexcept {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  if (cached_size(bytes, align)) {
    std::size_t c = class_of(bytes);
    node_cache& cache = t_nodes;
    if (cache.counts[c] < node_cache_max) {
      auto* n = static_cast<node_cache::free_node_link*>(p);
      n->next = cache.heads[c];
      cache.heads[c] = n;
      ++cache.counts[c];
      return;
    }
  }
#endif
  if (align <= alignof(std::max_align_t)) return internal::free_bytes(p, bytes);
  ::operator delete(p, std::align_val_t(align));
}

}  // namespace grove::detail
