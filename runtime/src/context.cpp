// context.cpp: see context.hpp.
#include "context.hpp"

#include <pthread.h>

#include <atomic>
#include <cstring>

#include <boost/context/detail/fcontext.hpp>

#include "sanitizers.hpp"

#include <cxxabi.h>  // __cxa_get_globals (Itanium C++ ABI): the thread's __cxa_eh_globals

namespace grove::internal {

namespace bc = boost::context::detail;

namespace {

// Boost calls a function taking its transfer_t; ours takes our own transfer. The trampoline converts
// (casting the function pointer instead would call through an incompatible type). Every context
// starts in the same entry, so one pointer is enough; relaxed: every writer stores the same value.
std::atomic<entry_fn> g_entry{nullptr};
void trampoline(bc::transfer_t t) { g_entry.load(std::memory_order_relaxed)(transfer{t.fctx, t.data}); }

}  // namespace

void* make_context(void* stack_top, std::size_t size, entry_fn entry) noexcept {
  g_entry.store(entry, std::memory_order_relaxed);
  return bc::make_fcontext(stack_top, size, &trampoline);
}

eh_globals* thread_eh_globals() noexcept { return reinterpret_cast<eh_globals*>(abi::__cxa_get_globals()); }

transfer switch_to(context& self, context& target, stack_bounds target_stack, void* data) noexcept {
#if GROVE_ASAN
  __sanitizer_start_switch_fiber(&self.asan_fake_stack, target_stack.bottom, target_stack.size);
#else
  (void)self;
  (void)target_stack;
#endif
#if GROVE_TSAN
  __tsan_switch_to_fiber(target.tsan_fiber, 0);
#endif
  bc::transfer_t t = bc::jump_fcontext(target.fctx, data);
#if GROVE_ASAN
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, nullptr, nullptr);
#endif
  return {t.fctx, t.data};
}

void finish_first_switch(context& self) noexcept {
#if GROVE_ASAN
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, nullptr, nullptr);
#else
  (void)self;
#endif
}

void exit_to(context& target, stack_bounds target_stack, void* data) noexcept {
#if GROVE_ASAN
  __sanitizer_start_switch_fiber(nullptr, target_stack.bottom, target_stack.size);  // null: our fake stack dies
#else
  (void)target_stack;
#endif
#if GROVE_TSAN
  __tsan_switch_to_fiber(target.tsan_fiber, 0);
#endif
  bc::jump_fcontext(target.fctx, data);
  __builtin_unreachable();
}

void create_fiber(context& c) noexcept {
#if GROVE_TSAN
  if (!c.tsan_fiber) c.tsan_fiber = __tsan_create_fiber(0);
#else
  (void)c;
#endif
}

void destroy_fiber(context& c) noexcept {
#if GROVE_TSAN
  if (c.tsan_fiber) __tsan_destroy_fiber(c.tsan_fiber);
#endif
#if GROVE_ASAN || GROVE_TSAN
  c.tsan_fiber = nullptr;
  c.asan_fake_stack = nullptr;
#else
  (void)c;
#endif
}

stack_bounds adopt_thread(context& c) noexcept {
  stack_bounds b;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* addr = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    b.bottom = addr;
    b.size = size;
  }
#if GROVE_TSAN
  c.tsan_fiber = __tsan_get_current_fiber();
#else
  (void)c;
#endif
  return b;
}

}  // namespace grove::internal
