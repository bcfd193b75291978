// run_queue.hpp: a worker's local queue of runnable processes.
//
// A bounded ring of 256 entries (Go's runq): the owning worker pushes at the tail and pops at the
// head; idle workers steal half from the head. Owner and thieves are told apart by the functions
// they may call (push/pop: owner only; steal_half_into/size: any thread).
//
// Protocol and orders (the same as Go's runqput/runqget/runqgrab):
//   - tail_ is written only by the owner: it stores the entry (relaxed), then tail_ with release, so
//     a thief that loads tail_ with acquire sees the entry.
//   - head_ is advanced by CAS by the owner (pop) and by thieves (steal), acq_rel: whoever wins the
//     CAS owns the entries it read. A thief reads entries before its CAS; if an entry was consumed and
//     the slot reused meanwhile, head_ moved and the CAS fails, so the stale read is discarded.
//     Entries are atomics (relaxed) only so that this benign, discarded read is not a data race.
//   - A full queue is the caller's problem: push returns false, and the worker moves half of the
//     queue plus the new entry to the shared inject queue (worker.cpp).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace grove::internal {

struct process;

class run_queue {
 public:
  static constexpr std::uint32_t capacity = 256;

  // Owner only. False if full.
  bool push(process* p) noexcept {
    std::uint32_t h = head_.load(std::memory_order_acquire);  // pairs with consumers' CAS: slots they freed
    std::uint32_t t = tail_.load(std::memory_order_relaxed);  // only we write tail_
    if (t - h >= capacity) return false;
    slots_[t % capacity].store(p, std::memory_order_relaxed);
    tail_.store(t + 1, std::memory_order_release);  // publishes the entry to thieves
    return true;
  }

  // Owner only. The oldest entry, or nullptr.
  process* pop() noexcept {
    std::uint32_t h = head_.load(std::memory_order_acquire);
    for (;;) {
      std::uint32_t t = tail_.load(std::memory_order_relaxed);  // only we write tail_
      if (t == h) return nullptr;
      process* p = slots_[h % capacity].load(std::memory_order_relaxed);
      // acq_rel: acquire orders us after a thief's CAS; release hands the slot back for reuse
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return p;
    }
  }

  // Owner only: takes half of the entries (for moving to the inject queue when full). Returns how
  // many were written to out (at most capacity / 2).
  std::uint32_t pop_half(process** out) noexcept { return grab(out); }

  // Any thread (a thief): moves half of this queue's entries into out (room for capacity / 2).
  std::uint32_t steal_half(process** out) noexcept { return grab(out); }

  // Any thread: approximate.
  std::uint32_t size() const noexcept {
    std::uint32_t t = tail_.load(std::memory_order_relaxed);  // a racy snapshot is all callers want
    std::uint32_t h = head_.load(std::memory_order_relaxed);
    return t - h > capacity ? 0 : t - h;
  }

 private:
  std::uint32_t grab(process** out) noexcept {
    for (;;) {
      std::uint32_t h = head_.load(std::memory_order_acquire);  // after other consumers' CAS
      std::uint32_t t = tail_.load(std::memory_order_acquire);  // after the owner's pushes
      std::uint32_t n = t - h;
      n -= n / 2;
      if (n == 0) return 0;
      if (n > capacity / 2) continue;  // h and t read at different moments; read again
      for (std::uint32_t i = 0; i < n; ++i) out[i] = slots_[(h + i) % capacity].load(std::memory_order_relaxed);
      // acq_rel: success makes the entries ours and frees their slots for the owner
      if (head_.compare_exchange_strong(h, h + n, std::memory_order_acq_rel, std::memory_order_relaxed)) return n;
    }
  }

  alignas(64) std::atomic<std::uint32_t> head_{0};  // shared: owner and thieves (CAS)
  alignas(64) std::atomic<std::uint32_t> tail_{0};  // owner writes; thieves read
  alignas(64) std::array<std::atomic<process*>, capacity> slots_{};
};

}  // namespace grove::internal
