// throw_traces.cpp: libgrove_throw_traces, the opt-in library that records where each exception
// that ends a Grove process was thrown (grove/stack_trace.hpp; the design: runtime/src/
// stack_trace.cpp, "The throw site").
//
// It defines __cxa_throw, the C++ runtime's entry for every throw expression. Linked into a program
// (a shared library, so it comes before libstdc++ in the dynamic linker's search order), its
// definition is the one every throw in the program calls: it calls the observer Grove attached (a
// load, and on a thread that runs no process a few more and a return) and goes on to libstdc++'s
// own __cxa_throw, found once with dlsym(RTLD_NEXT). It changes nothing else: which exceptions are
// thrown, how they unwind, what catches them. Under AddressSanitizer, whose runtime wraps
// __cxa_throw too, the chain is ASan's, then this one, then libstdc++'s.
//
// It does not link libgrove: Grove finds grove_throw_traces_attach through a weak reference when a
// runtime starts and hands it its observer, so this library works with a static libgrove (whose
// symbols an executable does not export) as with the shared one.
//
// Why a library of its own: interposing __cxa_throw changes a global of the host program, which a
// library must not do unless asked (linking this one is the asking). Rejected: -Wl,--wrap=__cxa_throw
// (wraps only the throws of objects linked with that flag, not those inside other libraries); a
// static library (the linker pulls an archive member only for a symbol still undefined, and libstdc++
// may define __cxa_throw first).
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <typeinfo>

namespace {

using observer_fn = void (*)(void*, const std::type_info*) noexcept;
using cxa_throw_fn = void (*)(void*, std::type_info*, void (*)(void*));

// release/acquire: a throw that sees the observer sees the runtime state it was attached with.
std::atomic<observer_fn> observer{nullptr};

cxa_throw_fn next_cxa_throw() noexcept {
  static const cxa_throw_fn next = reinterpret_cast<cxa_throw_fn>(dlsym(RTLD_NEXT, "__cxa_throw"));
  return next;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void grove_throw_traces_attach(observer_fn fn) noexcept {
  observer.store(fn, std::memory_order_release);
}

extern "C" __attribute__((visibility("default"), noreturn)) void __cxa_throw(void* object, std::type_info* type,
                                                                              void (*destroy)(void*)) {
  if (observer_fn fn = observer.load(std::memory_order_acquire)) fn(object, type);
  const cxa_throw_fn next = next_cxa_throw();
  if (!next) {
    std::fputs("grove_throw_traces: libstdc++'s __cxa_throw not found (is libstdc++ linked statically?)\n", stderr);
    std::abort();
  }
  next(object, type, destroy);
  __builtin_unreachable();
}
