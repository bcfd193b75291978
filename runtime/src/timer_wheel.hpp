// runtime/src/timer_wheel.hpp: the hierarchical timing wheel that holds one worker's pending timers.
//
// WHAT IT IS
//   A pure, single-threaded store of intrusive timer_nodes keyed by an absolute deadline in steady-clock
//   nanoseconds. Nothing here is atomic: the worker that owns a wheel holds its lock around every call.
//   It never allocates. A node lives inside a process control block (so it is at most 32 bytes); the
//   wheel is a fixed array of 6 x 64 + 3 lists (head and tail pointers) and six 64-bit bitmaps, ~6.2 KiB.
//   Header-only: advance() is a template and the rest is a handful of short inline functions.
//   Lists are doubly linked, null-terminated and FIFO; the wheel keeps each list's head and tail.
//
// TICK AND LEVEL MATH
//   Time is cut into ticks of 2^18 ns (262.144 us); a deadline's tick is deadline_ns >> 18. The wheel
//   has 6 levels of 64 slots. A level-l slot spans 64^l ticks and the whole level 64^(l+1) ticks:
//     level  slot spans   level spans
//       0    262 us       16.8 ms
//       1    16.8 ms      1.07 s
//       2    1.07 s       68.7 s
//       3    68.7 s       73.3 min
//       4    73.3 min     78.2 h
//       5    78.2 h       208.5 days   (2^36 ticks = 2^54 ns)
//   The wheel stands at tick C (current_tick_). A node whose tick t >= C lives at
//       level l = min(5, (bit_width(t ^ C) - 1) / 6)   (level 0 when t == C),  slot (t >> 6l) & 63,
//   i.e. the level is the group of six bits, counted from the top, in which t first differs from C.
//
// INVARIANTS (between calls; advance restores them before it returns)
//   1. Every node in a wheel slot has tick t >= C and sits where the formula puts it for the present C.
//      At levels 1-4 that slot is strictly after C's own slot at that level, and t agrees with C on
//      every bit above the level, so slots of levels 0-4 never wrap around.
//   2. Level 0's slot C & 63 is the current slot: nodes due later in the current tick. They stay linked
//      until now_ns reaches their deadline; the tick never makes a node fire early.
//   3. Level 5 also takes every tick beyond the wheel's range (the formula clamps). Its slots wrap: slot
//      s is next looked at the first time after C whose bits 30..35 equal s, which is never after the
//      tick of any node in it. A far node is then re-placed (one turn, 208 days, later), never fired.
//   4. The due list holds nodes inserted with deadline_ns <= now_ns_; they fire at the next advance.
//   5. occupied_[l] bit s is set iff the list of level l, slot s is non-empty.
//   6. current_min_ns_ and due_min_ns_ are lower bounds on the deadlines of the current slot and the due
//      list (exact after a scan; a removal may leave them low, which costs one needless scan).
//   7. C == now_ns_ >> tick_shift (C may lag after fn threw; the next advance catches up).
//   From 1 and 3: every slot of level l+1 starts after the end of C's level-l span, so the next slot to
//   come due is in the lowest level with an occupied slot other than the current slot, found with one
//   countr_zero; no walking tick by tick.
//
// ADVANCE(now) IN STEPS
//   1. Fire the whole due list.
//   2. If the current slot may hold a due node (current_min_ns_ <= now), fire each node in it whose
//      deadline <= now and re-link the rest, recomputing current_min_ns_.
//   3. Find the next slot to come due (step above). Stop if it starts after now's tick.
//   4. Move C to that slot's start. Level 0: it becomes the current slot. Higher: cascade it, re-linking
//      every node by the formula into a lower level (or the current slot). Go to 2.
//   5. Set C to now's tick. (The current slot is empty whenever C < now's tick: all of it was due.)
//   Cost: O(occupied slots crossed + nodes cascaded + nodes in a scanned current slot), never O(ticks
//   crossed): an idle hour is a few countr_zero calls. A node cascades at most 5 times, plus once every
//   208 days while it is beyond the range. Result: advance fires exactly the nodes with deadline <= now,
//   never one early, so a worker that advances promptly is late by at most its advance interval.
//
// RE-ENTRANCY
//   fn may remove any node and insert any node; every node always names the list it is on (list_), so
//   remove() works wherever it waits. The lists fired from are built for it:
//   - There are two due lists. insert uses one; advance swaps them and fires the other to its end, so a
//     node fn inserts with deadline <= now waits for the next advance, and a callback that re-arms its
//     own timer with no delay cannot loop forever.
//   - The current slot is fired by popping its head. Nodes not yet due move to the keep list, and so do
//     nodes fn inserts into this slot when they come up (never due in this advance), so the loop ends;
//     afterwards the keep list returns to the slot.
//   - A cascade runs no callback, so it just detaches the slot and re-links each node: one pass.
//   advance must not be called from fn (asserted). If fn throws, the scope guard puts the keep list and
//   the unfired due nodes back; nothing is lost and the next advance fires them.
//
// ORDER
//   Slot lists are FIFO, so timers armed in one tick through the same path fire in the order armed. Nodes
//   fire tick by tick; within a tick the order is that of the slot list, not of deadline_ns. Callers must
//   not rely on more than "never early".
//
// WHY A WHEEL AND NOT A HEAP
//   A worker may hold a million pending timers, and in Erlang-style code most are cancelled before they
//   fire (receive ... after, request deadlines). A binary heap pops and cancels in O(log n), ~20 levels
//   at 1M with a cache miss at most of them, and insert is O(log n) in the worst case; cancellation needs
//   either an index stored in each node and rewritten on every swap, or lazy deletion, which keeps
//   cancelled entries and grows with churn. The wheel's insert and cancel are a list push/unlink and a
//   bit set/clear: O(1), and the node needs no index. Its price is the cascade: a node is visited once
//   per level it passes through (two or three for deadlines of seconds) before it fires.
//   Rejected too:
//   - A single-level wheel walked tick by tick (Varghese & Lauck scheme 4): an idle hour is 13.7M ticks.
//   - Rounding each deadline up to its tick and firing whole slots, as tokio does: no per-node check in
//     the current slot, but advance(now) could not fire exactly the nodes with deadline <= now, and
//     timers would always be up to a tick late even when the worker wakes on time.
//   - Keeping the current slot sorted: O(k) insert. Instead a scan of the current slot is skipped unless
//     current_min_ns_ says something is due. A worker that prefers fewer wake-ups to sub-tick precision
//     rounds next_expiry() up to a multiple of tick_ns; the whole tick then fires in one advance.
//   - Circular lists with sentinel nodes: 387 x 32 B = 12 KiB of heads instead of 6 KiB.
//   - One pointer per list, the head's prev pointing at the tail (3 KiB): push_back then has to load the
//     head node, a cache miss on every insert at 1M timers; the tail array keeps inserts to stores.
//   - Moving a slot to a private firing list before firing it (simplest re-entrancy): relabelling every
//     node first doubled the cache misses of a large slot; the two due lists and the keep list avoid it.
//   - A separate overflow list for deadlines beyond 208 days: it would need its own check on every
//     turn; letting level 5 wrap does the same with no extra case in advance.
//
// MEASURED by bench/grove/timer_wheel_probe.cpp on this project's machine kind (a 2-vCPU AMD EPYC guest),
//   g++ 12 -O2, 1,000,000 pending timers, deadlines uniform over 10 s, nodes touched in random order.
//   Other jobs kept the load average at 4-7, so each figure is the median of 7 runs (each run prints the
//   median of 5 rounds), with the lowest and highest run in brackets. From the repository root:
//     g++ -std=c++20 -O2 -Iruntime/src bench/grove/timer_wheel_probe.cpp -o /tmp/twp && /tmp/twp
//   insert, 1M pending                               61 ns  [38, 90]
//   remove, 1M pending                               75 ns  [40, 115]
//   advance, per fired timer, callback re-inserts   684 ns  [448, 1039]   (steady at 1M pending)
//   advance, per fired timer, draining 1M           669 ns  [422, 1043]
//   advance across an idle hour, every 1 ms          35 ns per call  [33, 65]
//   advance across an idle hour in one call          38 ns  [24, 39]
//   bytes: 32 per timer (the node, inside the process control block) + 6,288 per wheel.
//   Why a fire costs ~0.5-0.7 us: a dependent cache miss costs ~260 ns on this guest (a pointer chase over
//   32 MB), and a timer 0-10 s away is visited ~2.9 times (1.9 cascades on average, then the fire), each
//   a miss when a million nodes are scattered. In the runtime the fire's miss is on the process control
//   block that the message delivery touches next anyway.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>

namespace grove::internal {

class timer_wheel;

// An intrusive timer: embedded in the process control block. Owned by the wheel while linked: only the
// wheel writes prev, next and list_ then, and the node must not be moved, copied or destroyed.
struct timer_node {
  timer_node* prev = nullptr;     // owner: the wheel; null at a list's head
  timer_node* next = nullptr;     // owner: the wheel; null at a list's tail
  std::uint64_t deadline_ns = 0;  // absolute time, steady-clock nanoseconds; set by insert

  bool is_linked() const noexcept { return list_ != unlinked_list; }

 private:
  friend class timer_wheel;
  static constexpr std::uint16_t unlinked_list = 0xffff;
  std::uint16_t list_ = unlinked_list;  // owner: the wheel; index of the list that holds the node
};
static_assert(sizeof(timer_node) <= 32, "timer_node lives in every process control block: keep it small");

class timer_wheel {
 public:
  static constexpr unsigned tick_shift = 18;  // one tick = 2^18 ns = 262,144 ns
  static constexpr std::uint64_t tick_ns = std::uint64_t{1} << tick_shift;
  static constexpr unsigned level_count = 6;
  static constexpr unsigned slot_bits = 6;
  static constexpr unsigned slot_count = 1u << slot_bits;  // per level
  // Ticks the whole wheel spans: 2^36, ~208.5 days; later deadlines wait in level 5 (invariant 3).
  static constexpr std::uint64_t range_ticks = std::uint64_t{1} << (level_count * slot_bits);

  explicit timer_wheel(std::uint64_t now_ns) noexcept
      : now_ns_(now_ns), current_tick_(now_ns >> tick_shift) {}
  timer_wheel(const timer_wheel&) = delete;
  timer_wheel& operator=(const timer_wheel&) = delete;
  // Does not touch the nodes: unlink them first (clear) if they outlive the wheel and will be reused.
  ~timer_wheel() = default;

  // Links n (not linked) to fire at deadline_ns; a deadline at or before the wheel's current time fires
  // at the next advance. O(1).
  void insert(timer_node* n, std::uint64_t deadline_ns) noexcept;

  // Unlinks n, which must be linked in this wheel. O(1).
  void remove(timer_node* n) noexcept;

  // Unlinks and calls fn(timer_node*) for every node whose deadline_ns <= now_ns; never one early.
  // now_ns never goes backwards (a smaller value counts as the current time). fn may insert and remove
  // nodes (see RE-ENTRANCY above); it may not call advance. Returns the number fired.
  template <class F>
  std::size_t advance(std::uint64_t now_ns, F&& fn);

  // The earliest time at which advance() could fire something; never later than the earliest pending
  // deadline (hence never later than it rounded up to a tick). It may be earlier: the start of a coarse
  // slot that only needs cascading, or a bound left low by a removal; advancing there fires nothing but
  // makes progress. std::nullopt when empty. Meant for outside advance (from fn it misses the nodes that
  // advance is still working through).
  std::optional<std::uint64_t> next_expiry() const noexcept;

  // Unlinks every node without firing it. O(number of nodes). Not from inside advance.
  void clear() noexcept;

  std::size_t size() const noexcept { return size_; }  // linked nodes
  bool empty() const noexcept { return size_ == 0; }
  // The latest time given to advance or the constructor.
  std::uint64_t now_ns() const noexcept { return now_ns_; }

 private:
  static constexpr std::uint64_t slot_mask = slot_count - 1;
  // Lists 0..383 are the wheel's slots (level * 64 + slot); then the two due lists, which take turns
  // (RE-ENTRANCY), and the keep list, which holds the current slot's not-yet-due nodes during a scan.
  static constexpr std::uint16_t wheel_list_count = level_count * slot_count;
  static constexpr std::uint16_t due_list_a = wheel_list_count;
  static constexpr std::uint16_t due_list_b = wheel_list_count + 1;
  static_assert((due_list_a ^ 1) == due_list_b, "advance swaps the due lists with ^ 1");
  static constexpr std::uint16_t keep_list = wheel_list_count + 2;
  static constexpr std::size_t list_count = wheel_list_count + 3;
  static constexpr std::uint64_t no_deadline_ns = std::numeric_limits<std::uint64_t>::max();

  struct slot_event {
    std::uint64_t start_tick;  // the tick at which the slot comes due
    unsigned level;
    unsigned slot;
  };

  // Sets advancing_ for the duration of advance and, if fn throws, puts back the nodes advance was
  // working through (restore_after_throw).
  class advance_scope {
   public:
    explicit advance_scope(timer_wheel& w) noexcept : w_(w), exceptions_(std::uncaught_exceptions()) {
      w_.advancing_ = true;
    }
    ~advance_scope() {
      if (std::uncaught_exceptions() > exceptions_) w_.restore_after_throw();
      w_.advancing_ = false;
    }
    advance_scope(const advance_scope&) = delete;
    advance_scope& operator=(const advance_scope&) = delete;

   private:
    timer_wheel& w_;
    int exceptions_;  // in flight when advance began
  };

  static constexpr std::uint16_t list_index(unsigned level, unsigned slot) noexcept {
    return static_cast<std::uint16_t>(level * slot_count + slot);
  }
  std::uint16_t current_list() const noexcept {
    return list_index(0, static_cast<unsigned>(current_tick_ & slot_mask));
  }

  void push_back(std::uint16_t list, timer_node* n) noexcept;
  void unlink(timer_node* n) noexcept;  // from its list; leaves bitmaps and size_ alone
  void link_due(timer_node* n) noexcept;
  void link_by_tick(timer_node* n) noexcept;      // invariant 1's formula; needs tick >= current_tick_
  void unlink_from_slot(timer_node* n) noexcept;  // unlink, and clear the slot's bit if it empties
  void cascade(std::uint16_t list) noexcept;
  void restore_after_throw() noexcept;
  std::optional<slot_event> next_event() const noexcept;
  template <class F>
  std::size_t fire_due_list(F& fn);
  template <class F>
  std::size_t fire_current_slot(std::uint64_t now_ns, F& fn);

  struct node_list {
    timer_node* head = nullptr;
    timer_node* tail = nullptr;
  };
  // Every field: owner: the worker that holds the wheel's lock (the wheel is not thread-safe).
  std::array<node_list, list_count> lists_{};
  std::array<std::uint64_t, level_count> occupied_{};  // invariant 5
  std::uint64_t now_ns_;                               // the latest time given to advance or the constructor
  std::uint64_t current_tick_;  // C in the design comment; lags now_ns_ >> tick_shift only inside advance
  std::uint64_t current_min_ns_ = no_deadline_ns;  // invariant 6
  std::uint64_t due_min_ns_ = no_deadline_ns;      // invariant 6
  std::size_t size_ = 0;
  std::uint16_t due_list_ = due_list_a;  // the due list insert uses; advance fires the other one
  bool advancing_ = false;               // guards against advance re-entered from fn
};

inline void timer_wheel::push_back(std::uint16_t list, timer_node* n) noexcept {
  node_list& l = lists_[list];
  n->list_ = list;
  n->next = nullptr;
  n->prev = l.tail;
  if (l.tail != nullptr) {
    l.tail->next = n;  // a store: the old tail need not be in cache
  } else {
    l.head = n;
  }
  l.tail = n;
}

inline void timer_wheel::unlink(timer_node* n) noexcept {
  node_list& l = lists_[n->list_];
  if (n->prev != nullptr) {
    n->prev->next = n->next;
  } else {
    l.head = n->next;
  }
  if (n->next != nullptr) {
    n->next->prev = n->prev;
  } else {
    l.tail = n->prev;
  }
  n->prev = nullptr;
  n->next = nullptr;
  n->list_ = timer_node::unlinked_list;
}

inline void timer_wheel::link_due(timer_node* n) noexcept {
  due_min_ns_ = std::min(due_min_ns_, n->deadline_ns);
  push_back(due_list_, n);
}

inline void timer_wheel::link_by_tick(timer_node* n) noexcept {
  const std::uint64_t tick = n->deadline_ns >> tick_shift;
  assert(tick >= current_tick_ && "timer_wheel::link_by_tick: node's tick is behind the wheel");
  const std::uint64_t differing = tick ^ current_tick_;
  unsigned level = 0;
  if (differing != 0) {
    level = (static_cast<unsigned>(std::bit_width(differing)) - 1) / slot_bits;
    if (level >= level_count) level = level_count - 1;  // beyond the range: level 5 wraps (invariant 3)
  } else {
    current_min_ns_ = std::min(current_min_ns_, n->deadline_ns);  // the current slot
  }
  const auto slot = static_cast<unsigned>((tick >> (level * slot_bits)) & slot_mask);
  push_back(list_index(level, slot), n);
  occupied_[level] |= std::uint64_t{1} << slot;
}

inline void timer_wheel::insert(timer_node* n, std::uint64_t deadline_ns) noexcept {
  assert(!n->is_linked() && "timer_wheel::insert: node is already linked");
  n->deadline_ns = deadline_ns;
  ++size_;
  if (deadline_ns <= now_ns_) {
    link_due(n);
  } else {
    link_by_tick(n);  // deadline > now_ns_ >= current_tick_'s start, so tick >= current_tick_
  }
}

inline void timer_wheel::unlink_from_slot(timer_node* n) noexcept {
  const std::uint16_t list = n->list_;
  unlink(n);
  if (list < wheel_list_count && lists_[list].head == nullptr) {
    occupied_[list / slot_count] &= ~(std::uint64_t{1} << (list % slot_count));
  }
}

inline void timer_wheel::remove(timer_node* n) noexcept {
  assert(n->is_linked() && n->list_ < list_count && "timer_wheel::remove: node is not linked");
  unlink_from_slot(n);
  --size_;
}

// ADVANCE step 4: re-links every node of a slot that came due relative to the new current_tick_. No
// callback runs here, so the list can be detached without relabelling its nodes: one pass, one cache
// miss per node.
inline void timer_wheel::cascade(std::uint16_t list) noexcept {
  timer_node* n = lists_[list].head;
  lists_[list] = {};
  occupied_[list / slot_count] &= ~(std::uint64_t{1} << (list % slot_count));
  while (n != nullptr) {
    timer_node* next = n->next;
    link_by_tick(n);  // lands in a lower level, or back in level 5 one turn later (invariant 3)
    n = next;
  }
}

inline void timer_wheel::restore_after_throw() noexcept {
  if (lists_[current_list()].head != nullptr) {  // a scan stopped part way; all of the slot is in this tick
    current_min_ns_ = std::min(current_min_ns_, current_tick_ << tick_shift);
  }
  while (timer_node* n = lists_[keep_list].head) {  // not due, in this tick: back to the current slot
    unlink(n);
    link_by_tick(n);
  }
  while (timer_node* n = lists_[due_list_ ^ 1].head) {  // due and unfired: to the due list insert uses
    unlink(n);
    link_due(n);
  }
}

inline std::optional<timer_wheel::slot_event> timer_wheel::next_event() const noexcept {
  for (unsigned level = 0; level < level_count; ++level) {
    const std::uint64_t bits = occupied_[level];
    if (bits == 0) continue;
    const unsigned shift = level * slot_bits;
    const auto current_slot = static_cast<unsigned>((current_tick_ >> shift) & slot_mask);
    const std::uint64_t window_tick = (current_tick_ >> (shift + slot_bits)) << (shift + slot_bits);
    const std::uint64_t later = bits & ~((std::uint64_t{2} << current_slot) - 1);  // slots after C's
    if (later != 0) {
      const auto slot = static_cast<unsigned>(std::countr_zero(later));
      return slot_event{window_tick + (std::uint64_t{slot} << shift), level, slot};
    }
    if (level == 0) continue;  // only the current slot is occupied: not an event
    assert(level == level_count - 1 && "timer_wheel::next_event: a slot of levels 1-4 is behind the wheel");
    // Level 5 wraps: its lowest occupied slot comes due in the next turn (invariant 3).
    const auto slot = static_cast<unsigned>(std::countr_zero(bits));
    return slot_event{window_tick + range_ticks + (std::uint64_t{slot} << shift), level, slot};
  }
  return std::nullopt;
}

inline std::optional<std::uint64_t> timer_wheel::next_expiry() const noexcept {
  if (lists_[due_list_].head != nullptr) return due_min_ns_;
  if (lists_[current_list()].head != nullptr) return current_min_ns_;  // precedes every other slot
  if (const std::optional<slot_event> e = next_event()) return e->start_tick << tick_shift;
  return std::nullopt;
}

inline void timer_wheel::clear() noexcept {
  assert(!advancing_ && "timer_wheel::clear: called from advance's callback");
  for (node_list& l : lists_) {
    while (timer_node* n = l.head) unlink(n);
  }
  occupied_ = {};
  current_min_ns_ = no_deadline_ns;
  due_min_ns_ = no_deadline_ns;
  size_ = 0;
}

// ADVANCE step 1: fires the due list. Inserts from fn go to the other due list, so they wait for the
// next advance, and every node keeps naming the list it is on, so fn may remove any of them.
template <class F>
std::size_t timer_wheel::fire_due_list(F& fn) {
  const std::uint16_t firing = due_list_;
  due_list_ ^= 1;
  due_min_ns_ = no_deadline_ns;
  std::size_t fired = 0;
  while (timer_node* n = lists_[firing].head) {
    unlink(n);
    --size_;
    ++fired;
    fn(n);  // may insert or remove anything, including nodes still waiting on this list
  }
  return fired;
}

// ADVANCE step 2: fires the nodes of the current slot whose deadline <= now_ns, popping them from the
// slot itself. Nodes not yet due wait on the keep list meanwhile, and so do nodes that fn inserts into
// this slot (they are never due in this advance), so the loop ends; then they return to the slot.
template <class F>
std::size_t timer_wheel::fire_current_slot(std::uint64_t now_ns, F& fn) {
  const std::uint16_t current = current_list();
  current_min_ns_ = no_deadline_ns;
  std::size_t fired = 0;
  while (timer_node* n = lists_[current].head) {
    unlink_from_slot(n);
    if (n->deadline_ns <= now_ns) {
      --size_;
      ++fired;
      fn(n);  // may insert or remove anything, including nodes still in this slot or on the keep list
    } else {
      push_back(keep_list, n);
    }
  }
  while (timer_node* n = lists_[keep_list].head) {
    unlink(n);
    link_by_tick(n);  // back into the current slot, recomputing current_min_ns_
  }
  return fired;
}

template <class F>
std::size_t timer_wheel::advance(std::uint64_t now_ns, F&& fn) {
  assert(!advancing_ && "timer_wheel::advance: called from its own callback");
  if (now_ns > now_ns_) now_ns_ = now_ns;
  now_ns = now_ns_;  // from here on, fn's inserts with deadline <= now_ns go to the due list
  const std::uint64_t target_tick = now_ns >> tick_shift;
  advance_scope scope(*this);
  std::size_t fired = 0;
  if (lists_[due_list_].head != nullptr) fired += fire_due_list(fn);  // step 1
  for (;;) {
    if (lists_[current_list()].head != nullptr && current_min_ns_ <= now_ns) {  // step 2
      fired += fire_current_slot(now_ns, fn);
    }
    const std::optional<slot_event> e = next_event();  // step 3
    if (!e || e->start_tick > target_tick) break;
    assert(lists_[current_list()].head == nullptr && "timer_wheel::advance: moving past a non-empty slot");
    current_tick_ = e->start_tick;  // step 4
    if (e->level == 0) {
      current_min_ns_ = e->start_tick << tick_shift;  // every node there is in this tick
    } else {
      current_min_ns_ = no_deadline_ns;
      cascade(list_index(e->level, e->slot));
    }
  }
  if (current_tick_ != target_tick) {  // step 5
    assert(lists_[current_list()].head == nullptr && "timer_wheel::advance: leaving a non-empty slot behind");
    current_tick_ = target_tick;
    current_min_ns_ = no_deadline_ns;
  }
  return fired;
}

}  // namespace grove::internal
