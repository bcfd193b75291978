// pool.cpp: bounded pools (grove/services/pool.hpp): the pool's process and the caller's side.
//
// ## What a pool is
// A server (server.hpp) whose behaviour, pool_manager, owns N worker processes, a FIFO wait queue of
// at most max_waiting requests, and the counters of pool_stats. It traps exits: its workers are
// linked to it (a worker that dies is replaced; a pool that dies takes its workers with it) and its
// parent's exit stops it (server loop → terminate → workers get exit `shutdown`). Workers are plain
// processes that run jobs sent to them, one at a time. Only the manager changes the pool's state;
// callers and workers send it messages (runtime/DESIGN.md §6, principle 4).
//
// ## run, in numbered steps
// 1. The caller monitors the pool, makes an alias (its id is the request's ticket) and sends
//    submit{ticket, alias, deadline, job}.
// 2. The pool: a deadline already passed → refused{deadline_exceeded}; an idle worker → step 3;
//    room in the queue → queued; else → refused{pool_full} (counted in rejected), at once.
// 3. Assign: the worker (the most recently freed one: its stack is warm) gets job{ticket, deadline}
//    and is busy under that ticket. A worker freed later goes to the oldest waiter whose deadline has
//    not passed; waiters found expired on the way are dropped and counted in timed_out.
// 4. The worker runs the job, which sends its result straight to the caller's alias, then tells the
//    pool job_done{ticket}: the worker is free (step 3 again). The result never passes through the
//    pool, so the pool's own work is a few map operations per job.
// 5. The caller receives the result, a refusal, the pool's down, or gives up at its deadline: then
//    it unaliases (a late result is dropped at the door; first, because a send may end the time
//    slice and let the mailbox take in what has arrived), sends cancel{ticket} (a queued request
//    is removed and counted in timed_out; a running job is left to finish: its worker stays busy
//    until it returns, so the pool never runs more than N jobs at once), demonitors, and drops an
//    answer that slipped in between the deadline and the unalias.
// 6. A worker that dies (killed, or its job called exit): the pool sends the caller
//    refused{exited, reason} for its job and starts a replacement (worker_restarts).
// checkout is the same with checkout{ticket, alias, holder} instead of a job: step 3 sends the
// caller grant{worker} and monitors the holder; the lease sends checkin{ticket} when released, and
// a holder's down returns the worker too. A cancel for a lease already granted (the grant was
// dropped by the alias after the caller's deadline) is a checkin.
//
// ## Metrics
// A named pool puts grove_pool_{workers,busy,queued} and grove_pool_{served,rejected,timed_out,
// worker_restarts}_total{pool="<name>"} on grove::metrics's page. The manager publishes its counts
// into relaxed atomics after each message it handles (a few stores; the scraping thread reads only
// those), and removes its collector when its process ends (the destructor runs as the exit unwinds).
//
// ## Rejected alternatives
// - A counting semaphore shared by callers (atomics): no queue order, no deadlines in the queue, no
//   stats without more shared state, and the slot outlives a dead holder; a process owns all that.
// - Results relayed through the pool: one more hop per job and a serial bottleneck; the caller's
//   alias lets the worker answer directly and still drops late results.
// - Killing a job at its caller's deadline: a killed job cannot clean up (a half-written reply to a
//   dependency); the job gets the deadline instead, and its slot stays busy until it has returned,
//   which is what a bulkhead must count.
// - poolboy's overflow workers: extra workers under load are what a bulkhead exists to refuse.
#include <grove/services/pool.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <deque>
#include <unordered_map>
#include <vector>

#include <grove/grove.hpp>
#include <grove/metrics.hpp>
#include <grove/trace.hpp>

namespace grove::services {

namespace detail {

namespace {

struct submit_msg {
  std::uint64_t ticket = 0;
  alias reply;
  deadline due;
  std::unique_ptr<pool_job> job;
};
struct checkout_msg {
  std::uint64_t ticket = 0;
  alias reply;
  grove::pid holder;
  deadline due;
};
struct cancel_msg {
  std::uint64_t ticket = 0;
};
struct job_msg {
  std::uint64_t ticket = 0;
  deadline due;
  std::unique_ptr<pool_job> job;
};
struct job_done_msg {
  std::uint64_t ticket = 0;
  grove::pid worker;
};
struct grant_msg {
  std::uint64_t id = 0;
  grove::pid worker;
};

}  // namespace

struct checkin_msg {
  std::uint64_t ticket = 0;
};
struct stats_request {};

class pool_manager {
 public:
  explicit pool_manager(const pool_options& o) : max_waiting_(o.max_waiting), self_(grove::self()) {
    workers_.reserve(o.size);
    for (std::size_t k = 0; k < o.size; ++k) {
      workers_.push_back(worker_slot{start_worker(), 0});
      index_.emplace(workers_.back().pid, k);
      idle_.push_back(k);
    }
    if (!o.name.empty()) register_metrics(o.name);
  }
  pool_manager(const pool_manager&) = delete;
  pool_manager& operator=(const pool_manager&) = delete;
  ~pool_manager() {
    if (metrics_id_) grove::metrics::remove_collector(metrics_id_);
  }

  pool_stats handle_call(stats_request) const {
    pool_stats s = stats_;
    s.size = workers_.size();
    s.busy = busy_.size();
    s.queued = queue_.size();
    return s;
  }

  void handle_info(any_message m) {
    if (auto* s = m.get<submit_msg>()) {
      arrive(waiter{s->ticket, s->reply, s->due, std::move(s->job), {}});
    } else if (auto* c = m.get<checkout_msg>()) {
      arrive(waiter{c->ticket, c->reply, c->due, nullptr, c->holder});
    } else if (auto* d = m.get<job_done_msg>()) {
      auto it = busy_.find(d->ticket);
      if (it != busy_.end() && !it->second.is_lease) {
        ++stats_.completed;
        free_worker(it);
      }
    } else if (auto* ci = m.get<checkin_msg>()) {
      auto it = busy_.find(ci->ticket);
      if (it != busy_.end() && it->second.is_lease) {
        demonitor(it->second.holder, true);
        free_worker(it);
      }
    } else if (auto* x = m.get<cancel_msg>()) {
      cancel(x->ticket);
    } else if (auto* dn = m.get<down>()) {
      for (auto it = busy_.begin(); it != busy_.end(); ++it) {
        if (it->second.is_lease && it->second.holder == dn->ref) {
          free_worker(it);  // the holder died with its lease
          break;
        }
      }
    } else if (auto* e = m.get<exit_signal>()) {
      worker_exited(e->from, e->reason);
    }
    // anything else is not for us: dropped
    if (published_) publish();
  }

  void terminate(const exit_reason&) {
    for (const worker_slot& w : workers_) grove::exit(w.pid, exit_reason::shutdown());
  }

 private:
  struct worker_slot {
    grove::pid pid;
    std::uint64_t ticket = 0;  // 0: idle
  };
  struct assignment {
    std::size_t worker = 0;
    alias reply;
    bool is_lease = false;
    monitor_ref holder;  // leases: our monitor on the holder
  };
  struct waiter {
    std::uint64_t ticket = 0;
    alias reply;
    deadline due;
    std::unique_ptr<pool_job> job;  // null: a checkout
    grove::pid holder;
  };
  using busy_map = std::unordered_map<std::uint64_t, assignment>;

  // What the metrics page reads (file comment, "Metrics"): relaxed stores by the manager, relaxed
  // loads by the scraping thread; a snapshot that orders nothing.
  struct published_counts {
    std::atomic<std::uint64_t> workers{0}, busy{0}, queued{0}, served{0}, rejected{0}, timed_out{0}, worker_restarts{0};
  };
  void publish() {
    published_counts& c = *published_;
    c.workers.store(workers_.size(), std::memory_order_relaxed);
    c.busy.store(busy_.size(), std::memory_order_relaxed);
    c.queued.store(queue_.size(), std::memory_order_relaxed);
    c.served.store(stats_.served, std::memory_order_relaxed);
    c.rejected.store(stats_.rejected, std::memory_order_relaxed);
    c.timed_out.store(stats_.timed_out, std::memory_order_relaxed);
    c.worker_restarts.store(stats_.worker_restarts, std::memory_order_relaxed);
  }
  void register_metrics(const std::string& name) {
    published_ = std::make_shared<published_counts>();
    publish();
    metrics_id_ = grove::metrics::add_collector([c = published_, pool = grove::metrics::label("pool", name)](std::string& out) {
      namespace m = grove::metrics;
      const auto v = [](const std::atomic<std::uint64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); };
      m::write_family(out, "grove_pool_workers", m::kind::gauge, "Worker processes in the pool.", {{pool, v(c->workers)}});
      m::write_family(out, "grove_pool_busy", m::kind::gauge, "Workers running a job or leased now.", {{pool, v(c->busy)}});
      m::write_family(out, "grove_pool_queued", m::kind::gauge, "Callers waiting for a worker now.", {{pool, v(c->queued)}});
      m::write_family(out, "grove_pool_served_total", m::kind::counter, "Jobs started and leases granted.", {{pool, v(c->served)}});
      m::write_family(out, "grove_pool_rejected_total", m::kind::counter, "Callers refused with pool_full.", {{pool, v(c->rejected)}});
      m::write_family(out, "grove_pool_timed_out_total", m::kind::counter, "Callers whose deadline passed while queued.",
                      {{pool, v(c->timed_out)}});
      m::write_family(out, "grove_pool_worker_restarts_total", m::kind::counter, "Workers that died and were replaced.",
                      {{pool, v(c->worker_restarts)}});
    });
  }

  grove::pid start_worker() {
    const grove::pid manager = self_;
    return spawn_link([manager] {
      for (;;) {
        grove::receive([manager](job_msg m) {
          m.job->run(m.due);  // 4. sends the result to the caller itself
          grove::send(manager, job_done_msg{m.ticket, grove::self()});
        });
      }
    });
  }

  // 2.
  void arrive(waiter w) {
    if (w.due.has_passed()) {
      ++stats_.timed_out;
      grove::trace::annotate("pool: refused, the caller's deadline had passed");
      grove::send(w.reply, pool_refused{w.ticket, failure(errc::deadline_exceeded)});
    } else if (!idle_.empty()) {
      assign(std::move(w));
    } else if (queue_.size() < max_waiting_) {
      queue_.push_back(std::move(w));
      stats_.peak_queued = std::max(stats_.peak_queued, queue_.size());
    } else {
      ++stats_.rejected;
      grove::trace::annotate("pool: rejected, full (every worker busy, the queue full)");
      grove::send(w.reply, pool_refused{w.ticket, failure(errc::pool_full)});
    }
  }

  // 3.
  void assign(waiter w) {
    const std::size_t k = idle_.back();
    idle_.pop_back();
    workers_[k].ticket = w.ticket;
    ++stats_.served;
    grove::trace::annotate(w.job ? "pool: checkout (a job)" : "pool: checkout (a lease)");
    assignment a{k, w.reply, w.job == nullptr, {}};
    if (w.job) {
      grove::send(workers_[k].pid, job_msg{w.ticket, w.due, std::move(w.job)});
    } else {
      a.holder = monitor(w.holder);
      grove::send(w.reply, grant_msg{w.ticket, workers_[k].pid});
    }
    busy_.emplace(w.ticket, a);
  }

  void dispatch() {
    while (!idle_.empty() && !queue_.empty()) {
      waiter w = std::move(queue_.front());
      queue_.pop_front();
      if (w.due.has_passed()) {
        ++stats_.timed_out;  // its caller has given up (or is about to)
        grove::trace::annotate("pool: a queued caller's deadline passed");
        continue;
      }
      assign(std::move(w));
    }
  }

  void free_worker(busy_map::iterator it) {
    const std::size_t k = it->second.worker;
    busy_.erase(it);
    workers_[k].ticket = 0;
    idle_.push_back(k);
    dispatch();
  }

  // 5.
  void cancel(std::uint64_t ticket) {
    auto q = std::find_if(queue_.begin(), queue_.end(), [ticket](const waiter& w) { return w.ticket == ticket; });
    if (q != queue_.end()) {
      queue_.erase(q);
      ++stats_.timed_out;
      grove::trace::annotate("pool: a queued caller timed out");
      return;
    }
    auto it = busy_.find(ticket);
    if (it != busy_.end() && it->second.is_lease) {
      demonitor(it->second.holder, true);
      free_worker(it);  // granted after its caller gave up: the grant was dropped
    }
    // a running job: left to finish (its worker stays busy until job_done)
  }

  // 6.
  void worker_exited(grove::pid who, const exit_reason& why) {
    auto w = index_.find(who);
    if (w == index_.end()) return;  // not one of ours (e.g. a link made by a job)
    const std::size_t k = w->second;
    index_.erase(w);
    if (std::uint64_t ticket = workers_[k].ticket) {
      auto it = busy_.find(ticket);
      if (it != busy_.end()) {
        if (it->second.is_lease) {
          demonitor(it->second.holder, true);  // its holder holds a dead worker; the checkin is ignored
        } else {
          grove::send(it->second.reply, pool_refused{ticket, failure::from_exit(why)});
        }
        busy_.erase(it);
      }
    } else {
      idle_.erase(std::remove(idle_.begin(), idle_.end(), k), idle_.end());
    }
    ++stats_.worker_restarts;
    workers_[k] = worker_slot{start_worker(), 0};
    index_.emplace(workers_[k].pid, k);
    idle_.push_back(k);
    dispatch();
  }

  std::size_t max_waiting_;
  grove::pid self_;
  std::vector<worker_slot> workers_;
  std::vector<std::size_t> idle_;  // a stack: the most recently freed worker goes first
  std::unordered_map<grove::pid, std::size_t> index_;
  busy_map busy_;
  std::deque<waiter> queue_;
  pool_stats stats_;
  std::shared_ptr<published_counts> published_;  // named pools only
  std::uint64_t metrics_id_ = 0;
};

pool_call begin_pool_call(grove::pid pool) {
  pool_call c;
  const grove::pid me = grove::self();
  if (me.is_null()) {
    c.early = grove::errc::not_in_process;
  } else if (pool.is_null() || !is_alive(pool)) {
    c.early = grove::errc::noproc;
  } else if (pool == me) {
    c.early = errc::call_to_self;
  } else {
    c.pool = pool;
    c.monitor = monitor(pool);  // 1.
    c.reply = make_alias();
  }
  return c;
}

void submit(pool_call& c, const deadline& d, std::unique_ptr<pool_job> job) {
  grove::send(c.pool, submit_msg{c.reply.id, c.reply, d, std::move(job)});
}

void finish_pool_call(pool_call& c, bool timed_out) {
  if (!c.reply) return;
  const alias a = std::exchange(c.reply, alias{});
  // unalias first: a send may end our time slice, and the mailbox then takes in what has arrived,
  // so an answer still on its way must meet a closed alias (dropped), not land in the mailbox.
  unalias(a);
  if (timed_out && !c.got_down) grove::send(c.pool, cancel_msg{a.id});  // 5.
  if (!c.got_down) demonitor(c.monitor, true);
}

void abandon_pool_call(pool_call& c) noexcept {
  if (!c.reply) return;
  const alias a = std::exchange(c.reply, alias{});
  try {
    unalias(a);  // before the send, as in finish_pool_call
    send_safely(c.pool, cancel_msg{a.id});
    if (!c.got_down) demonitor(c.monitor, false);
  } catch (const std::exception&) {
    // a scoped_process that has exited (or no runtime any more): nothing left to undo here
  }
}

}  // namespace detail

void lease::release() noexcept {
  if (!ticket_) return;
  try {
    detail::send_safely(pool_, detail::checkin_msg{std::exchange(ticket_, 0)});
  } catch (const std::exception&) {
    // no runtime any more: the pool is gone too
  }
}

outcome<pool> pool::start_link(const pool_options& o) {
  if (o.size == 0) return grove::errc::bad_argument;
  auto r = services::start_link<detail::pool_manager>(server_options{.name = o.name, .trap_exit = true}, o);
  if (!r) return r.failure();
  return pool(r->pid());
}

outcome<pool> pool::start(const pool_options& o) {
  if (o.size == 0) return grove::errc::bad_argument;
  auto r = services::start<detail::pool_manager>(server_options{.name = o.name, .trap_exit = true}, o);
  if (!r) return r.failure();
  return pool(r->pid());
}

outcome<lease> pool::checkout(const deadline& d) const {
  detail::pool_call c = detail::begin_pool_call(pid());
  if (c.early.code) return c.early;
  detail::pool_call_guard guard{c};
  grove::send(c.pool, detail::checkout_msg{c.reply.id, c.reply, grove::self(), d});
  const std::uint64_t id = c.reply.id;
  const monitor_ref mon = c.monitor;
  const grove::pid pool_pid = c.pool;
  bool timed_out = false;
  auto on_grant = grove::when([id](const detail::grant_msg& g) { return g.id == id; },
                              [pool_pid](detail::grant_msg g) { return outcome<lease>(lease(pool_pid, g.id, g.worker)); });
  auto on_refused = grove::when([id](const detail::pool_refused& r) { return r.id == id; },
                                [](detail::pool_refused r) { return outcome<lease>(std::move(r.why)); });
  auto on_down = grove::when([mon](const down& m) { return m.ref == mon; },
                             [&c](down m) {
                               c.got_down = true;
                               return outcome<lease>(failure::from_exit(std::move(m.reason)));
                             });
  outcome<lease> out = detail::receive_by(
      d,
      [&timed_out] {
        timed_out = true;
        return outcome<lease>(errc::deadline_exceeded);
      },
      on_grant, on_refused, on_down);
  detail::finish_pool_call(c, timed_out);
  // A grant or refusal that arrived after the deadline fired but before the unalias: drop it (the
  // pool takes a granted worker back on our cancel, which counts as a checkin).
  if (timed_out) {
    grove::receive(grove::when([id](const detail::grant_msg& g) { return g.id == id; }, [](detail::grant_msg) {}),
                   grove::when([id](const detail::pool_refused& r) { return r.id == id; }, [](detail::pool_refused) {}),
                   grove::after(std::chrono::nanoseconds(0)));
  }
  return out;
}

outcome<pool_stats> pool::stats(std::chrono::milliseconds timeout) const {
  return call(server_ref<detail::pool_manager>(pid()), detail::stats_request{}, timeout);
}

outcome<void> pool::stop(exit_reason reason, std::chrono::milliseconds timeout) const {
  return services::stop(server_ref<detail::pool_manager>(pid()), std::move(reason), timeout);
}

}  // namespace grove::services
