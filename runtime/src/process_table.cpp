// process_table.cpp: see process_table.hpp.
#include "process_table.hpp"

#include <algorithm>
#include <new>

#include "delivery.hpp"
#include "memory.hpp"
#include "resources.hpp"
#include "scheduler.hpp"

namespace grove::internal {

namespace {
constexpr std::size_t cache_max = 512;    // per-worker free indices kept before spilling
constexpr std::size_t cache_batch = 256;  // moved between a cache and the global list at once
// Room under the limit a worker reserves at once; it keeps at most twice that (process_table.hpp).
constexpr std::int64_t reserve_batch = 64;

// One more in a count of process_table::counts: a worker's own with a load and a store (only it
// writes there: no read-modify-write, its line stays in its core), the foreign set's with an RMW.
// release: a reader whose sum says "none in use" (acquire) sees what each return published.
void count_one(std::atomic<std::uint64_t>& c, bool own) noexcept {
  if (own) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  } else {
    c.fetch_add(1, std::memory_order_acq_rel);  // acq_rel: as the release above, among foreign threads
  }
}

// Every live table, for processes_in_use (process-wide), and what tables already destroyed left out.
struct table_registry {
  std::mutex lock;
  std::vector<const process_table*> tables;  // guarded by lock
  std::uint64_t left_out = 0;                // guarded by lock
};
table_registry& tables() noexcept {
  static auto* r = new table_registry;  // never destroyed: a detached worker may end a runtime after exit's destructors
  return *r;
}
}  // namespace

process_table::process_table(grove::runtime::state& owner, std::size_t limit, unsigned workers)
    : owner_(owner), limit_(limit), unreserved_(static_cast<std::int64_t>(limit)), caches_(workers) {
  // The margin: exited PCBs a sender still holds, and those waiting in a worker's batch to be
  // finalized (worker.cpp, "Finalizing in batches").
  capacity_ = limit + limit / 64 + 1024 + std::size_t{finalize_batch} * workers;
  capacity_ = (capacity_ + chunk_processes - 1) / chunk_processes * chunk_processes;
  reserved_bytes_ = capacity_ * sizeof(process);
  base_ = static_cast<process*>(reserve_region(reserved_bytes_, true));
  auto& r = tables();
  std::lock_guard<std::mutex> g(r.lock);
  try {
    r.tables.push_back(this);
  } catch (...) {
    release_region(base_, reserved_bytes_);
    throw;
  }
}

process_table::~process_table() {
  {
    auto& r = tables();
    std::lock_guard<std::mutex> g(r.lock);
    r.left_out += in_use(&counts::out, &counts::back);
    r.tables.erase(std::find(r.tables.begin(), r.tables.end(), this));
  }
  std::uint32_t n = constructed_.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i) base_[i].~process();
  release_region(base_, reserved_bytes_);
}

void process_table::construct_through(std::uint32_t index) {
  std::lock_guard<std::mutex> g(construct_lock_);
  std::uint32_t n = constructed_.load(std::memory_order_relaxed);  // only we write it, under the lock
  while (n <= index) {
    for (std::size_t i = 0; i < chunk_processes; ++i) ::new (base_ + n + i) process();
    n += chunk_processes;
    constructed_.store(n, std::memory_order_release);  // publishes the constructed PCBs to lookups
  }
}

std::uint32_t process_table::take_index(int worker) {
  if (worker >= 0) {
    auto& cache = caches_[static_cast<std::size_t>(worker)].indices;
    if (cache.empty()) {
      std::lock_guard<std::mutex> g(free_lock_);
      std::size_t take = std::min(cache_batch, free_.size());
      cache.insert(cache.end(), free_.end() - static_cast<std::ptrdiff_t>(take), free_.end());
      free_.resize(free_.size() - take);
    }
    if (!cache.empty()) {
      std::uint32_t i = cache.back();
      cache.pop_back();
      return i;
    }
  } else {
    std::lock_guard<std::mutex> g(free_lock_);
    if (!free_.empty()) {
      std::uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
  }
  std::uint32_t i = next_fresh_.fetch_add(1, std::memory_order_relaxed);  // a unique ticket is all we need
  if (i >= capacity_) return ~std::uint32_t{0};
  if (i >= constructed_.load(std::memory_order_acquire)) construct_through(i);
  return i;
}

void process_table::give_index(std::uint32_t index, int worker) noexcept {
  try {
    if (worker >= 0 && static_cast<std::size_t>(worker) < caches_.size()) {
      auto& cache = caches_[static_cast<std::size_t>(worker)].indices;
      cache.push_back(index);
      if (cache.size() >= cache_max) {
        std::lock_guard<std::mutex> g(free_lock_);
        free_.insert(free_.end(), cache.end() - cache_batch, cache.end());
        cache.resize(cache.size() - cache_batch);
      }
      return;
    }
    std::lock_guard<std::mutex> g(free_lock_);
    free_.push_back(index);
  } catch (...) {
    // Out of memory for the free list: the index is lost (the table has a margin), nothing else.
  }
}

std::int64_t process_table::take_unreserved(std::int64_t most) noexcept {
  std::int64_t have = unreserved_.load(std::memory_order_relaxed);
  // acq_rel: one order of takes and returns on the rest, as the shared count had
  while (have > 0 && !unreserved_.compare_exchange_weak(have, have - std::min(have, most), std::memory_order_acq_rel,
                                                        std::memory_order_relaxed)) {
  }
  return have > 0 ? std::min(have, most) : 0;
}

void process_table::take_back_reservations() noexcept {
  for (worker_cache& w : caches_) {
    // acq_rel: a worker's later take reads zero, or what it returned after this
    const std::int64_t had = w.reserved.exchange(0, std::memory_order_acq_rel);
    if (had > 0) unreserved_.fetch_add(had, std::memory_order_acq_rel);
  }
}

bool process_table::take_room(int worker) noexcept {
  if (worker >= 0 && static_cast<std::size_t>(worker) < caches_.size()) {
    auto& reserved = caches_[static_cast<std::size_t>(worker)].reserved;
    std::int64_t have = reserved.load(std::memory_order_relaxed);
    // acq_rel: against take_back_reservations' exchange (no room is taken twice)
    while (have > 0)
      if (reserved.compare_exchange_weak(have, have - 1, std::memory_order_acq_rel, std::memory_order_relaxed)) return true;
    std::int64_t got = take_unreserved(reserve_batch);
    if (got == 0) {
      take_back_reservations();
      got = take_unreserved(reserve_batch);
    }
    if (got == 0) return false;
    if (got > 1) reserved.fetch_add(got - 1, std::memory_order_acq_rel);  // acq_rel: as above
    return true;
  }
  if (take_unreserved(1) == 1) return true;
  take_back_reservations();
  return take_unreserved(1) == 1;
}

void process_table::mark_exited(int worker) noexcept {
  if (worker >= 0 && static_cast<std::size_t>(worker) < caches_.size()) {
    auto& reserved = caches_[static_cast<std::size_t>(worker)].reserved;
    std::int64_t have = reserved.fetch_add(1, std::memory_order_acq_rel) + 1;  // acq_rel: as in take_room
    // More than two batches: one goes back, so room does not pile up on a worker that only exits.
    while (have > 2 * reserve_batch) {
      if (reserved.compare_exchange_weak(have, have - reserve_batch, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        unreserved_.fetch_add(reserve_batch, std::memory_order_acq_rel);
        break;
      }
    }
    return;
  }
  unreserved_.fetch_add(1, std::memory_order_acq_rel);  // acq_rel: as in take_unreserved
}

std::size_t process_table::live() const noexcept {
  std::int64_t free = unreserved_.load(std::memory_order_acquire);
  for (const worker_cache& w : caches_) free += w.reserved.load(std::memory_order_acquire);
  const std::int64_t n = static_cast<std::int64_t>(limit_) - free;
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

process* process_table::allocate(int worker, process_kind kind) {
  if (!take_room(worker)) return nullptr;
  std::uint32_t index = take_index(worker);
  if (index == ~std::uint32_t{0}) {
    mark_exited(worker);
    return nullptr;
  }
  process* p = base_ + index;
  std::uint32_t serial = static_cast<std::uint32_t>(p->pid_bits.load(std::memory_order_relaxed) >> 32) + 1;
  if (serial == 0) serial = 1;  // serial 0 is never used, so no pid equals the null pid
  p->pid_bits.store(pid::from_parts(index, serial).bits(), std::memory_order_relaxed);  // published by refs below
  p->control.store(ctl_notified, std::memory_order_relaxed);  // born queued: wakes are no-ops until its first run (scheduler.cpp)
  p->has_name.store(false, std::memory_order_relaxed);                                  // likewise
  p->reset(kind);  // kind is read by wake() through any pid, however the waker got it: published with the rest
  counts& c = counts_for(worker);  // before the PCB is visible
  count_one(c.out, &c != &foreign_counts_);
  if (kind == process_kind::scheduled) count_one(c.scheduled_out, &c != &foreign_counts_);
  p->refs.store(1, std::memory_order_release);  // publishes the fields above to acquire() in other threads
  return p;
}

process* process_table::acquire(pid id) noexcept {
  std::uint32_t index = id.index();
  if (id.is_null() || id.is_remote() || index >= constructed_.load(std::memory_order_acquire)) return nullptr;
  process* p = base_ + index;
  // acquire: a zero here (the process is gone and finalized) pairs with the last release's acq_rel
  // fetch_sub, so a caller told "not alive" sees everything the process did before it exited
  std::uint32_t r = p->refs.load(std::memory_order_acquire);
  do {
    if (r == 0) return nullptr;
    // acquire: pairs with allocate()'s release of refs, so the pid we read next is this incarnation's
  } while (!p->refs.compare_exchange_weak(r, r + 1, std::memory_order_acquire, std::memory_order_acquire));  // failure: as the load above
  if (p->pid_bits.load(std::memory_order_relaxed) != id.bits()) {
    release(p, -1);
    return nullptr;
  }
  return p;
}

void process_table::release(process* p, int worker) noexcept {
  // acq_rel: the last releaser must see every other holder's pushes (acquire); ours are published (release)
  if (p->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (worker >= 0 && owner_.workers[static_cast<unsigned>(worker)]->defer_finalize(p)) return;
  finalize_process(owner_, p);
  give_back(p, worker);
}

void process_table::finish_release(process* p, int worker) noexcept {
  finalize_waited_out(owner_, p);
  give_back(p, worker);
}

void process_table::give_back(process* p, int worker) noexcept {
  const bool scheduled = p->kind == process_kind::scheduled;
  give_index(static_cast<std::uint32_t>(p - base_), worker);
  counts& c = counts_for(worker);
  count_one(c.back, &c != &foreign_counts_);
  if (scheduled) {
    count_one(c.scheduled_back, &c != &foreign_counts_);  // a waiter that sums zero sees what this exit released
    owner_.scheduled_released();
  }
}

std::uint64_t process_table::in_use(std::atomic<std::uint64_t> counts::*out, std::atomic<std::uint64_t> counts::*back) const noexcept {
  // Every `back` first, then every `out` (acquire: a later load is not read before an earlier one):
  // returns read early and hand-outs read late make the sum at least the true number at the moment
  // between the two passes.
  std::uint64_t returned = (foreign_counts_.*back).load(std::memory_order_acquire);
  for (const worker_cache& w : caches_) returned += (w.counted.*back).load(std::memory_order_acquire);
  std::uint64_t handed = (foreign_counts_.*out).load(std::memory_order_acquire);
  for (const worker_cache& w : caches_) handed += (w.counted.*out).load(std::memory_order_acquire);
  return handed - returned;
}

std::size_t process_table::scheduled_in_use() const noexcept {
  return static_cast<std::size_t>(in_use(&counts::scheduled_out, &counts::scheduled_back));
}

std::size_t process_table::processes_in_use() noexcept {
  auto& r = tables();
  std::lock_guard<std::mutex> g(r.lock);
  std::uint64_t n = r.left_out;
  for (const process_table* t : r.tables) n += t->in_use(&counts::out, &counts::back);
  return static_cast<std::size_t>(n);
}

}  // namespace grove::internal
