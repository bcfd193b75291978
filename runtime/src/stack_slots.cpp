// stack_slots.cpp: see stack_slots.hpp for the protocol.
#include "stack_slots.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include <grove/introspection.hpp>

#include "image_delta.hpp"
#include "memory.hpp"
#include "process.hpp"
#include "resources.hpp"
#include "sanitizers.hpp"

namespace grove::internal {

namespace {

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

#if GROVE_ASAN
// AddressSanitizer's shadow of [addr, addr + bytes): one byte per 8 (x86-64 Linux: scale 3).
unsigned char* shadow_of(const void* addr) noexcept {
  static const auto mapping = [] {
    std::size_t scale = 0, offset = 0;
    __asan_get_shadow_mapping(&scale, &offset);
    return std::pair<std::size_t, std::size_t>(scale, offset);
  }();
  return reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(addr) >> mapping.first) + mapping.second);
}
// Shadow memory must be copied with uninstrumented byte moves (memcpy would be intercepted).
GROVE_NO_SANITIZE void copy_shadow(volatile unsigned char* to, const volatile unsigned char* from, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
}
#endif

// ---- Overflow reports ----
// A process that runs off the bottom of its execution stack touches the slot's guard. A SIGSEGV
// handler (on an alternate stack, installed for each worker thread) recognises a fault in a guard
// page and names the process before aborting; any other fault goes to the previous handler. Not
// installed under the sanitizers, which report faults themselves.
std::atomic<const stack_slots*> g_guarded{nullptr};  // shared: the running runtime's slots (release/acquire)
std::atomic<const char* (*)()> g_describe_current{nullptr};  // shared: names the faulting process
char g_stack_size_text[24] = "?";  // the stack size in bytes, as text, for the report (written at install)
struct sigaction g_previous_segv;

void write_all(const char* s) noexcept {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(2, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

[[maybe_unused]] void on_segv(int sig, siginfo_t* info, void* uctx) {
  const stack_slots* slots = g_guarded.load(std::memory_order_acquire);  // pairs with install's release
  if (slots && slots->is_guard_page(info->si_addr)) {
    write_all("grove: process ");
    auto describe = g_describe_current.load(std::memory_order_acquire);
    write_all(describe ? describe() : "?");
    write_all(" overflowed its execution stack of ");
    write_all(g_stack_size_text);
    write_all(" bytes (runtime_config::stack_bytes): a stack frame or a by-value capture this large belongs on the "
              "heap; aborting\n");
    std::abort();
  }
  // Not ours: hand over to whoever handled SIGSEGV before us (or the default action).
  if (g_previous_segv.sa_flags & SA_SIGINFO) {
    if (g_previous_segv.sa_sigaction) return g_previous_segv.sa_sigaction(sig, info, uctx);
  } else if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN) {
    return g_previous_segv.sa_handler(sig);
  }
  ::signal(SIGSEGV, SIG_DFL);  // re-raised by the faulting instruction on return
}

}  // namespace

bool stack_slots::is_guard_page(const void* addr) const noexcept {
  auto a = reinterpret_cast<std::uintptr_t>(addr), b = reinterpret_cast<std::uintptr_t>(region_);
  if (a < b || a >= b + region_bytes_) return false;
  return (a - b) % stride_ < guard_bytes;
}

void stack_slots::install_overflow_reports(const char* (*describe_current)()) noexcept {
#if !GROVE_ASAN && !GROVE_TSAN
  std::snprintf(g_stack_size_text, sizeof g_stack_size_text, "%zu", stack_bytes_);  // before the release below
  g_describe_current.store(describe_current, std::memory_order_release);
  if (g_guarded.exchange(this, std::memory_order_acq_rel) == nullptr) {  // acq_rel: publishes this object to handlers
    struct sigaction sa {};
    sa.sa_sigaction = &on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &g_previous_segv);
  }
#else
  (void)describe_current;
#endif
}

void stack_slots::remove_overflow_reports() noexcept {
#if !GROVE_ASAN && !GROVE_TSAN
  const stack_slots* self = this;
  if (g_guarded.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel)) ::sigaction(SIGSEGV, &g_previous_segv, nullptr);
#endif
}

void* stack_slots::prepare_signal_stack() noexcept {
#if !GROVE_ASAN && !GROVE_TSAN
  constexpr std::size_t bytes = 64 * 1024;
  void* mem = std::malloc(bytes);
  if (!mem) return nullptr;
  stack_t ss{};
  ss.ss_sp = mem;
  ss.ss_size = bytes;
  if (::sigaltstack(&ss, nullptr) != 0) {
    std::free(mem);
    return nullptr;
  }
  return mem;
#else
  return nullptr;
#endif
}

void stack_slots::release_signal_stack(void* mem) noexcept {
  if (!mem) return;
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  ::sigaltstack(&ss, nullptr);
  std::free(mem);
}

stack_slots::stack_slots(unsigned count, std::size_t stack_bytes, unsigned workers)
    : slots_(count), cursors_(workers), images_(workers) {
  const std::size_t page = page_bytes();
  stack_bytes_ = round_up(stack_bytes, page);
  stride_ = guard_bytes + stack_bytes_ + round_up(colours * colour_step, page);
  top_offset_ = guard_bytes + stack_bytes_ + colours * colour_step;
  region_bytes_ = stride_ * count;
  region_ = static_cast<char*>(reserve_region(region_bytes_, false));
  for (unsigned i = 0; i < count; ++i) protect_region(region_ + i * stride_, guard_bytes);  // the guard
  share_ = count / (workers ? workers : 1);
  if (share_ == 0) share_ = 1;
}

stack_slots::~stack_slots() {
  for (slot& s : slots_)
    for (reference& r : s.refs)
      if (r.data) images_.free(0, r.data, image_pool::capacity_for(r.bytes));
  release_region(region_, region_bytes_);
}

void* stack_slots::stack_top(const process* p) const noexcept { return top_of(p->slot); }

std::uint64_t stack_slots::image_copies() const noexcept {
  std::uint64_t n = 0;
  for (const worker_cursor& c : cursors_) n += c.copies.load(std::memory_order_relaxed);  // statistics
  return n;
}

std::uint64_t stack_slots::image_differences() const noexcept {
  std::uint64_t n = 0;
  for (const worker_cursor& c : cursors_) n += c.differences.load(std::memory_order_relaxed);  // statistics
  return n;
}


stack_bounds stack_slots::bounds(const process* p) const noexcept {
  return {top_of(p->slot) - stack_bytes_, stack_bytes_};
}

std::size_t stack_slots::live_bytes(const process* p) const noexcept {
  if (p->slot == no_slot || !p->started) return 0;
  if (p->ctx.fctx) return static_cast<std::size_t>(top_of(p->slot) - static_cast<char*>(p->ctx.fctx));
  return p->image_bytes;
}

bool stack_slots::try_take(slot& s) noexcept {
  std::uint32_t expected = 0;
  // acquire: pairs with release()'s release, so the previous holder's stack writes are visible
  return s.state.compare_exchange_strong(expected, 1, std::memory_order_acquire, std::memory_order_relaxed);
}

bool stack_slots::take_or_wait(slot& s, process* p) noexcept {
  if (try_take(s)) return true;
  std::lock_guard<std::mutex> g(s.waiters_lock);
  for (;;) {
    std::uint32_t st = s.state.load(std::memory_order_relaxed);  // re-checked by the CASes below
    if (st == 0) {
      if (try_take(s)) return true;
      continue;
    }
    // Mark "has waiters" so the holder takes the slow path in release() and sees us.
    if (st == 1 && !s.state.compare_exchange_weak(st, 2, std::memory_order_relaxed)) continue;  // the lock orders the list
    p->next_waiter = s.waiters;
    s.waiters = p;
    return false;
  }
}

process* stack_slots::keep_for(process* p) noexcept {
  slot& s = slots_[p->slot];
  s.reserved_for.store(p, std::memory_order_relaxed);
  // Waiters that never ran can bind to another slot (acquire rebinds them): hand them back now
  // rather than leave them waiting for the blocking call. Started ones must wait: their images
  // hold pointers into this slot.
  std::lock_guard<std::mutex> g(s.waiters_lock);
  process* unstarted = nullptr;
  process** link = &s.waiters;
  while (process* w = *link) {
    if (!w->started) {
      *link = w->next_waiter;
      w->next_waiter = unstarted;
      unstarted = w;
    } else {
      link = &w->next_waiter;
    }
  }
  return unstarted;
}

bool stack_slots::acquire(process* p, unsigned worker) noexcept {
  if (p->slot != no_slot) {
    slot& s = slots_[p->slot];
    // Kept for p (keep_for): still held, by p. Written by the worker that parked p before p was
    // queued again (that queue's release/acquire orders it), and only p can be here for it.
    if (s.reserved_for.load(std::memory_order_relaxed) == p) {  // relaxed: see the field
      s.reserved_for.store(nullptr, std::memory_order_relaxed);
      return true;
    }
  }
  // A process that has never run holds nothing in its slot: it may bind afresh each time it is
  // tried, so one that waited on a slot since kept by a blocking call (keep_for) goes elsewhere.
  if (!p->started) p->slot = no_slot;
  if (p->slot == no_slot) {
    worker_cursor& c = cursors_[worker];
    // Bind: a slot vacated here, newest first (protocol step 5). It may have been bound since by
    // another worker's round-robin; if it is free it is still a fine choice.
    while (c.vacated_count > 0) {
      --c.vacated_count;
      unsigned index = c.vacated[--c.vacated_top % worker_cursor::vacated_capacity];
      if (try_take(slots_[index])) {
        p->slot = index;
        return true;
      }
    }
    // Else round-robin over this worker's share; take the first free one.
    unsigned base = (worker * share_) % count();
    unsigned& next = c.next;
    for (unsigned i = 0; i < share_; ++i) {
      unsigned index = base + (next++ % share_);
      if (try_take(slots_[index])) {
        p->slot = index;
        return true;
      }
    }
    // All of this worker's share is held (by thieves, or kept by blocking calls): any free slot,
    // then one held only for a run (released within a time slice, or a few hand-offs later for a
    // process its worker holds: worker.cpp, "Holding the one that handed off"), never one kept by a blocking
    // call while another will do: that one is held for as long as the call lasts.
    const unsigned n = count();
    for (unsigned i = 0; i < n; ++i) {
      unsigned index = (base + share_ + i) % n;
      if (try_take(slots_[index])) {
        p->slot = index;
        return true;
      }
    }
    unsigned chosen = base + (next++ % share_);
    for (unsigned i = 0; i < n; ++i) {
      unsigned index = (chosen + i) % n;
      if (slots_[index].reserved_for.load(std::memory_order_relaxed) == nullptr) {  // a hint: see keep_for
        chosen = index;
        break;
      }
    }
    p->slot = chosen;
  }
  return take_or_wait(slots_[p->slot], p);
}

process* stack_slots::release(process* p) noexcept {
  slot& s = slots_[p->slot];
  std::uint32_t expected = 1;
  // release: publishes our writes to the stack and images to the next holder
  if (s.state.compare_exchange_strong(expected, 0, std::memory_order_release, std::memory_order_relaxed)) return nullptr;
  std::lock_guard<std::mutex> g(s.waiters_lock);
  process* waiters = s.waiters;
  s.waiters = nullptr;
  s.state.store(0, std::memory_order_release);  // as above
  return waiters;
}

// The reference of this size in s, made from this image if s has none and has room (a free entry,
// or one whose images have all resumed); -1 if none. The caller holds s.
int stack_slots::reference_for(slot& s, const unsigned char* sp, std::size_t live, unsigned worker) noexcept {
  int vacant = -1;
  for (unsigned i = 0; i < references_per_slot; ++i) {
    reference& r = s.refs[i];
    if (r.data && r.bytes == live) return static_cast<int>(i);
    if (vacant < 0 && (!r.data || r.users == 0)) vacant = static_cast<int>(i);
  }
  if (vacant < 0) return -1;
  reference& r = s.refs[vacant];
  unsigned char* fresh;
  try {
    fresh = static_cast<unsigned char*>(images_.allocate(worker, image_pool::capacity_for(live)));
  } catch (const std::bad_alloc&) {
    return -1;  // the image is kept whole
  }
  if (r.data) images_.free(worker, r.data, image_pool::capacity_for(r.bytes));
  std::memcpy(fresh, sp, live);
  r.data = fresh;
  r.bytes = static_cast<std::uint32_t>(live);
  r.users = 0;
  return vacant;
}

// Parked on a timer or a socket (process::activity, grove::wait_reason), not on a message: see
// stack_slots.hpp, "Images as differences". Relaxed: the owner stored it before it parked, and the
// slot's acquire (its holder's release) orders that store before this read.
static bool waits_for_outside(const process* q) noexcept {
  const auto why = static_cast<wait_reason>(q->activity.load(std::memory_order_relaxed));
  return why == wait_reason::sleep || why == wait_reason::io;
}

// Room for `need` bytes in q's image (its old one if large enough); q's capacity is set without
// flags. Throws std::bad_alloc, with nothing changed.
unsigned char* stack_slots::image_room(process* q, std::size_t need, unsigned worker) {
  std::uint32_t capacity = q->image_capacity & ~image_flags;
  if (need > capacity) {
    std::size_t cap = image_pool::capacity_for(need);
    void* fresh = images_.allocate(worker, cap);  // may throw: nothing has changed yet
    if (q->image) {
      images_.free(worker, q->image, capacity);
    } else {
      count_up(resources().stack_images);
    }
    q->image = fresh;
    capacity = static_cast<std::uint32_t>(cap);
  }
  q->image_capacity = capacity;
  return static_cast<unsigned char*>(q->image);
}

inline __attribute__((always_inline)) void stack_slots::evict(slot& s, process* q, unsigned worker) {
  char* top = top_of(q->slot);
  char* sp = static_cast<char*>(q->ctx.fctx);
  std::size_t live = static_cast<std::size_t>(top - sp);
  if (live <= max_reference_bytes && s.images_out >= dense_images_out && waits_for_outside(q)) {
    evict_as_difference(s, q, sp, live, worker);
  } else {
    std::size_t need = live;
#if GROVE_ASAN
    need += live / 8;  // the shadow bytes travel with the image
#endif
    unsigned char* image = image_room(q, need, worker);
#if GROVE_ASAN
    copy_shadow(image + live, shadow_of(sp), live / 8);
    __asan_unpoison_memory_region(sp, live);  // its frames' redzones no longer describe this memory
#endif
    std::memcpy(image, sp, live);
    q->image_capacity |= image_is_out;
  }
  q->image_bytes = static_cast<std::uint32_t>(live);
  ++s.images_out;
  s.resident = nullptr;
  cursors_[worker].count(cursors_[worker].copies);
}

// evict() for a small image in a dense slot: as its difference from the slot's reference if that
// is at most half its size, else whole.
__attribute__((noinline)) void stack_slots::evict_as_difference(slot& s, process* q, char* sp, std::size_t live, unsigned worker) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(sp);
  unsigned char* difference = cursors_[worker].difference;
#if GROVE_ASAN
  // The shadow is read before the stack is unpoisoned (its frames' redzones no longer describe this
  // memory once it is out), and the stack after.
  unsigned char* shadow = cursors_[worker].shadow;
  copy_shadow(shadow, shadow_of(sp), live / 8);
  __asan_unpoison_memory_region(sp, live);
#endif
  std::size_t difference_bytes = 0;
  const int ref = reference_for(s, bytes, live, worker);
  if (ref >= 0) difference_bytes = image_delta::encode(s.refs[ref].data, bytes, live, difference + 1, live / 2);
  const std::size_t stored = difference_bytes ? 1 + difference_bytes : live;
#if GROVE_ASAN
  unsigned char* image;
  try {
    image = image_room(q, stored + live / 8, worker);  // the shadow travels after the stored bytes
  } catch (...) {
    copy_shadow(shadow_of(sp), shadow, live / 8);  // it stays resident, as it was
    throw;
  }
  std::memcpy(image + stored, shadow, live / 8);
#else
  unsigned char* image = image_room(q, stored, worker);
#endif
  if (difference_bytes) {
    difference[0] = static_cast<unsigned char>(ref);
    std::memcpy(image, difference, stored);
    ++s.refs[ref].users;
    q->image_capacity |= image_is_out | image_is_difference;
    cursors_[worker].count(cursors_[worker].differences);
  } else {
    std::memcpy(image, bytes, live);
    q->image_capacity |= image_is_out;
  }
}

void stack_slots::make_resident(process* p, unsigned worker) {
  slot& s = slots_[p->slot];
  if (s.resident == p) return;
  if (s.resident) evict(s, s.resident, worker);
  if (p->started) {
    char* top = top_of(p->slot);
    char* sp = top - p->image_bytes;
    auto* out = reinterpret_cast<unsigned char*>(sp);
    const auto* image = static_cast<const unsigned char*>(p->image);
    const unsigned char* rest;  // what follows the stored stack bytes (the shadow, under ASan)
    if (p->image_capacity & image_is_difference) {
      reference& r = s.refs[image[0]];
      rest = image_delta::decode(r.data, image + 1, p->image_bytes, out);
      --r.users;
    } else {
      std::memcpy(out, image, p->image_bytes);
      rest = image + p->image_bytes;
    }
#if GROVE_ASAN
    copy_shadow(shadow_of(sp), rest, p->image_bytes / 8);
#else
    (void)rest;
#endif
  }
  if (p->image_capacity & image_is_out) --s.images_out;
  p->image_capacity &= ~image_flags;
  s.resident = p;
}

void stack_slots::forget(process* p, unsigned worker) noexcept {
  if (p->slot == no_slot) return;
  slot& s = slots_[p->slot];
  if (s.resident == p) {
    s.resident = nullptr;
    worker_cursor& c = cursors_[worker];
    c.vacated[c.vacated_top++ % worker_cursor::vacated_capacity] = p->slot;
    if (c.vacated_count < worker_cursor::vacated_capacity) ++c.vacated_count;
#if GROVE_ASAN
    __asan_unpoison_memory_region(top_of(p->slot) - stack_bytes_, stack_bytes_);  // its last frames never returned
#endif
  }
  if (p->image_capacity & image_is_difference) --s.refs[static_cast<unsigned char*>(p->image)[0]].users;
  if (p->image_capacity & image_is_out) --s.images_out;
  if (p->image) {
    images_.free(worker, p->image, p->image_capacity & ~image_flags);
    count_down(resources().stack_images);
  }
  p->image = nullptr;
  p->image_bytes = 0;
  p->image_capacity = 0;
}

}  // namespace grove::internal
