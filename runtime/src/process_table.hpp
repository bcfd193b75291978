// process_table.hpp: where PCBs live, how a pid finds its process, and the process limit.
//
// Design:
//   - One reserved region of PCBs (192 bytes each) for the configured limit plus a margin, indexed by
//     the pid's index. Address space only: chunks of 8,192 PCBs (2 MiB, one huge page) are constructed
//     the first time an index in them is handed out, so a runtime with the default 1M limit costs
//     memory only for the processes it has really had.
//   - PCBs are never freed while the runtime runs (type-stable memory): a stale pid still points at
//     a valid PCB, possibly holding a newer process. That makes lookup safe without locks:
//       1. load refs; if 0 the process is gone; else CAS refs+1 (acquire);
//       2. compare the PCB's pid (serial included) with the one asked for; on a mismatch drop the
//          reference again: the asked-for process is gone and its slot reused.
//     The allocator writes the new pid before publishing refs = 1 with release, so step 2 reads the
//     right pid; a reference keeps refs > 0, so the PCB cannot be reused while it is held.
//   - A process holds one reference on itself while alive (the "life" reference); a sender on a
//     foreign thread holds one while it pushes (a worker's send holds none: whoever drops the last
//     reference waits for the workers that are mid-send, delivery.cpp, "Sending without a
//     reference"). When the last one is dropped, finalize_process() (delivery.cpp) drains what
//     is left in the mailbox (answering link and monitor requests with noproc, so nothing is lost) and
//     the index goes back to a free list, with its serial bumped so old pids stay dead.
//   - Free indices are cached per worker (no lock on the spawn path) and spill to a global list.
//   - The limit counts live processes (spawned, not yet exited). Exited PCBs still referenced by an
//     in-flight sender take an index for a moment, and so do those a worker finalizes in a batch
//     (worker.cpp, "Finalizing in batches"); the margin above the limit absorbs them.
//   - The limit is kept without a shared counter on the spawn path: a worker reserves room for
//     reserve_batch processes at a time from the unreserved rest (one shared atomic), spawns from its
//     reservation (a CAS on its own line), and an exit on a worker returns the room to that worker's
//     reservation, a batch going back once it holds more than two. So live + unreserved + every
//     reservation == the limit, always. A spawn that finds no room anywhere first takes every
//     worker's reservation back into the unreserved rest, so a spawn fails only when the live
//     processes fill the limit: exact, from any thread, as a single shared count was. Measured with
//     the shared count (a fetch_add at every spawn, a fetch_sub at every exit): 0.07 s of a 0.54 s
//     skynet on 2 workers (bench/RESULTS.md, "skynet: counting where it happens").
//   - PCBs handed out and returned are counted where it happens, per worker (a load and a store on
//     the worker's own line: only it writes there) or, for other threads, in one shared set of counts
//     (read-modify-writes); a reader sums them (scheduled_in_use, processes_in_use). The counts only
//     grow, and a reader sums every "returned" before any "handed out", so a sum is never below the
//     number in use at some moment during the read: a zero is real, a stop() or wait_until_idle
//     never sees one early. Measured: one shared counter for each, updated at every spawn and
//     exit, was ~20% of skynet on 2 workers, the line moving between the cores at each update
//     (`nice -n -20 build/release/bench/grove/skynet --threads 2`, alternating: 0.669-0.691 s with
//     them, 0.526-0.547 s counted per worker; bench/RESULTS.md, "skynet: counting where it happens").
//     Rejected: counting per thread for all threads (a thread-local registry, as message nodes are
//     counted in memory.cpp): a process is often returned by another thread than the one that
//     spawned it, and the per-runtime sums need only the workers' own lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include <grove/pid.hpp>
#include <grove/runtime.hpp>

#include "process.hpp"

namespace grove::internal {

// PCBs a worker finalizes together at most (worker.cpp, "Finalizing in batches").
inline constexpr unsigned finalize_batch = 32;

class process_table {
 public:
  static constexpr std::size_t chunk_processes = 8192;

  process_table(grove::runtime::state& owner, std::size_t limit, unsigned workers);
  ~process_table();
  process_table(const process_table&) = delete;
  process_table& operator=(const process_table&) = delete;

  // A reset PCB for a new process, with a new pid and refs = 1; nullptr at the limit. Counts it live.
  // worker: the calling worker's index, or -1 on a foreign thread.
  process* allocate(int worker, process_kind kind = process_kind::scheduled);
  // Takes a reference on the process `id` names; nullptr if that process is gone (or never was).
  process* acquire(pid id) noexcept;
  // The PCB at `id`'s index, whoever lives there now, without a reference; nullptr for a remote or
  // null pid, or an index never handed out. Only for delivery.cpp's send without a reference.
  process* pcb_at(pid id) const noexcept {
    const std::uint32_t index = id.index();
    if (id.is_null() || id.is_remote() || index >= constructed_.load(std::memory_order_acquire)) return nullptr;
    return base_ + index;
  }
  // Drops a reference; the last one finalizes and recycles the PCB, at once or, dropped on a
  // worker's thread, in that worker's next batch (worker.cpp). worker as for allocate.
  void release(process* p, int worker) noexcept;
  // The rest of a release whose last reference a worker dropped and whose senders it has waited
  // out (worker.cpp, "Finalizing in batches"): finalizes p and gives its index back.
  void finish_release(process* p, int worker) noexcept;
  // A live process has exited: it no longer counts against the limit. worker as for allocate.
  void mark_exited(int worker) noexcept;

  // Live processes: exact when no spawn or exit runs meanwhile.
  std::size_t live() const noexcept;
  // PCBs of scheduled processes handed out and not yet back (alive, or exited and still referenced):
  // zero means every exited process's PCB, stack image, arena and messages are released. Never
  // below the true number at some moment during the call (the design above).
  std::size_t scheduled_in_use() const noexcept;
  // PCBs of either kind handed out and not yet finalized, over every table of the program
  // (resources_in_use): those of tables destroyed with PCBs still out stay counted.
  static std::size_t processes_in_use() noexcept;
  std::size_t limit() const noexcept { return limit_; }
  grove::runtime::state& owner() const noexcept { return owner_; }
  // Whether addr lies in the table (a PCB's embedded timer, timers.cpp), and the PCB holding it.
  bool contains(const void* addr) const noexcept {
    auto a = reinterpret_cast<std::uintptr_t>(addr), b = reinterpret_cast<std::uintptr_t>(base_);
    return a >= b && a < b + reserved_bytes_;
  }
  process* process_at(const void* addr) const noexcept {
    auto off = reinterpret_cast<std::uintptr_t>(addr) - reinterpret_cast<std::uintptr_t>(base_);
    return base_ + off / sizeof(process);
  }

  // Calls fn(p) for every process alive at some moment during the call, holding a reference on it
  // meanwhile (the PCB stays this process's while fn reads it): shutdown and introspection.
  template <class F>
  void visit_live(F&& fn) {
    std::uint32_t n = constructed_.load(std::memory_order_acquire);
    for (std::uint32_t i = 0; i < n; ++i) {
      process* p = base_ + i;
      if (p->refs.load(std::memory_order_relaxed) == 0) continue;  // a hint: acquire() decides
      if (process* q = acquire(p->id())) {
        struct drop {  // also if fn throws
          process_table& table;
          process* q;
          ~drop() { table.release(q, -1); }
        } held{*this, q};
        if ((q->control.load(std::memory_order_acquire) & ctl_exited) == 0) fn(q);  // acquire: as in is_alive
      }
    }
  }

 private:
  std::uint32_t take_index(int worker);
  void give_index(std::uint32_t index, int worker) noexcept;
  void give_back(process* p, int worker) noexcept;  // p's index and counts, once p is finalized
  void construct_through(std::uint32_t index);

  grove::runtime::state& owner_;
  process* base_ = nullptr;
  std::size_t capacity_ = 0;  // PCBs reserved (limit plus margin)
  std::size_t reserved_bytes_ = 0;
  std::size_t limit_ = 0;
  // PCBs handed out and returned (finalized): only ever grow. A worker's are written by it alone
  // (count_one); the foreign set by any other thread.
  struct counts {
    std::atomic<std::uint64_t> out{0};             // either kind
    std::atomic<std::uint64_t> back{0};
    std::atomic<std::uint64_t> scheduled_out{0};   // scheduled processes only
    std::atomic<std::uint64_t> scheduled_back{0};
  };
  counts& counts_for(int worker) noexcept {
    return worker >= 0 && static_cast<std::size_t>(worker) < caches_.size() ? caches_[static_cast<std::size_t>(worker)].counted
                                                                           : foreign_counts_;
  }
  // Sums `back` then `out` over every set of counts (the design above).
  std::uint64_t in_use(std::atomic<std::uint64_t> counts::*out, std::atomic<std::uint64_t> counts::*back) const noexcept;

  // Room under the limit (the design above). Signed: a sum over them may see a moment's negative.
  bool take_room(int worker) noexcept;
  std::int64_t take_unreserved(std::int64_t most) noexcept;
  void take_back_reservations() noexcept;

  alignas(64) std::atomic<std::int64_t> unreserved_{0};  // shared: the limit minus live processes and reservations
  alignas(64) counts foreign_counts_;                   // shared: threads that are not this runtime's workers
  alignas(64) std::atomic<std::uint32_t> next_fresh_{0};  // shared: next never-used index
  std::atomic<std::uint32_t> constructed_{0};           // shared: PCBs [0, n) are constructed (release-published)
  std::mutex construct_lock_;                           // guards chunk construction
  std::mutex free_lock_;
  std::vector<std::uint32_t> free_;                     // guarded by free_lock_
  struct alignas(64) worker_cache {
    std::vector<std::uint32_t> indices;                 // owner: that worker's thread
    counts counted;                                     // that worker writes, anyone reads
    // Room for that many more processes reserved by that worker: it takes and returns (CAS, RMW);
    // a spawn at the limit takes all of it back (exchange).
    std::atomic<std::int64_t> reserved{0};
  };
  std::vector<worker_cache> caches_;
};

}  // namespace grove::internal
