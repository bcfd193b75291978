// scheduler.cpp: how Grove runs processes on worker threads. The map of the runtime starts here.
//
// ## Concepts
// - A *process* (process.hpp) is a C++ callable with its own execution context, a mailbox and a
//   pid. It runs until it blocks (receive, sleep), yields, uses up its time slice, or exits.
// - A *worker* (worker.cpp) is one OS thread, one per core by default, that runs processes one at a
//   time. Each worker has a local run queue (run_queue.hpp, 256 entries), a LIFO slot (`runnext`)
//   and a timer wheel (timer_wheel.hpp).
// - A *stack slot* (stack_slots.hpp) is one of a few execution stacks shared by all workers. A
//   process runs on the slot it was bound to at first run; parked processes keep only a copy of their
//   live stack (a few hundred bytes). That is what makes a sleeping process cost ~0.5 KB instead of a
//   4 KiB stack page, and it is also how started processes migrate: slots sit at fixed addresses
//   every worker can use, so any worker can resume any process (stack_slots.hpp has the protocol).
//
// ## Where work comes from (worker::find_work)
// 1. Every 61st round, one process from the shared inject queue first, so it cannot starve (Go's rule).
// 2. The LIFO slot: a process woken by a message from the process running here, or spawned by it,
//    runs next, on the same core, while the sender's data is in cache; after 3 LIFO runs in a row
//    the local queue goes first (tokio's cap), so a ping-pong pair cannot starve the queue. A spawn
//    or wake that finds the slot taken moves the old occupant to the local queue, where other
//    workers can steal it (so a spawn loop still spreads out). Spawning into the slot, as tokio and
//    Go do, keeps "spawn a process, wait for it" on one core: with the child in the local queue the
//    idle worker stole every child and the pair bounced between cores; bench/grove/restarts --n 1000
//    (a supervisor restarting a crashing child, 2 workers, medians of 9 runs, twice) went from
//    137 K and 147 K restarts/s to 214 K and 215 K.
// 3. The local queue (FIFO).
// 4. The inject queue: foreign threads' spawns and sends, and overflow from full local queues.
// 5. Expired timers of this worker's wheel (checked every round against a cached next expiry; with
//    no timer pending not even the clock is read).
// 6. Stealing: half of a random victim's local queue. A victim's LIFO slot is taken only if that
//    worker has not switched processes for 200 µs (it is stuck in one long process): stealing it
//    earlier would split ping-pong pairs across cores, which costs ~5× here (cross-core round trips
//    are ~480 ns on these VMs, DESIGN-NOTES §2). For the same reason an idle worker does not count
//    other workers' LIFO slots as work when deciding whether to sleep. Instead a parked worker
//    watches them (worker::park): while a slot is occupied, or another worker is busy, it sleeps at
//    most 0.2 ms at first, backing off to 5 ms while it finds nothing, and looks again; a pusher that
//    fills an empty slot while nobody watches wakes someone. So a process left in the slot of a
//    worker that computes for a long time without a runtime call is taken by an idle worker within
//    ~0.4 ms (up to ~5 ms after a quiet spell) instead of waiting for the computation to end, and a
//    ping-pong pair's idle neighbour wakes ~200 times a second, not 5,000.
//
// ## Process states (the control word) and the "already queued" bit
// Three bits (process.hpp): NOTIFIED (queued: in a run queue or a slot's waiters), RUNNING (a worker
// runs it), EXITED. All changes are atomic read-modify-writes (acq_rel), so they form one total order:
//   - wake (any thread): old = fetch_or(NOTIFIED). Only if old had none of the three bits does the
//     waker enqueue the process; so a process is never queued twice (tokio's NOTIFIED bit).
//   - a worker takes a queued process: NOTIFIED → RUNNING (CAS).
//   - it parks (receive found nothing): the worker clears RUNNING after the switch; if NOTIFIED was
//     set meanwhile (a message arrived between the process's last look and the switch), the worker
//     queues it again. The sender pushed its message before its fetch_or, so the process sees it.
//   - it yields: RUNNING → NOTIFIED, and back to the queue's tail.
//   - new processes are born NOTIFIED (process_table.cpp), so a wake that races with the spawn is a no-op.
// No lost wake-up: the process's "mailbox empty" check and the sender's push are ordered by the
// RMWs on the same word (the release of the sender's fetch_or, the acquire of the worker's).
//
// ## Parking idle workers (Go's spinning rules)
// `searching` counts workers looking for work to steal; at most half of the busy workers search.
// A worker that finds nothing spins for 20 µs (a futex wake costs more than that here), then parks
// on its own condition variable (an idle runtime burns ~0 CPU: bench/grove/idle measures 0.00003 s
// of CPU over 5 s with 100,000 parked processes), with a timeout at its wheel's next expiry. The store/load pairing that prevents a lost wake-up:
//   - a producer (spawn, wake into a queue) makes the work visible, then `notify_work()`: a seq_cst
//     fence, then loads `idle_count`; if someone is idle and nobody searches, it wakes one worker,
//     which starts out searching;
//   - a parking worker increments `idle_count`, issues a seq_cst fence, then looks at every queue
//     once more before sleeping.
//   Either the producer sees the idle worker or the worker sees the work. The last searcher to give
//   up also looks once more (after decrementing `searching` and a fence), since producers skip the
//   wake while someone searches. A searcher that finds work wakes another idle worker if it was the
//   last searcher, so parallelism ramps up one worker at a time.
// Pushing into the LIFO slot wakes nobody while an idle worker watches (6. above): usually the
// current process is about to block and the worker runs the occupant next; if it does not block,
// the watcher takes the occupant. With idle workers but no watcher, the push wakes one.
//
// ## Fairness
// Each process gets `reductions_per_slice` (default 4,000, BEAM's figure) sends, received messages
// and spawns per slice; a process that uses them up yields to the back of the queue. CPU-bound code
// calls grove::yield(). Grove does not preempt: a process that computes for a long time without a
// runtime call holds its worker (its queue is stolen by the others, its LIFO slot too, see above).
//
// ## Thread-local state
// A process may resume on another worker after any park. GCC hoists thread-local addresses (and
// __errno_location, pthread_self) across calls, so runtime code in process context never keeps a
// worker pointer or TLS address across a park: this_worker() is an out-of-line call that reads TLS
// afresh, and a resumed process learns its worker from the context switch itself (worker.cpp). The
// C++ exception globals travel with the process (context.cpp).
//
// ## Shutdown (runtime::stop)
// 1. New spawns fail with errc::not_running (supervisors cannot restart children into a dying runtime).
// 2. Every live process gets exit(shutdown) from the null pid; stop waits for them until the deadline.
// 3. The rest get kill (processes unwind their stacks at their next runtime call).
// 4. Workers leave their loops and are joined; timers and queues are emptied; the table and stacks
//    are released when the last holder of the state lets go (a scoped_process may outlive stop()).
//
// ## Rejected alternatives
// - A stack per process: see stack_slots.hpp (memory, spawn time, guard pages).
// - A moodycamel queue per mailbox: 616+ bytes each (mailbox.hpp).
// - A single global run queue: contention on every wake; no cache locality for ping-pong.
// - Waking a worker for every message: a futex wake costs ~1 µs here, more than the message.
// - Preemption by signals (Go): unsafe for arbitrary C++ code (locks, allocators, non-reentrant
//   libraries); reductions plus yield() are the contract, as in every C++ fiber library.
#include "scheduler.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include <grove/errc.hpp>

#include "delivery.hpp"
#include "scoped_waiter.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {

std::atomic<runtime_state*> g_running{nullptr};  // shared: the running runtime (acq_rel on start/stop)
thread_local worker* tls_worker = nullptr;
thread_local process* tls_scoped = nullptr;

}  // namespace

__attribute__((noinline)) worker* this_worker() noexcept {
  asm volatile("" ::: "memory");  // keep the TLS read here, never hoisted into callers
  return tls_worker;
}

void set_this_worker(worker* w) noexcept { tls_worker = w; }

__attribute__((noinline)) process* current_process() noexcept {
  asm volatile("" ::: "memory");
  if (worker* w = tls_worker) return w->current;
  return tls_scoped;
}

void set_scoped_process(process* p) noexcept { tls_scoped = p; }
process* scoped_process_of_thread() noexcept { return tls_scoped; }

runtime_state* current_runtime() noexcept {
  return g_running.load(std::memory_order_acquire);  // pairs with the release in runtime's constructor
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

runtime::state::state(const runtime_config& cfg)
    : config(cfg),
      table(*this, cfg.process_limit, cfg.workers),
      slots(cfg.stack_slots, cfg.stack_bytes, cfg.workers),
      names(table) {
  for (unsigned i = 0; i < cfg.workers; ++i) workers.push_back(std::make_unique<worker>(*this, i));
}

runtime::state::~state() = default;

void runtime::state::wake(process* p) noexcept {
  // acq_rel: the release publishes what the waker did before (a pushed message) to whoever runs p;
  // the acquire orders us after the worker's RUNNING → idle transition (see the file comment).
  std::uint32_t old = p->control.fetch_or(ctl_notified, std::memory_order_acq_rel);
  if (p->kind == process_kind::scoped) {  // kind is immutable once the pid is known
    if (!(old & (ctl_notified | ctl_exited))) wake_scoped(p);
    return;
  }
  if (old & (ctl_notified | ctl_running | ctl_exited)) return;
  schedule(p);
}

void runtime::state::schedule(process* p) {
  worker* w = this_worker();
  if (w && &w->rt == this) {
    if (w->current != nullptr) {
      w->push_runnext(p);  // in process context: the woken or spawned process runs next, here
    } else {
      w->push_local(p);
      notify_work();
    }
    return;
  }
  injector.push(p);
  notify_work();
}

void runtime::state::notify_work() noexcept {
  // seq_cst fence: pairs with the fence in worker::park (file comment, "Parking"): our queue push is
  // ordered before our load of idle_count, their idle_count increment before their queue checks.
  parking_fence(*this);
  if (idle_count.load(std::memory_order_relaxed) == 0) return;   // ordered by the fence above
  if (searching.load(std::memory_order_relaxed) != 0) return;    // a searcher will find it
  wake_one_idle();
}

void runtime::state::wake_one_idle() noexcept {
  worker* w = nullptr;
  {
    std::lock_guard<std::mutex> g(idle_lock);
    if (idle_workers.empty()) return;
    w = idle_workers.back();
    idle_workers.pop_back();
    // The woken worker starts out searching; count it before it runs so producers see it.
    searching.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: read by notify_work after its fence
    idle_count.fetch_sub(1, std::memory_order_seq_cst);
  }
  w->unpark();
}

void runtime::state::process_exited(process* p, bool scoped) noexcept {
  (void)p;
  if (scoped) scoped_live.fetch_sub(1, std::memory_order_relaxed);  // statistics for stop()
  table.mark_exited();
  // Only the last scheduled process to exit wakes a waiting stop(): a million exits must not mean a
  // million futex wakes. (The waiter also re-checks on a short timeout, so a race here only delays it.)
  if (stopper_waiting.load(std::memory_order_acquire) &&  // pairs with stop()'s release store
      table.live() <= scoped_live.load(std::memory_order_relaxed)) {
    std::lock_guard<std::mutex> g(exits_lock);
    exits_cv.notify_all();
  }
}

// ---- runtime (the public handle) ----

namespace {

// For the stack overflow report (called in a signal handler: no allocation, no locks).
const char* describe_running_process() {
  thread_local char text[48];
  process* p = tls_worker ? tls_worker->current : nullptr;
  if (!p) return "?";
  std::uint64_t bits = p->pid_bits.load(std::memory_order_relaxed);
  auto put = [](char* at, std::uint32_t v) {
    char digits[12];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) *at++ = digits[--n];
    return at;
  };
  char* at = text;
  *at++ = '<';
  *at++ = '0';
  *at++ = '.';
  at = put(at, static_cast<std::uint32_t>(bits));
  *at++ = '.';
  at = put(at, static_cast<std::uint32_t>(bits >> 32));
  *at++ = '>';
  *at = '\0';
  return text;
}

runtime_config normalise(runtime_config c) {
  if (c.workers == 0) c.workers = std::max(1u, std::thread::hardware_concurrency());
  if (c.workers > 1024) throw error(errc::bad_argument, "runtime_config::workers above 1024");
  if (c.process_limit < 1 || c.process_limit > (std::size_t{1} << 31))
    throw error(errc::bad_argument, "runtime_config::process_limit must be in [1, 2^31]");
  if (c.stack_bytes < 16 * 1024) throw error(errc::bad_argument, "runtime_config::stack_bytes below 16 KiB");
  // 512 per worker, at most 8,192 (each slot is 2 kernel mappings: guard + stack; the default
  // vm.max_map_count is 65,530). Measured on bench/grove/ring (1,000 processes, 1 worker, callgrind):
  // 980 instructions per hop with 64 slots per worker (every hop copies stack images out and in),
  // 798 with enough slots that each process keeps its own. Unused slots cost address space only.
  if (c.stack_slots == 0) c.stack_slots = std::min(512u * c.workers, 8192u);
  if (c.stack_slots > 16384) throw error(errc::bad_argument, "runtime_config::stack_slots above 16384");
  if (c.reductions_per_slice == 0) c.reductions_per_slice = 1;
  return c;
}

}  // namespace

runtime::runtime(runtime_config config) {
  auto st = std::make_shared<state>(normalise(config));
  runtime_state* expected = nullptr;
  // acq_rel: publishes the constructed state to every thread that finds it through current_runtime()
  if (!g_running.compare_exchange_strong(expected, st.get(), std::memory_order_acq_rel))
    throw error(errc::already_running);
  state_ = std::move(st);
  state_->slots.install_overflow_reports(&describe_running_process);
  for (auto& w : state_->workers) w->start();
}

runtime::~runtime() {
  if (state_ && state_->current_phase.load(std::memory_order_acquire) == state::phase::running) stop();
}

bool runtime::is_running() const noexcept {
  return state_ && state_->current_phase.load(std::memory_order_acquire) == state::phase::running;
}

const runtime_config& runtime::config() const noexcept { return state_->config; }

namespace {

// Waits until no scheduled process is alive or the deadline (steady-clock ns, clock.hpp) passes.
bool wait_for_exits(runtime_state& rt, std::uint64_t deadline_ns) {
  auto scheduled_live = [&] { return rt.table.live() - rt.scoped_live.load(std::memory_order_relaxed); };
  std::unique_lock<std::mutex> g(rt.exits_lock);
  while (scheduled_live() > 0) {
    const std::uint64_t now = now_ns();
    if (now >= deadline_ns) return false;
    // Bounded wait: process_exited notifies, and the bound covers a notify between check and wait.
    rt.exits_cv.wait_until(g, steady_time(std::min(deadline_ns, now + 50'000'000)));
  }
  return true;
}

// Sends `reason` as an exit signal from the null pid to every live scheduled process (scoped
// processes belong to their threads). Returns how many were signalled.
std::size_t signal_every_process(runtime_state& rt, const exit_reason& reason) {
  std::size_t signalled = 0;
  rt.table.for_each_live([&](pid id) {
    process* q = rt.table.acquire(id);
    if (!q) return;
    if (q->kind == process_kind::scheduled) {
      send_exit_signal(rt, q, pid(), reason, false);
      ++signalled;
    }
    rt.table.release(q, -1);
  });
  return signalled;
}

}  // namespace

bool runtime::wait_until_idle(std::chrono::milliseconds timeout) {
  if (!state_) return true;
  state_->stopper_waiting.store(true, std::memory_order_release);  // pairs with process_exited
  return wait_for_exits(*state_, deadline_after_ns(detail::timeout_ns(timeout)));
}

stop_report runtime::stop(std::chrono::milliseconds deadline) {
  stop_report report;
  if (!state_) return report;
  state& rt = *state_;
  auto running = state::phase::running;
  if (!rt.current_phase.compare_exchange_strong(running, state::phase::stopping, std::memory_order_acq_rel)) return report;
  rt.stopper_waiting.store(true, std::memory_order_release);  // pairs with process_exited

  // 1-2. exit(shutdown) to everyone, then wait.
  const std::size_t signalled = signal_every_process(rt, exit_reason::shutdown());
  if (!wait_for_exits(rt, deadline_after_ns(detail::timeout_ns(deadline)))) {
    // 3. kill the rest; they unwind at their next runtime call.
    report.killed = signal_every_process(rt, exit_reason::kill());
    while (!wait_for_exits(rt, deadline_after_ns(5'000'000'000))) {
      std::size_t stuck = rt.table.live() - rt.scoped_live.load(std::memory_order_relaxed);
      std::fprintf(stderr, "grove: stop: %zu process(es) ignore kill (running without reaching a runtime call)\n", stuck);
      report.clean = false;
    }
  }
  report.exited = signalled - report.killed;

  // 4. Workers leave; the rest is released with the state.
  rt.workers_stop.store(true, std::memory_order_release);  // pairs with the acquire in worker::loop
  for (auto& w : rt.workers) w->unpark();
  for (auto& w : rt.workers) w->join();
  cancel_all_timers(rt);
  rt.slots.remove_overflow_reports();
  rt.current_phase.store(state::phase::stopped, std::memory_order_release);
  runtime_state* self = &rt;
  g_running.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);  // acq_rel: as in the constructor
  if (std::size_t n = rt.scoped_live.load(std::memory_order_relaxed))
    std::fprintf(stderr, "grove: stop: %zu scoped_process(es) still alive; they keep the runtime's memory until destroyed\n", n);
  return report;
}

}  // namespace grove
