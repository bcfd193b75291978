// memory.cpp: see memory.hpp.
#include "memory.hpp"

#include <grove/detail/message_node.hpp>  // declares allocate_node and free_node: their visibility

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "resources.hpp"

namespace grove::internal {

void* allocate_bytes(std::size_t bytes) {
  void* p = std::malloc(bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void free_bytes(void* p, std::size_t) noexcept { std::free(p); }

void* reserve_region(std::size_t bytes, bool huge_pages) {
  // A transparent huge page needs a 2 MiB-aligned 2 MiB range inside the mapping: reserve 2 MiB more
  // and trim, so a 2 MiB region can be one huge page.
  constexpr std::size_t huge = 2 * 1024 * 1024;
  const std::size_t extra = huge_pages ? huge : 0;
  void* m = ::mmap(nullptr, bytes + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  char* p = static_cast<char*>(m);
  if (extra) {
    char* aligned = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1));
    if (aligned > p) ::munmap(p, static_cast<std::size_t>(aligned - p));
    if (std::size_t tail = static_cast<std::size_t>(p + bytes + extra - (aligned + bytes))) ::munmap(aligned + bytes, tail);
    p = aligned;
#ifdef MADV_HUGEPAGE
    ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure just means 4 KiB pages
#endif
  }
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
// one), so small ones (16-byte classes up to 128 bytes) never reach malloc:
//   - Fresh nodes are carved from 2 MiB chunks that the kernel may back with a transparent huge page
//     (reserve_region): a message peak (fan_in: 16 senders outpace one receiver, millions queue up)
//     faults one 2 MiB page instead of 512 small ones. Measured with bench/grove/fan_in (2 workers,
//     interleaved runs, medians of 10): glibc malloc for nodes ran at 0.86x the previous allocator
//     (mimalloc with large OS pages), chunks at 0.97x.
//   - Free nodes are recycled through magazines (Bonwick's): per thread and class, a loaded and a
//     spare magazine of up to magazine_nodes nodes. A free pushes on the loaded one; a full loaded
//     magazine becomes the spare, and a full spare goes to the depot, a mutex-guarded stack of
//     magazines per class shared by all threads. An allocation pops from the loaded magazine, else
//     swaps in the spare, else takes a magazine from the depot, else carves. So nodes one thread
//     frees for others (a receiver of many senders) flow back to the senders a magazine at a time,
//     one lock per magazine_nodes messages. A thread that ends gives its magazines to the depot and
//     the unused rest of its slab to the next thread.
//   - Node memory is kept for reuse for the life of the program: a peak of N messages in flight
//     keeps N nodes' worth (N × 32-64 bytes for most messages) after the peak has passed, as the PCB
//     table keeps its pages. Larger or over-aligned nodes come from malloc / operator new.
// Safe in process context because nothing here can park (no thread-local address is kept across a
// switch). Off under the sanitizers (every node from malloc), so that ASan sees each lifetime.
//
// Each thread also counts the nodes it allocates minus those it frees, for resources_in_use():
// a relaxed load and store on its own cache line per node (no read-modify-write, nothing shared).
// A node freed on another thread makes both counts wrong by one and their sum right; the sum over
// the live threads plus what ended threads left (retired) is the number of nodes in use.
namespace {

constexpr std::size_t node_class_bytes = 16;
constexpr std::size_t node_classes = 8;             // 16 .. 128 bytes
constexpr std::uint32_t magazine_nodes = 256;       // nodes per magazine
constexpr std::size_t node_chunk_bytes = 2 << 20;   // from the system at once
constexpr std::size_t node_slab_bytes = 64 << 10;   // from a chunk to a thread at once
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr bool node_pool = true;
#else
constexpr bool node_pool = false;
#endif

struct free_node_link {
  free_node_link* next;
};

struct magazine {
  free_node_link* head = nullptr;
  std::uint32_t count = 0;
  void push(void* p) noexcept {
    auto* n = static_cast<free_node_link*>(p);
    n->next = head;
    head = n;
    ++count;
  }
  void* pop() noexcept {
    free_node_link* n = head;
    head = n->next;
    --count;
    return n;
  }
};

struct slab {
  char* next = nullptr;
  char* end = nullptr;
};

struct node_cache;
struct node_registry {
  std::mutex lock;
  node_cache* threads = nullptr;  // guarded by lock: every live thread's cache
  std::int64_t retired = 0;       // guarded by lock: what ended threads counted
  slab chunk;                     // guarded by lock: the rest of the newest chunk
  std::vector<slab> leftovers;    // guarded by lock: what ended threads did not use of their slabs
  struct alignas(64) depot {
    std::atomic<std::size_t> size{0};  // shared: mags.size(), read without the lock as a hint
    std::mutex lock;
    std::vector<magazine> mags;        // guarded by lock
  } depots[node_classes];

  slab take_slab() {
    std::lock_guard<std::mutex> g(lock);
    if (!leftovers.empty()) {
      slab s = leftovers.back();
      leftovers.pop_back();
      return s;
    }
    if (static_cast<std::size_t>(chunk.end - chunk.next) < node_slab_bytes) {
      chunk.next = static_cast<char*>(internal::reserve_region(node_chunk_bytes, true));  // throws std::bad_alloc
      chunk.end = chunk.next + node_chunk_bytes;
    }
    slab s{chunk.next, chunk.next + node_slab_bytes};
    chunk.next += node_slab_bytes;
    return s;
  }
};
node_registry& registry() {
  static node_registry* r = new node_registry();  // never destroyed: threads may end after static destruction
  return *r;
}

void leave(void* cache) noexcept;

// Trivially constructed and destroyed, so the thread_local needs no guard on its hot path; a thread
// joins the registry on its first node and leaves through a pthread key's destructor when it ends.
struct alignas(64) node_cache {
  magazine loaded[node_classes];
  magazine spare[node_classes];
  slab fresh;                           // owner: where this thread carves new nodes
  std::atomic<std::int64_t> in_use{0};  // shared: written by this thread only (relaxed), summed by resources_in_use
  bool enrolled = false;                // owner: in the registry's list
  node_cache* prev = nullptr;           // guarded by the registry's lock
  node_cache* next = nullptr;

  void enroll() {
    node_registry& r = registry();
    static pthread_key_t key = [] {
      pthread_key_t k{};
      if (pthread_key_create(&k, &leave) != 0) throw std::bad_alloc();
      return k;
    }();
    std::lock_guard<std::mutex> g(r.lock);
    if (pthread_setspecific(key, this) != 0) throw std::bad_alloc();
    prev = nullptr;
    next = r.threads;
    if (next) next->prev = this;
    r.threads = this;
    enrolled = true;
  }
  void count(std::int64_t d) noexcept {
    in_use.store(in_use.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);  // only we write it
  }
  void* carve(std::size_t bytes) {
    if (static_cast<std::size_t>(fresh.end - fresh.next) < bytes) fresh = registry().take_slab();
    void* p = fresh.next;
    fresh.next += bytes;
    return p;
  }
};
static_assert(std::is_trivially_destructible_v<node_cache>);

constinit thread_local node_cache t_nodes;  // no guard on access

// The thread's end (pthread key destructor): its magazines go to the depot, the rest of its slab to
// the next thread, its count to `retired`.
void leave(void* p) noexcept {
  auto& c = *static_cast<node_cache*>(p);
  node_registry& r = registry();
  for (std::size_t k = 0; k < node_classes; ++k) {
    for (magazine* m : {&c.loaded[k], &c.spare[k]}) {
      if (m->count == 0) continue;
      auto& d = r.depots[k];
      std::lock_guard<std::mutex> g(d.lock);
      try {
        d.mags.push_back(*m);
        d.size.store(d.mags.size(), std::memory_order_relaxed);  // under the lock; the hint for others
      } catch (...) {
        // No room to record it: those nodes are not reused.
      }
      *m = magazine{};
    }
  }
  std::lock_guard<std::mutex> g(r.lock);
  r.retired += c.in_use.load(std::memory_order_relaxed);
  c.in_use.store(0, std::memory_order_relaxed);
  (c.prev ? c.prev->next : r.threads) = c.next;
  if (c.next) c.next->prev = c.prev;
  c.enrolled = false;
  if (c.fresh.end - c.fresh.next >= 1024) {
    try {
      r.leftovers.push_back(c.fresh);
    } catch (...) {
    }
  }
  c.fresh = slab{};
}

inline bool pooled_size(std::size_t bytes, std::size_t align) {
  return node_pool && bytes <= node_class_bytes * node_classes && align <= alignof(std::max_align_t);
}
inline std::size_t class_of(std::size_t bytes) { return (bytes + node_class_bytes - 1) / node_class_bytes - 1; }

__attribute__((noinline)) void* allocate_node_slow(std::size_t bytes, std::size_t align) {
  node_cache& cache = t_nodes;
  if (!cache.enrolled) cache.enroll();
  void* p;
  if (pooled_size(bytes, align)) {
    const std::size_t c = class_of(bytes);
    magazine& l = cache.loaded[c];
    if (l.count == 0 && cache.spare[c].count != 0) std::swap(l, cache.spare[c]);
    if (l.count == 0) {
      auto& d = registry().depots[c];
      if (d.size.load(std::memory_order_relaxed) != 0) {  // a hint; the lock decides
        std::lock_guard<std::mutex> g(d.lock);
        if (!d.mags.empty()) {
          l = d.mags.back();
          d.mags.pop_back();
          d.size.store(d.mags.size(), std::memory_order_relaxed);  // under the lock; the hint for others
        }
      }
    }
    p = l.count != 0 ? l.pop() : cache.carve((c + 1) * node_class_bytes);
  } else if (align <= alignof(std::max_align_t)) {
    p = internal::allocate_bytes(bytes);
  } else {
    p = ::operator new(bytes, std::align_val_t(align));
  }
  cache.count(1);
  return p;
}

__attribute__((noinline)) void free_node_slow(void* p, std::size_t bytes, std::size_t align) noexcept {
  node_cache& cache = t_nodes;
  if (!cache.enrolled) {
    try {
      cache.enroll();
    } catch (...) {
      // Out of thread-specific keys: this thread's frees go uncounted.
    }
  }
  cache.count(-1);
  if (pooled_size(bytes, align)) {
    const std::size_t c = class_of(bytes);
    magazine& l = cache.loaded[c];
    if (l.count == magazine_nodes) {
      magazine& s = cache.spare[c];
      if (s.count != 0) {  // the spare goes to the depot; an empty one takes its place
        auto& d = registry().depots[c];
        std::lock_guard<std::mutex> g(d.lock);
        try {
          d.mags.push_back(s);
          d.size.store(d.mags.size(), std::memory_order_relaxed);  // under the lock; the hint for others
        } catch (...) {
          // No room to record it: the spare's nodes are not reused.
        }
        s = magazine{};
      }
      std::swap(l, s);  // the full loaded magazine becomes the spare
    }
    l.push(p);
    return;
  }
  if (align <= alignof(std::max_align_t)) return internal::free_bytes(p, bytes);
  ::operator delete(p, std::align_val_t(align));
}

}  // namespace

void* allocate_node(std::size_t bytes, std::size_t align) {
  node_cache& cache = t_nodes;
  if (pooled_size(bytes, align) && cache.enrolled) {
    magazine& l = cache.loaded[class_of(bytes)];
    if (l.count != 0) {
      cache.count(1);
      return l.pop();
    }
  }
  return allocate_node_slow(bytes, align);
}

void free_node(void* p, std::size_t bytes, std::size_t align) noexcept {
  node_cache& cache = t_nodes;
  if (pooled_size(bytes, align) && cache.enrolled) {
    magazine& l = cache.loaded[class_of(bytes)];
    if (l.count != magazine_nodes) {
      cache.count(-1);
      l.push(p);
      return;
    }
  }
  free_node_slow(p, bytes, align);
}

}  // namespace grove::detail

namespace grove::internal {

std::size_t messages_in_use() noexcept {
  auto& r = detail::registry();
  std::lock_guard<std::mutex> g(r.lock);
  std::int64_t n = r.retired;
  for (auto* c = r.threads; c; c = c->next) n += c->in_use.load(std::memory_order_relaxed);  // statistics
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

}  // namespace grove::internal
