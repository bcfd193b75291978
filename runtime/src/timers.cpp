// timers.cpp: receive timeouts, sleeps and send_after, on one timer wheel per worker.
//
// Design:
//   - Each worker owns a hierarchical timing wheel (timer_wheel.hpp: O(1) insert and cancel, a
//     million pending timers cost only their nodes) guarded by a mutex. The owner is nearly the only
//     user, so the lock is uncontended; other threads take it only to cancel a timer that a migrated
//     process armed here, or to add a send_after from a foreign thread.
//   - A process's receive/sleep timeout is a node embedded in its PCB (no allocation). It is armed in
//     the wheel of the worker the process runs on, and disarmed by the process when its receive
//     returns (on any worker: it locks the wheel it armed in). A PCB node in the table's region is
//     told apart from a send_after node by its address.
//   - Firing never happens early (the wheel's rule), and the process compares the clock with its
//     deadline itself, so a timeout means "at least that long"; lateness is at most a wheel tick
//     (~0.26 ms) plus the time to get a worker. A worker asleep sleeps until its wheel's next
//     expiry, so an idle runtime with timers wakes exactly when one is due and never polls.
//   - send_after allocates a timer_state shared with the returned timer_ref. Cancelling takes the
//     wheel lock, so a timer is either cancelled (message destroyed, never delivered) or fired
//     (delivered), never both. A fired timer delivers outside the lock.
#include "timers.hpp"

#include <limits>

#include "delivery.hpp"
#include "exit_protocol.hpp"
#include "resources.hpp"

namespace grove::internal {

namespace {

// The timer_fire event of a send_after timer's message n to `to`, if its target is traced.
[[gnu::noinline]] void record_timer_fire(runtime_state& rt, pid to, const message_node* n) noexcept {
  process* q = rt.table.acquire(to);  // for its trace flags; a dead target: nobody to trace
  if (!q) return;
  if (tracing(trace::event_kind::timer_fire, q))
    record(trace::event_kind::timer_fire, 0, 0, to.bits(), 0, reinterpret_cast<std::uintptr_t>(n),
           reinterpret_cast<std::uintptr_t>(n->type));
  rt.table.release(q, worker_index_for(rt));
}

void lower_expiry_hint(worker& w) noexcept {
  // Under w.wheel_lock. relaxed: a hint that the owner re-reads; exact values come from the wheel.
  auto next = w.wheel.next_expiry();
  w.next_expiry_ns.store(next ? *next : ~0ull, std::memory_order_relaxed);
}

// Under w.wheel_lock, after inserting a timer due at deadline_ns: if the poller's holder sleeps
// past it, interrupt it (parking.cpp, step 4: the holder reads this wheel under the same lock after
// publishing poll_until, so one of us sees the other). Only the first such timer interrupts: it
// clears poll_until.
void wake_poller_if_later(runtime_state& rt, std::uint64_t deadline_ns) noexcept {
  std::uint64_t until = rt.poll_until.load(std::memory_order_relaxed);  // ordered by the wheel lock
  if (until != 0 && deadline_ns < until &&
      rt.poll_until.compare_exchange_strong(until, 0, std::memory_order_relaxed))  // the lock orders it
    rt.poller.interrupt();
}

}  // namespace

void arm_timeout(process* p, std::uint64_t deadline_ns) {
  runtime_state* rt = current_runtime();
  worker& w = *rt->workers[p->worker];
  std::lock_guard<std::mutex> g(w.wheel_lock);
  w.wheel.insert(&p->timer(), deadline_ns);
  p->timer_worker = static_cast<std::uint16_t>(w.index);
  p->timer_armed = true;
  lower_expiry_hint(w);
  wake_poller_if_later(*rt, deadline_ns);
}

void disarm_timeout(process* p) noexcept {
  if (!p->timer_armed) return;
  p->timer_armed = false;
  runtime_state* rt = current_runtime();
  if (!rt) return;
  worker& w = *rt->workers[p->timer_worker];
  std::lock_guard<std::mutex> g(w.wheel_lock);
  if (p->timer().is_linked()) w.wheel.remove(&p->timer());
}

void fire_due_timers(worker& w) {
  runtime_state& rt = w.rt;
  detail::timer_state* fired = nullptr;
  {
    std::lock_guard<std::mutex> g(w.wheel_lock);
    std::size_t n = w.wheel.advance(now_ns(), [&](timer_node* node) {
      if (rt.table.contains(node)) {
        // A process's timeout: it cannot exit while its node is linked (it must take this lock to
        // disarm), so waking it without a reference is safe.
        rt.wake(rt.table.process_at(node), trace::wake_cause::timeout);
      } else {
        auto* t = static_cast<detail::timer_state*>(node);
        t->pending.store(false, std::memory_order_release);  // under the lock; cancel_timer re-checks under it
        t->next_fired = fired;
        fired = t;
      }
    });
    w.timers_fired.fetch_add(n, std::memory_order_relaxed);  // statistics
    lower_expiry_hint(w);
  }
  while (fired) {
    detail::timer_state* t = fired;
    fired = t->next_fired;
    message_node* m = t->message;  // ours: no longer pending, so cancel_timer will not touch it
    t->message = nullptr;
    count_down(resources().timers);
    if (trace_mask.load(std::memory_order_relaxed) & trace::bit(trace::event_kind::timer_fire)) [[unlikely]]  // relaxed: a switch (tracer.hpp)
      record_timer_fire(rt, t->to, m);  // before the delivery: the receive cannot come first
    deliver(rt, t->to, m, true);  // a dead target counts a dead letter there
    t->self.reset();  // may free t
  }
}

void cancel_all_timers(runtime_state& rt) noexcept {
  for (auto& wp : rt.workers) {
    worker& w = *wp;
    detail::timer_state* dropped = nullptr;
    {
      std::lock_guard<std::mutex> g(w.wheel_lock);
      w.wheel.advance(std::numeric_limits<std::uint64_t>::max() / 2, [&](timer_node* node) {
        if (rt.table.contains(node)) return;  // cannot happen after every process has exited
        auto* t = static_cast<detail::timer_state*>(node);
        t->pending.store(false, std::memory_order_release);  // under the lock
        t->next_fired = dropped;
        dropped = t;
      });
    }
    while (dropped) {
      detail::timer_state* t = dropped;
      dropped = t->next_fired;
      if (t->message) detail::destroy_node(t->message);
      t->message = nullptr;
      count_down(resources().timers);
      t->self.reset();
    }
  }
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

namespace detail {

timer_ref send_after_node(pid to, message_node* n, std::int64_t delay_ns) {
  runtime_state* rt = current_runtime();
  if (!rt) {
    destroy_node(n);
    throw error(errc::not_running);
  }
  if (process* self = current_process()) {
    try {
      before_runtime_call(self, false);
    } catch (...) {
      destroy_node(n);
      throw;
    }
  }
  auto t = std::make_shared<timer_state>();
  t->rt = rt;
  t->to = to;
  t->message = n;
  worker* here = this_worker();
  bool foreign = !(here && &here->rt == rt);
  worker& w = foreign ? *rt->workers[rt->timer_round_robin.fetch_add(1, std::memory_order_relaxed) % rt->workers.size()]
                      : *here;
  std::uint64_t deadline = deadline_after_ns(delay_ns);  // never: stays in the wheel, unfired, until cancelled
  t->worker = static_cast<std::uint16_t>(w.index);
  {
    std::lock_guard<std::mutex> g(w.wheel_lock);
    t->self = t;
    w.wheel.insert(t.get(), deadline);
    t->pending.store(true, std::memory_order_release);  // under the lock
    lower_expiry_hint(w);
    wake_poller_if_later(*rt, deadline);
  }
  count_up(resources().timers);
  if (foreign) w.unpark_if_sleeping_past(deadline);
  return timer_ref(std::move(t));
}

}  // namespace detail

bool cancel_timer(const timer_ref& timer) noexcept {
  detail::timer_state* t = timer.state().get();
  if (!t || !t->pending.load(std::memory_order_acquire)) return false;  // fired, cancelled, or its runtime stopped
  worker& w = *t->rt->workers[t->worker];
  message_node* m = nullptr;
  std::shared_ptr<detail::timer_state> self;
  {
    std::lock_guard<std::mutex> g(w.wheel_lock);
    if (!t->pending.load(std::memory_order_relaxed)) return false;  // the lock orders us with the firing
    w.wheel.remove(t);
    t->pending.store(false, std::memory_order_relaxed);  // under the lock
    m = t->message;
    t->message = nullptr;
    self = std::move(t->self);
  }
  if (m) detail::destroy_node(m);
  count_down(resources().timers);
  return true;
}

}  // namespace grove
