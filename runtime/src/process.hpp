// process.hpp: the process control block (PCB), and what a process owns.
//
// One PCB per live process, 192 bytes, living in the process table (process_table.hpp) at the index
// its pid names. Its first cache line holds what senders touch (the pid, the reference count, the
// control word, the inbox's head) and fields used only around a park or an exit; the rest belongs
// to the process itself and to the worker running it. Rarely used state (links, monitors, the arena, the exit reason) lives in a separate
// `process_extra`, allocated on first use, so a process that never links costs nothing for it.
// What a process needs only before its first run (its callable) shares bytes with what it needs
// only after (its timer): see entry_or_timer. Its C++ exception state while parked is kept on its
// own stack (context.hpp). Measured (bench/RESULTS.md, "A 192-byte control block"): a million
// sleepers take ~244 bytes each instead of ~306 with the 256-byte PCB (re-measure:
// `build/release/bench/grove/spawn --n 1000000 --threads 2`, bytes_per_process).
//
// Ownership (who may touch what):
//   - shared fields say so, and are atomics whose orders are argued where they are used;
//   - "owner" fields are touched only by the process itself, or by the worker that is running it or
//     is about to (which holds the process's control word in the RUNNING state, scheduler.cpp);
//   - "slot" fields (the stack image) are touched only by a worker holding the process's execution
//     stack slot (stack_slots.hpp), because an eviction may copy them out while the process is parked.
// A process changes only its own links and monitors; the other side learns by a signal (signal_handling.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/process.hpp>

#include "context.hpp"
#include "mailbox.hpp"
#include "throw_sites.hpp"
#include "timer_wheel.hpp"

namespace grove::internal {

class process_arena;
struct scoped_waiter;

enum class process_kind : std::uint8_t { scheduled, scoped };

// Why a process switched back to its worker.
// offload: waiting for run_blocking, its execution stack kept for it (blocking.cpp).
enum class park_reason : std::uint8_t { none, yield, wait, exit, offload };

// The control word (scheduler.cpp, "process states").
inline constexpr std::uint32_t ctl_notified = 1u;  // queued to run (in a run queue or a slot's waiters)
inline constexpr std::uint32_t ctl_running = 2u;   // a worker is running it
inline constexpr std::uint32_t ctl_exited = 4u;    // it has exited; wakes are ignored
// It cannot keep up with its mail: senders wait after their send (overload.cpp). Set and cleared by
// the process itself; a sender reads it after its wake's read-modify-write on the word.
inline constexpr std::uint32_t ctl_overloaded = 8u;
// With RUNNING: it has parked, and its worker holds it as it was after a hand-off (worker.cpp,
// "Holding the one that handed off"); a wake then takes it from that worker unless it runs there.
inline constexpr std::uint32_t ctl_held = 16u;

inline constexpr std::uint32_t no_slot = ~std::uint32_t{0};
// process::activity once its exit is decided (the other values are grove::wait_reason's).
inline constexpr std::uint8_t exiting_activity = 0xFF;
inline constexpr std::size_t stack_unit_bytes = 64;
inline constexpr std::uint16_t no_home = 0xFFFF;
// In process::home, tells the worker a flood's processes gather at (overload.cpp) from a pinned
// process's home.
// Worker indices stay below it (runtime_config::workers is at most 1024).
inline constexpr std::uint16_t gathered_flag = 0x8000;
inline constexpr bool is_gathered(std::uint16_t home) noexcept { return home != no_home && (home & gathered_flag); }
inline constexpr bool is_pinned_home(std::uint16_t home) noexcept { return !(home & gathered_flag); }  // no_home has the bit
inline constexpr std::size_t inline_entry_bytes = 32;
inline constexpr std::uint32_t image_is_difference = 1u << 31;  // in process::image_capacity
inline constexpr std::uint32_t image_is_out = 1u << 30;         // likewise: it holds the stack
inline constexpr std::uint32_t image_flags = image_is_difference | image_is_out;
// So that no capacity reaches the flags (an image is at most the stack plus its ASan shadow, 9/8 of
// it); runtime_config::stack_bytes is checked against it.
inline constexpr std::size_t max_stack_bytes = std::size_t{256} << 20;
static_assert(max_stack_bytes / 8 * 9 + 4096 < image_is_out);

// Cold per-process state, allocated on first use.
struct process_extra {
  std::unordered_set<pid> links;                        // owner
  std::unordered_map<std::uint64_t, pid> monitors;      // owner: monitors it holds (ref id → target)
  std::unordered_map<std::uint64_t, std::string> monitor_names;  // owner: those made by registered name (ref id → name)
  std::unordered_map<std::uint64_t, pid> monitored_by;  // owner: monitors on it (ref id → watcher)
  std::unordered_set<std::uint64_t> aliases;            // owner: its active aliases
  exit_reason reason;                                   // owner: why it is exiting (valid once exiting)
  std::uint8_t exit_raises = 0;                         // owner: exit_unwinds thrown for that exit
  std::uint8_t exit_swallows = 0;                       // owner: times it was found swallowed (exit_protocol.cpp)
  bool exit_by_signal = false;                          // owner: an exit signal decided the exit
  bool unmatched_mail_reported = false;                 // owner: report_unmatched_mail has logged it
  process_arena* arena = nullptr;                       // owner
  std::size_t max_heap_bytes = 0;                       // owner
  std::unique_ptr<throw_record> last_throw;             // owner: its last throw, with grove::throw_traces (throw_sites.hpp)
};

// The callable a scheduled process runs (detail::entry_ops), and its receive/sleep timeout. They
// share bytes: the callable waits in the PCB only until the process first runs, when process_main
// (spawn.cpp) moves it to the top of the process's own execution stack, above its first frame
// (entry_reserve bytes: the callable, or the pointer to it on the heap); the timer is used only after
// that. Only a trivially copyable callable is kept in the PCB, so the move is a memcpy that runs no
// user code: a move constructor or destructor that sent or waited with a timeout there would arm the
// timer over the callable's own bytes. Others go to the heap (as large ones always did).
// Rejected: the timer on the stack instead (a parked process's stack may be copied out, and the
// wheel links and fires its timer meanwhile); a 128-byte PCB (the mailbox, saved list, timer and
// image fields a sleeper needs already take more than 128). So the callable travels with the stack image and costs the PCB nothing once it runs, and a
// sleeping process's PCB is 192 bytes, three cache lines.
struct entry_before_start {
  // The callable when entry_is_inline(*ops), else a pointer to it on the heap. Aligned for 8 bytes:
  // 16 would make the union 48 bytes (rare callables aligned for more go to the heap).
  alignas(8) unsigned char storage[inline_entry_bytes];
  const detail::entry_ops* ops;  // null: none (its construction failed)
};
struct entry_after_start {
  timer_node timer;                      // owner: its receive/sleep timeout (timers.cpp)
  const detail::entry_ops* ops = nullptr;  // owner: null once the callable is destroyed
};
union entry_or_timer {
  entry_or_timer() noexcept : unstarted{} {}
  entry_before_start unstarted;  // active from spawn to the first run
  entry_after_start started;     // active from the first run (scoped processes: from allocation)
};

// Whether a callable lives in the PCB's storage before its first run (and then at its stack's top)
// rather than on the heap.
inline bool entry_is_inline(const detail::entry_ops& ops) noexcept {
  return ops.size <= inline_entry_bytes && ops.align <= alignof(entry_before_start) && ops.trivially_copyable;
}
// The bytes at the top of a started process's execution stack that hold its callable (or the
// pointer to it), a multiple of 16 so that the first frame below stays aligned.
inline std::size_t entry_reserve(const detail::entry_ops& ops) noexcept {
  return entry_is_inline(ops) ? (ops.size + 15) / 16 * 16 : 16;
}

struct alignas(64) process {
  // ---- first cache line: what a sender touches, and what its owner touches only to park or exit ----
  // A sender to a running process makes all its read-modify-writes here (the inbox push, the wake;
  // a reference only from a thread that is not a worker: delivery.cpp) and reads nothing else of the
  // PCB, while the running owner reads and writes only the two lines below (its consumer end of the
  // inbox, exit_signals at every runtime call), so that a line senders write is not also one the
  // receiver needs at every message (bench/RESULTS.md, "fan_in: sending without a reference").
  std::atomic<std::uint64_t> pid_bits{0};  // shared: written before refs is published; read under a ref
  std::atomic<std::uint32_t> refs{0};      // shared: process_table.hpp
  std::atomic<std::uint32_t> control{0};   // shared: scheduler.cpp, "process states"
  process_kind kind = process_kind::scheduled;  // read by wakers; fixed while a pid names it
  std::atomic<bool> has_name{false};       // shared: set under the registry lock; read at exit
  // Where it runs when made runnable: no_home (anywhere); a pinned process's worker, stored by that
  // worker at its first run, before it can park, then fixed (scheduler.cpp, "Pinned"); or
  // gathered_flag | the worker of a receiver that could not keep up, stored by that worker as the
  // receiver frees its waiting senders (for them and for itself), cleared by the worker that begins a
  // run of it after two runs that took no part in the flood, or by a thief that takes it from a stuck
  // worker (overload.cpp, "Senders gather where their receiver runs"). Relaxed: wakers load it after their wake's RMW on
  // `control`, which orders a pinned home's store; a gathering is a placement hint, any value of
  // which is safe.
  std::atomic<std::uint16_t> home{no_home};
  // shared, published by the owner for introspection as its arena grows and shrinks (arena.cpp):
  // KiB taken from the system, rounded up; relaxed, a snapshot like `activity`.
  std::atomic<std::uint32_t> arena_kib{0};
  // ---- slot (stack_slots.hpp): touched only around a park and a resume ----
  void* image = nullptr;                   // slot: saved stack image while not resident
  std::uint32_t image_bytes = 0;           // slot: its live size (0: none saved)
  // slot: allocated size of `image`, with image_is_out while `image` holds its stack (it is not
  // resident), and image_is_difference when that is kept as its difference from a reference image of
  // its slot (stack_slots.hpp) instead of the image itself.
  std::uint32_t image_capacity = 0;
  process_extra* extra = nullptr;          // owner: cold (links, monitors, exit)
  union {
    process* next_waiter = nullptr;        // scheduled processes, slot: link in a stack slot's waiter list
    scoped_waiter* waiter;                 // scoped processes: set before the pid is known; freed at finalize
  };
  // shared: any thread pushes; the owner pops. Its head (what pushers exchange) ends this line; the
  // consumer's end and the stub begin the next (static_asserts below).
  inbox mail;

  // ---- owner ----
  // shared: exit signals sent to it and not yet acted on (exit_protocol.cpp, "busy processes");
  // senders add before they push, the process subtracts as it acts on each one. Here, not above:
  // the owner reads it at every runtime call.
  std::atomic<std::uint32_t> exit_signals{0};
  // shared, published by the owner for introspection (process_summary_of, top_processes), relaxed
  // stores and loads: snapshots that order nothing. `activity`: what it waits on while parked
  // (grove::wait_reason), or exiting_activity once its exit is decided. `stack_units`: its live
  // stack when it last parked, in 64-byte units (saturating).
  std::atomic<std::uint8_t> activity{0};
  park_reason parked = park_reason::none;  // owner: set just before switching to the worker
  std::atomic<std::uint16_t> stack_units{0};
  saved_list saved;                        // owner: received, not yet matched
  entry_or_timer entry;                    // owner: its callable, then its timeout (above)
  context ctx;                             // owner: saved context while parked
  std::atomic<std::uint64_t> reductions{0};// owner writes (load and store, no RMW); others read a snapshot, relaxed
  std::uint32_t budget = 0;                // owner: reductions left in this time slice
  std::uint32_t slot = no_slot;            // slot (stack_slots.hpp): bound at first run, for life
  std::uint16_t timer_worker = 0;          // owner: whose wheel `timer` is in, while armed
  std::uint16_t worker = 0;                // owner: the worker running it (or that ran it last)
  bool timer_armed = false;                // owner: `timer` may be linked in a wheel
  // shared: trace::process_flags (trace_process stores them under a table ref; recording sites load
  // them, relaxed: a switch, the rings are published apart).
  std::atomic<std::uint8_t> trace_flags{0};
  // Owner-only flags, one byte (bit-fields: no other thread reads or writes this byte).
  bool started : 1 = false;                // owner: its context exists
  bool trap_exit : 1 = false;              // owner
  bool pinned : 1 = false;                 // owner: spawn_options::pinned (set before the pid is published)
  bool exiting : 1 = false;                // owner: an exit is decided (unwinding, or in the exit protocol)
  bool in_exit_protocol : 1 = false;       // owner: exit_process runs: its runtime calls must not raise the exit again
  bool overloaded : 1 = false;             // owner: ctl_overloaded is set in `control` (overload.cpp)
  // owner: in its current run, in its last: it waited for a receiver that could not keep up, or freed
  // senders that waited for it (overload.cpp, "Senders gather where their receiver runs")
  bool flooded_this_run : 1 = false;
  bool flooded_last_run : 1 = false;
  std::uint8_t exits_deferred = 0;         // owner: live exit_deferrals (grove/process.hpp)

  timer_node& timer() noexcept { return entry.started.timer; }
  // It no longer runs where a flood gathered it (overload.cpp, "Senders gather where their receiver
  // runs"); a pinned home stays. relaxed: as `home` says.
  void leave_gathering() noexcept {
    if (is_gathered(home.load(std::memory_order_relaxed))) home.store(no_home, std::memory_order_relaxed);
  }
  grove::pid id() const noexcept { return pid::from_bits(pid_bits.load(std::memory_order_relaxed)); }
  // The one reset of a reused PCB's per-incarnation state, by process_table::allocate before the new
  // pid is published. What the previous incarnation's exit already emptied (mailbox, saved list,
  // timer, stack image, function, extra) is not touched again.
  void reset(process_kind k) noexcept {
    kind = k;
    ctx = context{};  // no exception state or sanitizer state from the previous process
    parked = park_reason::none;
    timer_armed = false;
    trace_flags.store(0, std::memory_order_relaxed);  // published with the pid (process_table::allocate)
    trap_exit = false;
    pinned = false;
    home.store(no_home, std::memory_order_relaxed);  // published with the pid
    exiting = false;
    in_exit_protocol = false;
    flooded_this_run = false;
    flooded_last_run = false;
    overloaded = false;  // and ctl_overloaded: the control word is set anew (process_table::allocate)
    exit_signals.store(0, std::memory_order_relaxed);  // published with the pid (process_table::allocate)
    budget = 0;
    if (k == process_kind::scoped) {
      ::new (&entry.started) entry_after_start{};  // it has no callable; its timer is used from now on
      waiter = nullptr;
    } else {
      entry.unstarted.ops = nullptr;  // spawn sets it once the callable is constructed
    }
    reductions.store(0, std::memory_order_relaxed);  // published with the pid
    activity.store(0, std::memory_order_relaxed);
    stack_units.store(0, std::memory_order_relaxed);
    arena_kib.store(0, std::memory_order_relaxed);
    worker = 0;
  }
  process_extra& ensure_extra() {
    if (!extra) extra = new process_extra();
    return *extra;
  }
};

static_assert(sizeof(process) <= 192 || GROVE_CONTEXT_HAS_SANITIZER_FIELDS,
              "the PCB must stay within 192 bytes: a million of them is the headline");
// The inbox's head (pushers' exchange) is the last word of the senders' line; its consumer end
// begins the owner's (the first-line comment above).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"  // GCC and Clang lay out this class as its members say
static_assert(offsetof(process, mail) + sizeof(void*) == 64, "the inbox head must end the first cache line");
static_assert(offsetof(process, exit_signals) >= 64, "exit_signals is read by its owner at every runtime call");
#pragma GCC diagnostic pop

using detail::exit_unwind;

}  // namespace grove::internal
