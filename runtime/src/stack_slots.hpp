// stack_slots.hpp: execution stacks shared by all workers, used as a cache of process stacks.
//
// Why (the numbers are in runtime/DESIGN.md §1-2): a fresh 4 KiB page costs ~12.9 µs to fault in on
// this project's machines, so one stack per process would make a million sleeping processes cost
// ~4.1 GB and ~15 µs each to spawn. Instead, processes run on a few large execution stacks at fixed
// addresses (the slots) and a parked process's live stack (a few hundred bytes) is copied out only
// when another process needs its slot.
//
// Protocol:
//   1. A process is bound to one slot when it first runs, for life: its saved image holds absolute
//      pointers into that slot, so it can only resume at the same address. Slots are shared by all
//      workers, so any worker can resume it: that is how started processes migrate.
//   2. To run a process, a worker acquires its slot exclusively (acquire()). If another worker holds
//      it, the process joins the slot's waiters and the releasing worker requeues it (release()).
//   3. While holding the slot, make_resident() copies the resident process's image out (evict) if it
//      is not the one to run, then copies the runner's image in. Eviction is lazy: a parked process's
//      stack stays in the slot until someone else needs the slot, so a process that resumes soon
//      after parking (a ping-pong partner) pays no copy.
//   4. A process's image fields and a slot's `resident` are touched only while holding that slot.
//   5. Each worker binds new processes round-robin over its own share of the slots, so workers rarely
//      contend; contention appears only when a process that migrated runs while its old worker uses
//      the same slot. Except: a slot whose process has just exited on this worker is taken first
//      (the last few are kept, newest first). It holds no parked stack to evict and its pages are
//      already in memory, while the next slot round-robin may have neither: a process that spawns a
//      short-lived one, waits and spawns again (a supervisor restarting a crashing child) touched a
//      fresh slot, 1-3 new pages at ~2.7 us each, on every cycle until all 512 of a worker's slots
//      had been used (bench/grove/restarts at 1,000: ~1,000 page faults, gone with this rule).
//   6. An evicted image of a process waiting on a timer or a socket, in a slot where many images are
//      out, is kept as its difference from a reference image of the slot (image_delta.hpp; "Images
//      as differences" below): 539 -> 309 bytes per sleeping process.
//   7. A slot kept by a run_blocking caller (keep_for) is held for as long as the call lasts: a
//      process that never ran is not bound to it while another slot is free or held only for a
//      run, and one already waiting on it is handed back to bind elsewhere. Started processes
//      bound to it wait for the call (their images point into it).
// Overflow: each slot has a guard of guard_bytes (64 KiB) below it, one mprotect each (2 × slots
// mappings, far from the 65,530 map limit). Grove's code and code built against grove::runtime use
// -fstack-clash-protection (exported on the CMake targets), which probes every page of a large
// frame, so the first probe of an overflowing frame lands in the guard, however large the frame; one
// page would do for that code. The guard is 64 KiB so that code built without it (another
// library's frames up to 64 KiB, or a large frame that writes only its first few KiB) still faults
// in the guard instead of writing over the stack below, the one of another process. It costs address
// space only: reserving and protecting 8,192 slots took the same 19-35 ms with a 4 KiB or a 64 KiB
// guard (bench/grove/stack_guard_probe.cpp, 3 rounds each), and PROT_NONE pages are never backed. AddressSanitizer: images carry their shadow bytes with them, so ASan's view of
// each parked stack survives eviction (saving bytes alone gives false reports, runtime/DESIGN.md §2).
//
// Colours: slot i's top sits (i % colours) x colour_step (64 bytes, 64 colours) below the end of
// a page above its stack (the stride holds that page more), so the tops of successive slots start
// at every cache-line offset within a page. Without it every top was page-aligned: L1 is indexed by
// the offset within a page and L2 (physically indexed) by that offset and a few bits of the frame,
// so the hot top lines of all 512 slots of a worker fell in 1/64 of each cache's sets, and with a
// ring of 1,000 processes evicting each other on those slots the copies in and out missed to L3:
// 25% of the run in memmove (`perf record build/release/bench/grove/ring --threads 1`), 6-11% with
// colours. A stack has stack_bytes plus at most colour_step x colours (a page) below it, then the
// guard, at the start of the stride as before. Alternating with the build before (`nice -n -20
// build/release/bench/grove/ring`, 4 rounds, an Intel Xeon guest with 2 MiB of L2 a core): 1
// worker 5.0-5.3 -> 6.4-6.9 M hops/s, 2 workers 5.5-5.7 -> 6.2-7.6 M, `--size 100000 --n 3000000`
// 4.0-4.2 -> 4.7-4.9 M; `spawn --n 1000000` 0.245-0.253 -> 0.227-0.233 s; ping_pong and skynet
// within noise.
// Rejected: colours of 1 KiB over 128 KiB (128 KiB more address space a slot, and a guard that had
// to follow each stack down: the same figures in the same rounds); a stack per process (memory and
// spawn cost above; and guard pages for a million stacks exceed vm.max_map_count); copy-stacks
// pinned to one worker (no migration of started processes); segmented/growable stacks (need
// compiler support and still touch a fresh page per process).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "context.hpp"
#include "image_pool.hpp"
#include "sanitizers.hpp"

namespace grove::internal {

struct process;

class stack_slots {
 public:
  stack_slots(unsigned count, std::size_t stack_bytes, unsigned workers);
  ~stack_slots();
  stack_slots(const stack_slots&) = delete;
  stack_slots& operator=(const stack_slots&) = delete;

  unsigned count() const noexcept { return static_cast<unsigned>(slots_.size()); }
  std::size_t stack_bytes() const noexcept { return stack_bytes_; }

  // Binds p to a slot if it has none (choosing among worker's share), then tries to take the slot.
  // True: the caller holds it. False: p is parked on the slot's waiters; release() will return it.
  bool acquire(process* p, unsigned worker) noexcept;
  // Releases p's slot; returns the waiters (linked through process::next_waiter) to requeue.
  process* release(process* p) noexcept;
  // Caller holds p's slot and p parks without giving it up (run_blocking: its stack must stay where
  // it is, in use by another thread): the slot stays held for p, and p's next acquire takes it
  // back at once. Returns the waiters that never ran (linked through next_waiter), for the caller
  // to requeue: they bind to another slot. Started processes bound to it wait for the call to end;
  // new ones are not bound to it while any other slot is free or only briefly held.
  process* keep_for(process* p) noexcept;
  // Caller (worker `worker`) holds p's slot: make p's stack the one in the slot. Throws
  // std::bad_alloc if an image cannot be allocated (nothing has changed then).
  void make_resident(process* p, unsigned worker);
  // Caller (worker `worker`) holds p's slot and p has exited: forget its image and residency, and
  // remember the slot as vacated, for the next process that worker binds.
  void forget(process* p, unsigned worker) noexcept;

  void* stack_top(const process* p) const noexcept;
  char* top_of(std::uint32_t index) const noexcept {  // of a slot (coloured: see "Colours")
    return region_ + index * stride_ + top_offset_ - (index % colours) * colour_step;
  }
  stack_bounds bounds(const process* p) const noexcept;
  // Live stack bytes of a parked process (from its saved context) or of its saved image.
  std::size_t live_bytes(const process* p) const noexcept;

  // Overflow reports (stack_slots.cpp): a SIGSEGV in a guard page names the process and aborts.
  bool is_guard_page(const void* addr) const noexcept;
  static constexpr std::size_t guard_bytes = 64 * 1024;
  void install_overflow_reports(const char* (*describe_current)()) noexcept;  // at runtime start
  void remove_overflow_reports() noexcept;                                    // at stop
  static void* prepare_signal_stack() noexcept;        // each worker thread, at its start
  static void release_signal_stack(void* mem) noexcept; // and at its end

  // Statistics, summed over the workers' counts.
  std::uint64_t image_copies() const noexcept;
  std::uint64_t image_differences() const noexcept;

 private:
  // Images as differences (image_delta.hpp): each slot keeps up to references_per_slot reference
  // images, one per image size, made from the first image of that size evicted from the slot, and an
  // evicted image whose difference from the reference of its size is at most half its size is kept
  // as that difference. A process's slot is fixed for life, so its image and the reference it is
  // kept against are touched only by the slot's holder: `users` needs no atomics. A reference with
  // no users may be replaced by one of another size; one with users stays until they resume.
  // Only the images of processes waiting on a timer or a socket are encoded, and only in a slot
  // with dense_images_out images out. Those processes wake at the rate the outside world sets, and
  // there are millions of them when there are (sleepers, idle connections). Processes waiting for a
  // message can wake millions of times a second, as in a ring, where an encode and a decode on every
  // hop cost ~1,200 and ~480 instructions against a copy's ~60: `build/release/bench/grove/ring
  // --size 100000 --n 3000000 --threads 2` ran at 0.55x (6.0 -> 3.2 M hops/s) with every image
  // encoded. In a sparse slot the saving is small (at most dense_images_out x slots x ~300 bytes,
  // 5 MB for 1,024 slots) and processes sharing it evict each other on every wake (a ring of a
  // thousand on one worker's 512 slots: 205 M instructions for `ring --n 200000 --threads 1`, 447 M
  // with every image encoded).
  static constexpr std::size_t colour_step = 64;  // "Colours" above
  static constexpr unsigned colours = 64;
  struct reference {
    unsigned char* data = nullptr;  // nullptr: none
    std::uint32_t bytes = 0;
    std::uint32_t users = 0;        // images kept as differences from it
  };
  static constexpr unsigned references_per_slot = 4;
  // Deeper parks are rare and kept whole. Under ASan frames carry redzones, and images are larger.
  static constexpr std::size_t max_reference_bytes = GROVE_ASAN ? 4096 : 1024;
  static constexpr std::uint32_t dense_images_out = 16;

  struct alignas(64) slot {
    std::atomic<std::uint32_t> state{0};  // shared: 0 free, 1 held, 2 held with waiters
    std::mutex waiters_lock;               // guards waiters (slow path only)
    process* waiters = nullptr;            // guarded by waiters_lock
    process* resident = nullptr;           // slot: whose stack is in it
    // shared: the process that keeps the slot while it is parked (keep_for); others read it while
    // they try the slot, relaxed: it can only equal the reader if the reader is that process, which
    // was queued again after the write (its queue's release/acquire orders it). Binding also reads
    // it, relaxed, as a hint only (a stale answer picks a worse slot to wait on, never a wrong one).
    std::atomic<process*> reserved_for{nullptr};
    reference refs[references_per_slot];   // slot: for images kept as differences (below)
    std::uint32_t images_out = 0;          // slot: processes bound to it whose stack is in their image
  };
  struct alignas(64) worker_cursor {  // owner: that worker
    static constexpr unsigned vacated_capacity = 8;
    unsigned next = 0;                  // round-robin position in its share
    unsigned vacated_top = 0;           // vacated[(vacated_top - 1) % capacity] is the newest
    unsigned vacated_count = 0;         // at most vacated_capacity
    std::uint32_t vacated[vacated_capacity] = {};  // slots emptied by exits on that worker
    // Scratch for evict_as_difference: the encoding, and under ASan the shadow, of the image being
    // evicted. Here and not on the stack: a hand-off evicts on the parking process's own stack.
    unsigned char difference[1 + max_reference_bytes / 2];
#if GROVE_ASAN
    unsigned char shadow[max_reference_bytes / 8];
#endif
    // Statistics, written by the owner alone (a load and a store: no read-modify-write on a line
    // another core writes), read by anyone (system_info). Relaxed: counts.
    std::atomic<std::uint64_t> copies{0};       // evictions that copied an image out
    std::atomic<std::uint64_t> differences{0};  // of those, kept as differences
    void count(std::atomic<std::uint64_t>& c) noexcept {
      c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // relaxed: a count, one writer (the owner)
    }
  };

  bool try_take(slot& s) noexcept;
  bool take_or_wait(slot& s, process* p) noexcept;
  void evict(slot& s, process* q, unsigned worker);
  void evict_as_difference(slot& s, process* q, char* sp, std::size_t live, unsigned worker);
  unsigned char* image_room(process* q, std::size_t need, unsigned worker);
  int reference_for(slot& s, const unsigned char* sp, std::size_t live, unsigned worker) noexcept;

  std::vector<slot> slots_;
  std::vector<worker_cursor> cursors_;
  std::size_t stack_bytes_ = 0;
  std::size_t stride_ = 0;      // guard + stack + a page (or colours x colour_step rounded up to pages)
  std::size_t top_offset_ = 0;  // from a stride's start to an uncoloured top: guard + stack + colours x colour_step
  char* region_ = nullptr;
  std::size_t region_bytes_ = 0;
  unsigned share_ = 1;  // slots per worker for binding
  image_pool images_;                      // the images' memory (image_pool.hpp)
};

}  // namespace grove::internal
