// mailbox.hpp: a process's mailbox, the queue that messages and signals arrive in.
//
// Two parts, as in BEAM:
//   - the inbox, an intrusive multi-producer single-consumer queue (Dmitry Vyukov's design): any
//     thread pushes with one atomic exchange; only the owning process pops. An empty inbox is three
//     words and a 16-byte stub node (32 bytes) — a million processes cannot afford a moodycamel queue
//     (616+ bytes each, runtime/DESIGN.md §3).
//   - the saved list, owned by the process alone: messages taken from the inbox that no receive has
//     matched yet, in arrival order. receive scans it, then pulls more from the inbox.
// push() reports whether the inbox was empty (as Pony's does) only approximately, so the sender does not
// rely on it: whether to schedule the receiver is decided by the process's control word
// (scheduler.cpp, "process states").
//
// Orders, argued once here:
//   push:  n->next = null (relaxed: n is not yet reachable by anyone);
//          prev = head.exchange(n, acq_rel): release publishes n's contents to whoever reads head,
//            acquire orders us after the previous pusher (so prev is fully built);
//          prev->next.store(n, release): publishes n to the consumer, which loads next with acquire.
//   pop:   every next load is acquire (pairs with the release above). The consumer returns a node only
//          once the node after it is linked (or it is the last one: then it re-pushes the stub). So a
//          pusher between its two steps (exchanged in, not yet linked) hides from the consumer the node
//          just before its own, and every node behind it, even nodes whose senders have already woken
//          the process: it finds nothing, parks, and consumes their wake-ups. A pusher that wakes the
//          process after linking makes that safe: the process looks again and finds everything.
//   push_lazily (link, unlink, monitor and demonitor signals, which need no wake-up of their own) must
//          wake the process too when its gap may have hidden anything: when the node before its own
//          is not the stub (that node may be a message the process was woken for), or when someone has
//          pushed behind it meanwhile (their wake-up may have been spent). It learns the second with a
//          read-modify-write on head after linking, which reads the latest value: still its own node
//          means nobody has pushed behind it yet, and whoever does will synchronise with that RMW and
//          see its link. When the process is idle its inbox ends at the stub, so the common lazy push
//          (to an idle process) wakes nothing. Without this a message could wait behind a signal until
//          something else woke the process, for ever in an idle runtime (tests/stress/mailbox_race_test.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <grove/detail/message_node.hpp>

namespace grove::internal {

using detail::message_node;

class inbox {
 public:
  inbox() noexcept : head_(&stub_), tail_(&stub_) {}
  inbox(const inbox&) = delete;
  inbox& operator=(const inbox&) = delete;

  // Any thread. Takes ownership of n.
  void push(message_node* n) noexcept { link_in(n); }

  // Any thread, for a node that needs no wake-up of its own. Takes ownership of n. True if the owner
  // must be woken all the same (see the file comment).
  bool push_lazily(message_node* n) noexcept {
    message_node* prev = link_in(n);
    if (prev != &stub_) return true;  // the node before ours could not be popped until now
    message_node* expected = n;
    // acq_rel: whoever exchanges head after this RMW synchronises with it, so sees our link; a failed
    // CAS means someone already has, and the wake the caller then sends publishes our link.
    return !head_.compare_exchange_strong(expected, n, std::memory_order_acq_rel, std::memory_order_relaxed);
  }

  // Owner only. The oldest node, or nullptr if empty (or a push is half done: see file comment).
  message_node* pop() noexcept {
    message_node* tail = tail_;
    message_node* next = tail->next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;  // a push is in progress
    push(&stub_);
    next = tail->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  // Owner only, or any thread once no pusher can exist: whether anything may be waiting.
  bool maybe_nonempty() const noexcept {
    return tail_ != &stub_ || tail_->next.load(std::memory_order_acquire) != nullptr;
  }

 private:
  // Both steps of a push (see file comment); returns the node ours was linked after.
  message_node* link_in(message_node* n) noexcept {
    n->next.store(nullptr, std::memory_order_relaxed);  // n is private to us until the exchange
    message_node* prev = head_.exchange(n, std::memory_order_acq_rel);  // see file comment
    prev->next.store(n, std::memory_order_release);     // publishes n to the consumer
    return prev;
  }

  std::atomic<message_node*> head_;  // shared: producers exchange it
  message_node* tail_;               // owner: the consumer
  message_node stub_;                // the permanent dummy node of Vyukov's design
};

// The owner's list of received-but-unmatched nodes, in arrival order. Owner only, but its size.
class saved_list {
 public:
  void append(message_node* n) noexcept {
    n->next.store(nullptr, std::memory_order_relaxed);  // owner-only list: the atomic is just storage
    if (tail_) {
      tail_->next.store(n, std::memory_order_relaxed);
    } else {
      head_ = n;
    }
    tail_ = n;
    size_.store(size_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // owner writes; see size_
    ++received_;
  }
  // Removes the node after `prev` (or the head when prev is null) and returns it.
  message_node* remove_after(message_node* prev) noexcept {
    message_node* n = prev ? next_of(prev) : head_;
    message_node* after = next_of(n);
    if (prev) {
      prev->next.store(after, std::memory_order_relaxed);
    } else {
      head_ = after;
    }
    if (tail_ == n) tail_ = prev;
    size_.store(size_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);  // as in append
    return n;
  }
  static message_node* next_of(const message_node* n) noexcept { return n->next.load(std::memory_order_relaxed); }
  message_node* head() const noexcept { return head_; }
  message_node* tail() const noexcept { return tail_; }
  std::uint32_t size() const noexcept { return size_.load(std::memory_order_relaxed); }  // owner, or a snapshot from any thread
  bool empty() const noexcept { return head_ == nullptr; }
  // Messages ever appended (wrapping): the worker that runs the owner adds the difference over each
  // run to its count of messages received (worker.cpp). Owner only.
  std::uint32_t received() const noexcept { return received_; }

 private:
  message_node* head_ = nullptr;
  message_node* tail_ = nullptr;
  // Written by the owner only (a load and a store: no RMW on the receive path); read by any thread
  // for introspection (top_processes), relaxed: a snapshot, ordered with nothing.
  std::atomic<std::uint32_t> size_{0};
  std::uint32_t received_ = 0;  // owner: fills the padding after size_ (the PCB stays 192 bytes)
};

}  // namespace grove::internal
