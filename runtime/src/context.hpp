// context.hpp: switching the CPU between a worker's own stack and a process's stack.
//
// The one place that touches Boost.Context (its fcontext layer: make_fcontext/jump_fcontext, a few
// nanoseconds per switch) and the sanitizers' fiber hooks. Every switch goes through switch_to() or
// exit_to(), which wrap the jump in:
//   - AddressSanitizer: __sanitizer_start_switch_fiber before and __sanitizer_finish_switch_fiber
//     after, with the target's stack bounds, so ASan knows which stack is live;
//   - ThreadSanitizer: __tsan_switch_to_fiber just before the jump, so each process is its own
//     "thread" to TSan and synchronisation through the scheduler is seen as such;
//   - the C++ runtime's exception globals (the caught-exception stack and uncaught count), which live
//     in thread-local storage: a process that parks inside a catch block or a destructor during
//     unwinding and resumes on another worker must find its own (Itanium C++ ABI __cxa_get_globals).
//     The switching code keeps the leaving context's copy in its own frame, on that context's stack,
//     and puts it back in the globals of whatever thread resumes it (eh_globals below); a fresh
//     context starts with none. So they travel with the stack image and cost the PCB nothing (they
//     were 16 of its bytes). A process parks with none almost always: receive.cpp keeps a copy only
//     when there is one, in a frame of its own, so that the common frame stays as small as before.
// Invariant: a context's fctx is valid only while that context is switched out; whoever receives the
// transfer of a jump stores the sender's new fctx (see worker.cpp and process_main in spawn.cpp).
// Rejected: a switch of our own without Boost's save and restore of MXCSR and the x87 control word.
// It saves ~2.5 ns of a ~6 ns switch (`build/release/bench/grove/context_switch_probe`, an AMD EPYC
// guest: 6.1 against 3.5-3.7 ns), ~2% of a ~110 ns ring hop that makes one switch, and it would
// let a process that changes its rounding mode or exception masks (fesetround, fesetenv) hand them
// to whichever process its worker runs next: Boost keeps them per context, as the ABI has them
// preserved across calls. The stall perf shows after ldmxcsr in a ring hop is mostly the first
// load from the resumed process's cold stack, which the prefetch in push_runnext covers: in `perf
// record build/release/bench/grove/ring` jump_fcontext went from 20% to 4.8% of the samples with
// it, and the instruction after ldmxcsr from 77% to 9% of jump_fcontext's.
#pragma once

#include <cstddef>

namespace grove::internal {

// The C++ ABI's per-thread exception state (Itanium ABI __cxa_eh_globals).
struct eh_globals {
  void* caught_exceptions = nullptr;
  unsigned int uncaught_exceptions = 0;
};

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GROVE_CONTEXT_HAS_SANITIZER_FIELDS 1
#else
#define GROVE_CONTEXT_HAS_SANITIZER_FIELDS 0
#endif

// The saved side of one execution context (8 bytes in a plain build: it sits in every process).
struct context {
  void* fctx = nullptr;                // saved Boost fcontext while switched out
#if GROVE_CONTEXT_HAS_SANITIZER_FIELDS
  void* asan_fake_stack = nullptr;     // ASan's fake stack while switched out
  void* tsan_fiber = nullptr;          // TSan's fiber (a worker's: its thread's own)
#endif
};

// Where a context's stack is, for AddressSanitizer.
struct stack_bounds {
  const void* bottom = nullptr;  // lowest address
  std::size_t size = 0;
};

struct transfer {
  void* fctx;  // the context we came from, as it is now (store it where it belongs)
  void* data;
};

using entry_fn = void (*)(transfer);

// Prepares a fresh context on [stack_top - size, stack_top) that starts in entry.
void* make_context(void* stack_top, std::size_t size, entry_fn entry) noexcept;

// The running thread's exception globals (look it up once per thread: through libstdc++'s TLS it
// cost ~76 instructions of a ~1,700-instruction ping-pong round trip, callgrind). Around every
// switch_to the caller does `const eh_globals mine = *live;` before and `*live_now = mine;` after,
// with live_now the globals of the thread it was resumed on (scheduler: receive.cpp, worker.cpp).
eh_globals* thread_eh_globals() noexcept;

// Switches from `self` (the running context) to `target`, passing data; returns when something
// switches back to `self`.
transfer switch_to(context& self, context& target, stack_bounds target_stack, void* data) noexcept;

// The first thing a context does when it starts in its entry function.
void finish_first_switch(context& self) noexcept;

// The last switch of a context that will never run again (its stack may be reused at once).
[[noreturn]] void exit_to(context& target, stack_bounds target_stack, void* data) noexcept;

// Sanitizer bookkeeping for a new process context / one that is gone for good.
void create_fiber(context& c) noexcept;
void destroy_fiber(context& c) noexcept;
// A worker's own context: records its TSan fiber and returns the thread's stack bounds.
stack_bounds adopt_thread(context& c) noexcept;

}  // namespace grove::internal
