// grove/services/pool.hpp: bounded pools (bulkheads): N worker processes and a bounded wait queue.
//
//   auto db = svc::pool::start_link({.size = 5, .max_waiting = 20, .name = "db_pool"}).value();
//   auto r = db.run(deadline, [q](const svc::deadline& d) { return query(q, d); });  // on a worker
//   if (r.error() == svc::errc::pool_full) ...           // rejected at once: shed load
//   {
//     auto l = db.checkout(deadline);                    // or hold a worker's slot yourself
//     if (l) use(l->worker());
//   }                                                    // returned when the lease is destroyed
//
// One pool per dependency is the point: a slow dependency fills its own pool's workers and queue and
// then gets errc::pool_full or errc::deadline_exceeded at once, while the other pools' callers are
// served as before. Nothing is shared between pools.
//
// - run(d, fn): waits for a free worker until `d` (in a FIFO queue of at most max_waiting requests;
//   a full queue answers errc::pool_full at once, nothing queued), runs fn (or fn(d)) on that worker,
//   and returns its value, or errc::exception (it threw; the worker survives), errc::exited (the
//   worker died: killed, or fn called grove::exit; a new worker replaces it), errc::deadline_exceeded
//   (still queued or still running at `d`). A job that is still running at `d` keeps its worker until
//   it returns (the slot is really busy; fn gets `d` so it can stop): the pool never runs more than
//   `size` jobs at once. fn runs in another process: capture by value (see task.hpp).
// - checkout(d): the same wait, then a lease on one worker (semaphore-style isolation: the caller
//   does the work itself while it holds the slot). The lease returns the worker when destroyed, and
//   the pool takes it back if the holder dies.
// - A waiter whose deadline passes is removed from the queue (counted in timed_out) and its caller
//   returns errc::deadline_exceeded; a worker that becomes free goes to the oldest waiter still in
//   time. grove::errc::noproc / errc::exited: the pool itself is not alive / died during the wait.
// The pool is a server (server.hpp) that traps exits: start_link links it to the caller, and it
// stops its workers and exits when its parent does (or on stop()); it restarts workers that die.
// All functions are thread-safe; run, checkout, stats and stop need a calling process.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/message.hpp>
#include <grove/pid.hpp>
#include <grove/registry.hpp>

#include <grove/services/deadline.hpp>
#include <grove/services/detail/common.hpp>
#include <grove/services/outcome.hpp>
#include <grove/services/server.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

struct pool_options {
  std::size_t size = 10;         // worker processes (>= 1)
  std::size_t max_waiting = 10;  // requests that may wait for a worker; one more: errc::pool_full
  std::string name{};            // registered name of the pool, if not empty; then also its label on the
                                 // metrics page: grove_pool_*{pool="<name>"} (grove/metrics.hpp)
};

// A snapshot. The counters count since the pool started.
struct pool_stats {
  std::size_t size = 0;              // workers
  std::size_t busy = 0;              // running a job or leased now
  std::size_t queued = 0;            // waiting for a worker now
  std::size_t peak_queued = 0;       // the most that ever waited at once
  std::uint64_t served = 0;          // jobs started and leases granted
  std::uint64_t completed = 0;       // jobs that returned (a value or a failure)
  std::uint64_t rejected = 0;        // errc::pool_full answers
  std::uint64_t timed_out = 0;       // waiters whose deadline passed while queued
  std::uint64_t worker_restarts = 0; // workers that died and were replaced
};

namespace detail {

// A job: runs on a worker, sends its result to the caller's alias (pool.cpp runs it).
struct pool_job {
  virtual ~pool_job() = default;
  virtual void run(const deadline& d) = 0;
};
template <class R, class F>
struct pool_job_of final : pool_job {
  F fn;
  alias to;
  pool_job_of(F&& f, alias a) : fn(std::move(f)), to(a) {}
  void run(const deadline& d) override {
    auto call = [this, &d]() -> R { return invoke_with_deadline(fn, d); };
    grove::send(to, reply_msg<wire_t<R>>{to.id, run_catching<R>(call)});
  }
};

// The caller's side of run and checkout (pool.cpp).
struct pool_call {
  grove::pid pool;
  monitor_ref monitor;
  alias reply;  // its id is the request's ticket
  failure early;
  bool got_down = false;
};
// Refusals from the pool itself (pool_full, deadline_exceeded, exited: the worker died).
struct pool_refused {
  std::uint64_t id = 0;
  failure why;
};
pool_call begin_pool_call(grove::pid pool);
void submit(pool_call& c, const deadline& d, std::unique_ptr<pool_job> job);
// After the receive: on a timeout tells the pool to drop the request; unalias, demonitor.
void finish_pool_call(pool_call& c, bool timed_out);
void abandon_pool_call(pool_call& c) noexcept;  // unwinding: no flush
struct pool_call_guard {
  pool_call& c;
  ~pool_call_guard() { abandon_pool_call(c); }
};

}  // namespace detail

class pool;

// A checked-out worker. Move-only; returns the worker when destroyed (or on release()).
class lease {
 public:
  lease(lease&& o) noexcept
      : pool_(o.pool_), ticket_(std::exchange(o.ticket_, 0)), worker_(o.worker_) {}
  lease& operator=(lease&& o) noexcept {
    if (this != &o) {
      release();
      pool_ = o.pool_;
      ticket_ = std::exchange(o.ticket_, 0);
      worker_ = o.worker_;
    }
    return *this;
  }
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  ~lease() { release(); }

  grove::pid worker() const noexcept { return worker_; }
  bool is_held() const noexcept { return ticket_ != 0; }
  // Returns the worker now (a no-op if already returned). Never blocks.
  void release() noexcept;

 private:
  friend class pool;
  lease(grove::pid pool, std::uint64_t ticket, grove::pid worker) noexcept
      : pool_(pool), ticket_(ticket), worker_(worker) {}
  grove::pid pool_;
  std::uint64_t ticket_ = 0;
  grove::pid worker_;
};

// A handle on a pool: its pid, or its registered name (looked up at each use). Copyable; cheap.
class pool {
 public:
  pool() = default;
  explicit pool(grove::pid p) noexcept : pid_(p) {}
  static pool named(std::string name) {
    pool p;
    p.name_ = std::move(name);
    return p;
  }

  // Starts a pool linked to the caller (start) or not, and waits until its workers exist.
  // grove::errc::bad_argument for size 0; errc::init_failed if the name is taken.
  static outcome<pool> start_link(const pool_options& o);
  static outcome<pool> start(const pool_options& o);

  grove::pid pid() const noexcept { return name_.empty() ? pid_ : grove::whereis(name_); }

  // See the file comment.
  template <class F>
  auto run(const deadline& d, F fn) const -> outcome<detail::value_t<detail::deadline_result_t<F>>>;
  outcome<lease> checkout(const deadline& d) const;
  outcome<pool_stats> stats(std::chrono::milliseconds timeout = default_call_timeout) const;
  // Stops the workers (exit `shutdown`) and the pool, which exits with `reason`; returns once it has.
  outcome<void> stop(exit_reason reason = exit_reason::normal(), std::chrono::milliseconds timeout = infinity) const;

 private:
  grove::pid pid_;
  std::string name_;
};

template <class F>
auto pool::run(const deadline& d, F fn) const -> outcome<detail::value_t<detail::deadline_result_t<F>>> {
  using R = detail::deadline_result_t<F>;
  using V = detail::value_t<R>;
  using W = detail::wire_t<R>;
  detail::pool_call c = detail::begin_pool_call(pid());
  if (c.early.code) return c.early;
  detail::pool_call_guard guard{c};
  detail::submit(c, d, std::make_unique<detail::pool_job_of<R, F>>(std::move(fn), c.reply));
  const std::uint64_t id = c.reply.id;
  const monitor_ref mon = c.monitor;
  bool timed_out = false;
  auto on_result = grove::when([id](const detail::reply_msg<W>& r) { return r.id == id; },
                               [](detail::reply_msg<W> r) { return detail::from_wire<V>(std::move(r.value)); });
  auto on_refused = grove::when([id](const detail::pool_refused& r) { return r.id == id; },
                                [](detail::pool_refused r) { return outcome<V>(std::move(r.why)); });
  auto on_down = grove::when([mon](const down& m) { return m.ref == mon; },
                             [&c](down m) {
                               c.got_down = true;
                               return outcome<V>(failure::from_exit(std::move(m.reason)));
                             });
  outcome<V> out = detail::receive_by(
      d,
      [&timed_out] {
        timed_out = true;
        return outcome<V>(errc::deadline_exceeded);
      },
      on_result, on_refused, on_down);
  detail::finish_pool_call(c, timed_out);
  // A worker killed just after sending its result also gets a refusal sent for it: drop the other.
  grove::receive(grove::when([id](const detail::reply_msg<W>& r) { return r.id == id; }, [](detail::reply_msg<W>) {}),
                 grove::when([id](const detail::pool_refused& r) { return r.id == id; }, [](detail::pool_refused) {}),
                 grove::after(std::chrono::nanoseconds(0)));
  return out;
}

}  // namespace grove::services

GROVE_PUBLIC_END
