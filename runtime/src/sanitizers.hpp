// sanitizers.hpp: which sanitizer this translation unit is built with, and their fiber interfaces.
//
// Grove switches stacks by hand (context.cpp), so AddressSanitizer and ThreadSanitizer must be told
// about every switch; stack_slots.cpp also moves AddressSanitizer's shadow bytes with each stack image.
// Everything here compiles to nothing in a plain build.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define GROVE_ASAN 1
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#else
#define GROVE_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define GROVE_TSAN 1
#include <sanitizer/tsan_interface.h>
#else
#define GROVE_TSAN 0
#endif

#define GROVE_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))

namespace grove::internal {

// Happens-before that passes through the kernel, which ThreadSanitizer cannot see: a pointer handed
// to epoll_ctl and returned by epoll_wait on another thread. The syscalls order the two threads
// (the kernel takes the epoll instance's lock on both sides); these calls tell TSan so.
inline void sanitizer_release(void* addr) noexcept {
#if GROVE_TSAN
  __tsan_release(addr);
#else
  (void)addr;
#endif
}
inline void sanitizer_acquire(void* addr) noexcept {
#if GROVE_TSAN
  __tsan_acquire(addr);
#else
  (void)addr;
#endif
}

}  // namespace grove::internal
