// runtime.cpp: a runtime's life (grove/runtime.hpp): start, stop, idle; and which runtime and which
// process a thread belongs to.
//
// ## Which runtime
// One runtime runs at a time (g_running), but a thread belongs to the runtime it works for: a worker
// thread to its worker's runtime, a thread with a scoped_process to that process's runtime, any
// other thread to the running one. So a process left running by a stop (below) keeps talking to its
// own, stopped, runtime (its spawns fail with not_running, its sends reach its old peers' PCBs, all
// dead), never to a runtime started after.
//
// ## Stop (runtime::stop), in steps. The whole stop takes at most its deadline.
// 1. The phase becomes `stopping`: new spawns fail with errc::not_running (supervisors cannot restart
//    children into a dying runtime).
// 2. Scoped processes: from now on their blocking calls (a receive that would wait, sleep_for) throw
//    errc::not_running, and the ones blocked now are woken to do so. A foreign thread is never left
//    blocked in Grove by a stop; stop waits (up to the deadline) until none is.
// 3. Every scheduled process gets exit(shutdown) from the null pid.
// 4. At the kill point, deadline - min(deadline / 4, 1 s), those still alive get kill: they unwind at
//    their next runtime call (a blocked receive is one).
// 5. At the deadline, whatever is still alive is left behind: a process in an endless loop or a
//    blocking syscall cannot be ended from outside (Grove does not preempt, scheduler.cpp). stop lists
//    them in stop_report::left_behind, reports them through the logger, says clean == false, and goes
//    on.
// 6. run_blocking's idle threads leave (busy ones when their call returns). Workers leave their
//    loops and are joined. A worker still running a left-behind process is detached instead: its
//    thread holds a reference on the runtime's state, so the state lives until the process reaches
//    a runtime call (it dies there: it was killed) or returns, and the worker leaves its loop too.
//    A process left behind in run_blocking is ended the same way when its call returns: worker 0
//    stays in its loop (detached, asleep) until no process is in run_blocking, and unwinds it.
// 7. Pending send_after timers are dropped, and the runtime is no longer the running one: a new one
//    may start.
// A stop called from inside a process would wait for its own worker: it throws errc::in_process at
// once instead (so does wait_until_idle).
//
// ## Idle (wait_until_idle)
// Idle means every scheduled process has exited *and its PCB is back* (process_table::
// scheduled_in_use() == 0): an exited process's stack image, arena and message nodes are released
// before its PCB is (worker.cpp after_park, exit_protocol.cpp), so a leak check that reads
// resources_in_use() after wait_until_idle() returns true sees none of them.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include <grove/errc.hpp>
#include <grove/logger.hpp>
#include <grove/runtime.hpp>

#include "delivery.hpp"
#include "introspection.hpp"
#include "scheduler.hpp"
#include "scoped_waiter.hpp"
#include "throw_sites.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {

std::atomic<runtime_state*> g_running{nullptr};  // shared: the running runtime (acq_rel on start/stop)
thread_local worker* tls_worker = nullptr;
thread_local process* tls_scoped = nullptr;
thread_local runtime_state* tls_scoped_runtime = nullptr;

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

void set_scoped_process(process* p, runtime_state* rt) noexcept {
  tls_scoped = p;
  tls_scoped_runtime = rt;
}
process* scoped_process_of_thread() noexcept { return tls_scoped; }

__attribute__((noinline)) runtime_state* current_runtime() noexcept {
  asm volatile("" ::: "memory");  // as this_worker: never hoisted across a park
  if (worker* w = tls_worker) return &w->rt;
  if (runtime_state* rt = tls_scoped_runtime) return rt;
  return g_running.load(std::memory_order_acquire);  // pairs with the release in runtime's constructor
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

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
  // A stack image's capacity keeps two flags in the top bits of 32 (process.hpp, image_is_out).
  if (c.stack_bytes > max_stack_bytes) throw error(errc::bad_argument, "runtime_config::stack_bytes above 256 MiB");
  // 512 per worker, at most 8,192 (each slot is 2 kernel mappings: guard + stack; the default
  // vm.max_map_count is 65,530). Measured on bench/grove/ring (1,000 processes, 1 worker, callgrind):
  // 980 instructions per hop with 64 slots per worker (every hop copies stack images out and in),
  // 798 with enough slots that each process keeps its own. Unused slots cost address space only.
  if (c.stack_slots == 0) c.stack_slots = std::min(512u * c.workers, 8192u);
  if (c.stack_slots > 16384) throw error(errc::bad_argument, "runtime_config::stack_slots above 16384");
  if (c.reductions_per_slice == 0) c.reductions_per_slice = 1;
  if (c.max_idle_spin < std::chrono::microseconds(0) || c.max_idle_spin > std::chrono::milliseconds(100))
    throw error(errc::bad_argument, "runtime_config::max_idle_spin must be in [0, 100 ms]");
  return c;
}

void refuse_in_process(const char* what) {
  if (this_worker() != nullptr)
    throw error(errc::in_process, fmt::format("{} called from inside a Grove process: it would wait for its own worker", what));
}

// Counts the caller among the threads waiting on exits_cv while it lives.
struct idle_waiter {
  runtime_state& rt;
  explicit idle_waiter(runtime_state& r) : rt(r) { rt.idle_waiters.fetch_add(1, std::memory_order_seq_cst); }
  ~idle_waiter() { rt.idle_waiters.fetch_sub(1, std::memory_order_relaxed); }
};

// Waits on exits_cv until pred() or the deadline (steady-clock ns). The wait is bounded by 50 ms at a
// time: the notifiers skip the lock when nobody seems to wait, and the bound covers that race.
template <class P>
bool wait_on_exits(runtime_state& rt, std::uint64_t deadline_ns, P pred) {
  idle_waiter counted(rt);
  std::unique_lock<std::mutex> g(rt.exits_lock);
  while (!pred()) {
    const std::uint64_t now = now_ns();
    if (now >= deadline_ns) return false;
    rt.exits_cv.wait_until(g, steady_time(std::min(deadline_ns, now + 50'000'000)));
  }
  return true;
}

bool all_released(runtime_state& rt) { return rt.table.scheduled_in_use() == 0; }

// The live scheduled processes (scoped ones belong to their threads).
std::vector<pid> live_scheduled(runtime_state& rt) {
  std::vector<pid> out;
  rt.table.visit_live([&](process* q) {
    if (q->kind == process_kind::scheduled) out.push_back(q->id());
  });
  return out;
}

// Sends `reason` from the null pid to each of `pids`.
void signal_all(runtime_state& rt, const std::vector<pid>& pids, const exit_reason& reason) {
  for (pid id : pids) deliver_exit_signal(rt, id, pid(), reason, false);
}

}  // namespace

runtime::runtime(runtime_config config) {
  refuse_in_process("grove::runtime's constructor");
  auto st = std::make_shared<state>(normalise(config));
  runtime_state* expected = nullptr;
  // acq_rel: publishes the constructed state to every thread that finds it through current_runtime()
  if (!g_running.compare_exchange_strong(expected, st.get(), std::memory_order_acq_rel))
    throw error(errc::already_running);
  state_ = std::move(st);
  // Before the workers start (their creation orders it for them); only this runtime is running.
  unmatched_mail_threshold.store(static_cast<std::uint32_t>(std::min<std::size_t>(state_->config.unmatched_mail_warning, UINT32_MAX)),
                                 std::memory_order_relaxed);
  state_->slots.install_overflow_reports(&describe_running_process);
  attach_throw_traces();  // throw sites, if the program links grove::throw_traces (stack_trace.cpp)
  start_tracing_from_environment(state_->tracer);  // GROVE_TRACE (tracer.cpp); the rings before the workers run
  for (auto& w : state_->workers) w->start(state_);
  std::string top_path = state_->config.top_socket;
  if (const char* env = std::getenv("GROVE_TOP_SOCKET"); top_path.empty() && env) top_path = env;
  if (!top_path.empty()) state_->top = top_server::start(top_path);
}

runtime::~runtime() {
  if (!state_ || state_->current_phase.load(std::memory_order_acquire) != state::phase::running) return;
  if (this_worker() != nullptr) {
    // Destroyed inside one of its own processes: stopping would wait for this very worker. The state
    // stays alive (the workers hold it); it is reported, and the runtime keeps running.
    log(log_event{log_level::error, log_kind::stop, {}, {}, {},
                  "grove: a runtime was destroyed from inside one of its processes; it cannot stop itself and keeps running"});
    return;
  }
  stop();
}

bool runtime::is_running() const noexcept {
  return state_ && state_->current_phase.load(std::memory_order_acquire) == state::phase::running;
}

const runtime_config& runtime::config() const noexcept { return state_->config; }

bool runtime::wait_until_idle(std::chrono::milliseconds timeout) {
  if (!state_) return true;
  refuse_in_process("runtime::wait_until_idle");
  return wait_on_exits(*state_, deadline_after_ns(detail::timeout_ns(timeout)), [&] { return all_released(*state_); });
}

stop_report runtime::stop(std::chrono::milliseconds deadline) {
  stop_report report;
  if (!state_) return report;
  refuse_in_process("runtime::stop");
  state& rt = *state_;
  auto running = state::phase::running;
  // 1. acq_rel: spawns that read the new phase fail; the scoped waits' seq_cst counts pair with it (2.)
  if (!rt.current_phase.compare_exchange_strong(running, state::phase::stopping, std::memory_order_seq_cst)) return report;
  const std::uint64_t start = now_ns();
  const std::uint64_t end = deadline_after_ns(detail::timeout_ns(deadline));
  const std::uint64_t span = end - start;
  const std::uint64_t kill_at = end == never_deadline_ns ? end : end - std::min<std::uint64_t>(span / 4, 1'000'000'000);

  // 2.
  release_scoped_waiters(rt);
  // 3, 4.
  const std::vector<pid> signalled = live_scheduled(rt);
  signal_all(rt, signalled, exit_reason::shutdown());
  if (!wait_on_exits(rt, kill_at, [&] { return all_released(rt); })) {
    const std::vector<pid> alive = live_scheduled(rt);
    report.killed = alive.size();
    signal_all(rt, alive, exit_reason::kill());
    wait_on_exits(rt, end, [&] { return all_released(rt); });
  }
  report.exited = signalled.size() - std::min(report.killed, signalled.size());
  if (!wait_on_exits(rt, end, [&] { return rt.scoped_blocked.load(std::memory_order_seq_cst) == 0; }))
    report.scoped_blocked = rt.scoped_blocked.load(std::memory_order_relaxed);
  // 5.
  report.left_behind = live_scheduled(rt);
  if (!report.left_behind.empty() || report.scoped_blocked != 0) {
    report.clean = false;
    std::string who;
    for (std::size_t i = 0; i < report.left_behind.size() && i < 10; ++i) who += fmt::format(" {}", report.left_behind[i]);
    if (report.left_behind.size() > 10) who += fmt::format(" and {} more", report.left_behind.size() - 10);
    log(log_event{log_level::error, log_kind::stop, report.left_behind.empty() ? pid() : report.left_behind.front(), {}, {},
                  fmt::format("grove: stop: deadline of {} ms passed with {} process(es) still running without reaching a "
                              "runtime call (left behind, killed at their next call:{}) and {} scoped_process(es) blocked",
                              deadline.count(), report.left_behind.size(), who.empty() ? " none" : who, report.scoped_blocked)});
  }

  // 6. acq_rel/release: pairs with the acquire in worker::loop
  rt.blocking.stop();
  rt.workers_stop.store(true, std::memory_order_release);
  for (auto& w : rt.workers) w->unpark();
  // An idle worker leaves at once; one that runs a left-behind process does not (that is the point).
  const std::uint64_t join_by = now_ns() + (report.left_behind.empty() ? 1'000'000'000 : 50'000'000);
  wait_on_exits(rt, join_by, [&] { return rt.workers_in_loop.load(std::memory_order_acquire) == 0; });
  for (auto& w : rt.workers) {
    if (w->has_left_loop()) {
      w->join();
    } else {
      w->detach();
      ++report.workers_left_running;
    }
  }
  // 7. The trace ends here; GROVE_TRACE's file is written while the runtime is still current.
  finish_tracing(rt.tracer);
  rt.top.reset();  // tools/top's socket (its thread reads the runtime)
  cancel_all_timers(rt);
  rt.slots.remove_overflow_reports();
  rt.current_phase.store(state::phase::stopped, std::memory_order_release);
  runtime_state* self = &rt;
  g_running.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);  // acq_rel: as in the constructor
  return report;
}

}  // namespace grove
