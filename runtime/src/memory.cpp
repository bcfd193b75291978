// memory.cpp: see memory.hpp.
#include "memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

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

void* allocate_node(std::size_t bytes, std::size_t align) {
  if (align <= alignof(std::max_align_t)) return internal::allocate_bytes(bytes);
  return ::operator new(bytes, std::align_val_t(align));
}

void free_node(void* p, std::size_t bytes, std::size_t align) noexcept {
  if (align <= alignof(std::max_align_t)) return internal::free_bytes(p, bytes);
  ::operator delete(p, std::align_val_t(align));
}

}  // namespace grove::detail
