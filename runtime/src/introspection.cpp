// introspection.cpp: process_info and system_info (grove/introspection.hpp).
//
// process_info of another process is a signal (as in OTP): the target answers with its own view when
// it next drains its inbox, so links, monitors and the mailbox are read by their owner and never
// raced. The caller waits for the answer: a scheduled process with a selective receive on a private
// message type (so its other messages are untouched), a foreign thread on a condition variable.
#include <grove/introspection.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include <grove/errc.hpp>
#include <grove/logger.hpp>
#include <grove/message.hpp>

#include "introspection.hpp"

#include "arena.hpp"
#include "delivery.hpp"
#include "exit_protocol.hpp"
#include "resources.hpp"
#include "scheduler.hpp"
#include "signal_nodes.hpp"
#include "type_name.hpp"

namespace grove::internal {

struct info_request {
  std::mutex lock;
  std::condition_variable cv;
  bool done = false;                        // guarded by lock
  bool abandoned = false;                   // guarded by lock: the requester stopped waiting
  std::optional<process_details> details;   // guarded by lock
  pid requester;                            // immutable: a scheduled process to notify, or null
  std::uint64_t id = 0;                     // immutable
};

// The private message that tells a waiting process its answer is ready.
struct info_ready {
  std::uint64_t id;
};

std::vector<message_type_count> saved_types(const process* p, std::size_t top) {
  std::unordered_map<const detail::message_type*, std::size_t> counts;
  for (const message_node* n = p->saved.head(); n; n = saved_list::next_of(n)) ++counts[n->type];
  std::vector<std::pair<const detail::message_type*, std::size_t>> by_count(counts.begin(), counts.end());
  const std::size_t keep = std::min(top, by_count.size());
  std::partial_sort(by_count.begin(), by_count.begin() + static_cast<std::ptrdiff_t>(keep), by_count.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<message_type_count> out;
  for (std::size_t i = 0; i < keep; ++i) out.push_back({demangled(by_count[i].first->name()), by_count[i].second});
  return out;
}

void report_unmatched_mail(process* p) noexcept {
  try {
    process_extra& ex = p->ensure_extra();
    if (ex.unmatched_mail_reported) return;
    ex.unmatched_mail_reported = true;
    std::string types;
    for (const auto& t : saved_types(p, 3)) types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", t.type, t.count);
    runtime_state* rt = current_runtime();
    std::string name = rt && p->has_name.load(std::memory_order_acquire) ? rt->names.name_of(p->id()) : std::string();  // acquire: pairs with register
    log(log_event{log_level::warning, log_kind::unmatched_mail, p->id(), name, {},
                  fmt::format("grove: process {}{} has {} messages in its mailbox that no receive has matched "
                              "(runtime_config::unmatched_mail_warning); most: {}",
                              p->id(), name.empty() ? "" : " (" + name + ")", p->saved.size(), types)});
  } catch (...) {
    // Out of memory while reporting: the report is lost, the mail is not.
  }
}

namespace {

// The calling thread's stack from the frame whose return address is `from` outwards (all of it if
// no frame has it: a build that inlined the call).
stack_trace stack_from(const void* from) {
  stack_trace here = stack_trace::current();
  const auto& frames = here.frames();
  const auto at = std::find(frames.begin(), frames.end(), reinterpret_cast<std::uintptr_t>(from));
  if (!from || at == frames.end()) return here;
  return stack_trace(std::vector<std::uintptr_t>(at, frames.end()));
}

process_details details_of(process* p, const void* parked_at) {
  process_details d;
  d.pid = p->id();
  d.answered = true;
  d.status = p->exiting ? process_status::exiting : process_status::running;
  d.mailbox_length = p->saved.size();
  d.mailbox_types = saved_types(p, 5);
  runtime_state* rt = current_runtime();
  if (p->kind == process_kind::scheduled && rt) {
    char here;  // the live stack runs from this frame up to the slot's top
    d.stack_bytes = static_cast<std::size_t>(static_cast<char*>(rt->slots.stack_top(p)) - &here);
    d.worker = p->worker;
  }
  d.reductions = p->reductions.load(std::memory_order_relaxed);  // its own counter
  d.trap_exit = p->trap_exit;
  if (p == current_process()) d.stacktrace = stack_from(parked_at);  // where it parked, and its callers
  if (process_extra* ex = p->extra) {
    d.links.assign(ex->links.begin(), ex->links.end());
    for (auto& [ref, target] : ex->monitors) d.monitors.push_back(monitor_ref{ref, target});
    for (auto& [ref, watcher] : ex->monitored_by) d.monitored_by.push_back(watcher);
    d.arena_bytes = ex->arena ? ex->arena->bytes() : 0;
    d.max_heap_bytes = ex->max_heap_bytes;
  }
  if (rt && p->has_name.load(std::memory_order_acquire)) d.registered_name = rt->names.name_of(p->id());  // acquire: pairs with register
  return d;
}

// The answer is delivered under req.lock, so a requester that gave up (abandoned, under the lock)
// either gets no message or finds it already in its mailbox and takes it: a late answer never
// stays behind as mail nobody receives.
void complete(info_request& req, std::optional<process_details> d) noexcept {
  std::lock_guard<std::mutex> g(req.lock);
  req.details = std::move(d);
  req.done = true;
  req.cv.notify_all();
  if (!req.requester.is_null() && !req.abandoned) {
    if (runtime_state* rt = current_runtime()) {
      try {
        deliver(*rt, req.requester, detail::make_node<info_ready>(info_ready{req.id}), true);
      } catch (...) {
        // Out of memory: the requester times out.
      }
    }
  }
}

}  // namespace

void answer_info(process* p, info_request& req, const void* parked_at) noexcept {
  try {
    complete(req, details_of(p, parked_at));
  } catch (...) {
    complete(req, std::nullopt);
  }
}

void answer_info_gone(info_request& req) noexcept { complete(req, std::nullopt); }

namespace {

// From the fields q publishes (process.hpp); the caller holds a reference on q. The control word
// says whether a worker runs it or it is queued; `activity` what it waits on, or that it is exiting.
process_summary summary_of(process* q) {
  process_summary s;
  s.pid = q->id();
  s.scoped = q->kind == process_kind::scoped;  // fixed before its pid was published
  const std::uint32_t control = q->control.load(std::memory_order_relaxed);  // snapshots, as the fields say
  const std::uint8_t activity = q->activity.load(std::memory_order_relaxed);
  if (activity == exiting_activity || (control & ctl_exited)) {
    s.status = process_status::exiting;
  } else if (s.scoped) {
    s.status = activity ? process_status::waiting : process_status::running;
  } else if ((control & (ctl_running | ctl_held)) == ctl_running) {  // held: parked in fact (process.hpp)
    s.status = process_status::running;
  } else if (control & ctl_notified) {
    s.status = process_status::runnable;
  } else {
    s.status = process_status::waiting;
  }
  if (s.status == process_status::waiting && activity <= static_cast<std::uint8_t>(wait_reason::muted))
    s.waiting_on = static_cast<wait_reason>(activity);
  s.mailbox_length = q->saved.size();
  s.reductions = q->reductions.load(std::memory_order_relaxed);
  s.stack_bytes = std::size_t{q->stack_units.load(std::memory_order_relaxed)} * stack_unit_bytes;
  s.arena_bytes = std::size_t{q->arena_kib.load(std::memory_order_relaxed)} * 1024;
  return s;
}

process_details details_from(const process_summary& s) {
  process_details d;
  d.pid = s.pid;
  d.answered = false;
  d.status = s.status;
  d.waiting_on = s.waiting_on;
  d.mailbox_length = s.mailbox_length;
  d.reductions = s.reductions;
  d.stack_bytes = s.stack_bytes;
  d.arena_bytes = s.arena_bytes;
  d.registered_name = s.registered_name;
  return d;
}

}  // namespace

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

const char* to_string(process_status s) noexcept {
  switch (s) {
    case process_status::runnable: return "runnable";
    case process_status::running: return "running";
    case process_status::waiting: return "waiting";
    case process_status::exiting: return "exiting";
  }
  return "unknown";
}

const char* to_string(wait_reason r) noexcept {
  switch (r) {
    case wait_reason::none: return "none";
    case wait_reason::receive: return "receive";
    case wait_reason::sleep: return "sleep";
    case wait_reason::io: return "io";
    case wait_reason::blocking_call: return "blocking_call";
    case wait_reason::muted: return "muted";
  }
  return "unknown";
}

std::optional<process_summary> process_summary_of(pid target) {
  runtime_state* rt = current_runtime();
  if (!rt) return std::nullopt;
  process* q = rt->table.acquire(target);
  if (!q) return std::nullopt;
  std::optional<process_summary> out;
  bool named = false;
  if ((q->control.load(std::memory_order_acquire) & ctl_exited) == 0) {  // acquire: as in is_alive
    out = summary_of(q);  // does not allocate: nothing throws while we hold the reference
    named = q->has_name.load(std::memory_order_acquire);  // acquire: pairs with register
  }
  rt->table.release(q, worker_index_for(*rt));
  if (named) out->registered_name = rt->names.name_of(target);  // the registry needs no reference
  return out;
}

std::vector<pid> processes() {
  std::vector<pid> out;
  runtime_state* rt = current_runtime();
  if (!rt) return out;
  out.reserve(rt->table.live());
  rt->table.visit_live([&](process* q) { out.push_back(q->id()); });
  return out;
}

namespace {
// Keeps the n largest items offered, by `key`, in `heap`: a min-heap (the smallest on top), so
// the common case, an item smaller than all n, costs one compare. key(item) is offered apart for
// callers that know it before they build the item (then `make` builds it only if it is kept).
template <class T, class Key, class Make>
void keep_largest(std::vector<T>& heap, std::size_t n, std::uint64_t item_key, Key key, Make make) {
  if (n == 0 || (heap.size() == n && item_key <= key(heap.front()))) return;
  auto larger = [&](const T& a, const T& b) { return key(a) > key(b); };
  heap.push_back(make());
  std::push_heap(heap.begin(), heap.end(), larger);
  if (heap.size() > n) {
    std::pop_heap(heap.begin(), heap.end(), larger);
    heap.pop_back();
  }
}

template <class T, class Key>
void sort_largest_first(std::vector<T>& heap, Key key) {
  std::sort_heap(heap.begin(), heap.end(), [&](const T& a, const T& b) { return key(a) > key(b); });
}
}  // namespace

std::vector<process_summary> top_processes(std::size_t n, process_order by) {
  std::vector<process_summary> heap;
  runtime_state* rt = current_runtime();
  if (!rt || n == 0) return heap;
  auto key = [by](const process_summary& s) -> std::uint64_t {
    switch (by) {
      case process_order::mailbox_length: return s.mailbox_length;
      case process_order::arena_bytes: return s.arena_bytes;
      case process_order::reductions: return s.reductions;
      case process_order::stack_bytes: return s.stack_bytes;
    }
    return 0;
  };
  heap.reserve(n + 1);
  rt->table.visit_live([&](process* q) {
    process_summary s = summary_of(q);
    keep_largest(heap, n, key(s), key, [&] { return std::move(s); });
  });
  sort_largest_first(heap, key);
  for (process_summary& s : heap) s.registered_name = rt->names.name_of(s.pid);  // n lookups; no reference needed
  return heap;
}

reductions_window::reductions_window() : taken_(std::chrono::steady_clock::now()) {
  runtime_state* rt = current_runtime();
  if (!rt) return;
  rt->table.visit_live([&](process* q) {
    previous_.emplace_back(q->id().bits(), q->reductions.load(std::memory_order_relaxed));  // relaxed: published counter
  });
  std::sort(previous_.begin(), previous_.end());
}

std::vector<process_activity> reductions_window::top(std::size_t n) {
  std::vector<process_activity> heap;  // the n busiest so far (keep_largest)
  runtime_state* rt = current_runtime();
  const auto now = std::chrono::steady_clock::now();
  last_interval_ = std::chrono::duration_cast<std::chrono::nanoseconds>(now - taken_);
  taken_ = now;
  if (!rt) {
    previous_.clear();
    return heap;
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> current;
  current.reserve(previous_.size() + 64);
  auto key = [](const process_activity& a) { return a.reductions; };
  rt->table.visit_live([&](process* q) {
    const std::uint64_t bits = q->id().bits();
    const std::uint64_t now_reductions = q->reductions.load(std::memory_order_relaxed);  // a published snapshot
    current.emplace_back(bits, now_reductions);
    auto it = std::lower_bound(previous_.begin(), previous_.end(), std::make_pair(bits, std::uint64_t{0}));
    const std::uint64_t before = it != previous_.end() && it->first == bits && it->second <= now_reductions ? it->second : 0;
    const std::uint64_t delta = now_reductions - before;
    keep_largest(heap, n, delta, key, [&] { return process_activity{summary_of(q), delta}; });
  });
  std::sort(current.begin(), current.end());
  previous_ = std::move(current);
  sort_largest_first(heap, key);
  for (process_activity& a : heap) a.process.registered_name = rt->names.name_of(a.process.pid);
  return heap;
}

namespace {
// What process_info says of a process that did not answer in time: what it publishes, if alive.
std::optional<process_details> unanswered(pid target) {
  if (auto s = process_summary_of(target)) return details_from(*s);
  return std::nullopt;
}
}  // namespace

// noinline: its return address is where a process asking about itself is (the trace's first frame).
__attribute__((noinline)) std::optional<process_details> process_info(pid target, std::chrono::milliseconds timeout) {
  runtime_state* rt = current_runtime();
  if (!rt) return std::nullopt;
  process* self = current_process();
  if (self) before_runtime_call(self, true);
  if (self && self->id() == target) return details_of(self, __builtin_return_address(0));
  auto req = std::make_shared<info_request>();
  req->id = rt->next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  bool as_process = self && self->kind == process_kind::scheduled;
  if (as_process) req->requester = self->id();
  process* q = rt->table.acquire(target);
  if (!q) return std::nullopt;
  q->mail.push(make_signal<info_signal>(req));
  rt->wake(q, trace::wake_cause::signal);
  rt->table.release(q, worker_index_for(*rt));
  if (as_process) {
    const std::uint64_t id = req->id;
    auto mine = when([id](const info_ready& r) { return r.id == id; }, [](const info_ready&) { return true; });
    bool ready = receive(mine, after(timeout, [] { return false; }));
    if (!ready) {
      bool answered_meanwhile = false;
      {
        std::lock_guard<std::mutex> g(req->lock);
        req->abandoned = true;
        answered_meanwhile = req->done;
      }
      if (!answered_meanwhile) return unanswered(target);
      (void)receive(mine, after(std::chrono::milliseconds(0), [] { return false; }));  // already here: take it
    }
  } else {
    std::unique_lock<std::mutex> g(req->lock);
    const std::uint64_t deadline = deadline_after_ns(detail::timeout_ns(timeout));
    auto done = [&] { return req->done; };
    if (deadline == never_deadline_ns) {
      req->cv.wait(g, done);
    } else if (!req->cv.wait_until(g, steady_time(deadline), done)) {
      g.unlock();
      return unanswered(target);
    }
  }
  std::lock_guard<std::mutex> g(req->lock);
  return req->details;
}

system_details system_info() {
  runtime_state* rt = current_runtime();
  if (!rt) throw error(errc::not_running);
  system_details s;
  s.process_count = rt->table.live();
  s.process_limit = rt->table.limit();
  s.dead_letters = rt->dead_letters.load(std::memory_order_relaxed);  // statistics
  s.spawned = rt->foreign_spawned.load(std::memory_order_relaxed);
  s.global_queue_length = rt->injector.size_approx();
  s.stack_slots = rt->slots.count();
  s.stack_bytes = rt->slots.stack_bytes();
  s.stack_image_copies = rt->slots.image_copies();
  s.stack_image_differences = rt->slots.image_differences();
  for (auto& w : rt->workers) {
    worker_details d;
    d.run_queue_length = w->local.size() + (w->runnext.load(std::memory_order_relaxed) ? 1 : 0);  // a snapshot
    d.context_switches = w->switches.load(std::memory_order_relaxed);
    d.steals = w->steals.load(std::memory_order_relaxed);
    d.parks = w->parks.load(std::memory_order_relaxed);
    d.timers_fired = w->timers_fired.load(std::memory_order_relaxed);
    d.reductions = w->reductions.load(std::memory_order_relaxed);
    d.messages_sent = w->messages_sent.load(std::memory_order_relaxed);
    d.messages_received = w->messages_received.load(std::memory_order_relaxed);
    s.spawned += w->spawned.load(std::memory_order_relaxed);
    s.reductions += d.reductions;
    s.messages_sent += d.messages_sent;
    s.messages_received += d.messages_received;
    s.context_switches += d.context_switches;
    s.steals += d.steals;
    s.parks += d.parks;
    s.workers.push_back(d);
  }
  return s;
}

resource_usage resources_in_use() noexcept {
  resource_counters& c = resources();
  resource_usage u;
  u.processes = process_table::processes_in_use();
  u.stack_images = c.stack_images.load();
  u.arenas = c.arenas.load();
  u.timers = c.timers.load();
  u.messages = messages_in_use();
  u.fds = c.fds.load();
  return u;
}

}  // namespace grove

namespace grove::internal {
resource_counters& resources() noexcept {
  static resource_counters counters;
  return counters;
}

unsigned this_thread_stripe() noexcept {
  static std::atomic<unsigned> next{0};
  // relaxed: any spread will do; each thread keeps the stripe it was given
  thread_local const unsigned stripe = next.fetch_add(1, std::memory_order_relaxed);
  return stripe;
}
}  // namespace grove::internal
