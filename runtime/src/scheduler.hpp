// scheduler.hpp: the runtime's shared state and its workers. The design is in scheduler.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <grove/runtime.hpp>

#include "clock.hpp"
#include "blocking.hpp"
#include "context.hpp"
#include "inject_queue.hpp"
#include "io.hpp"
#include "overload.hpp"
#include "poller.hpp"
#include "process.hpp"
#include "process_table.hpp"
#include "registry.hpp"
#include "remote.hpp"
#include "run_queue.hpp"
#include "stack_slots.hpp"
#include "timer_wheel.hpp"
#include "top_server.hpp"
#include "tracer.hpp"

namespace grove::internal {

using runtime_state = grove::runtime::state;
class worker;

// A worker whose switch count has not moved for this long is running one long process: its LIFO
// slot may be stolen. Much longer than a message round trip (~0.3 µs), so a ping-pong pair is never
// split across cores. Rejected: "two looks in a row" without the switch count, which split pairs:
// bench/grove/ring ran 40% slower on 2 workers than on 1.
inline constexpr std::uint64_t stuck_worker_ns = 200'000;


// The worker whose thread calls this, or nullptr on a foreign thread. Reads thread-local storage
// afresh on every call, so it is safe in a process that may have migrated (never cache it across a
// park: see the "thread-local state" section of scheduler.cpp).
worker* this_worker() noexcept;

// Adds n to a statistics counter that only the calling thread writes: a relaxed load and store, no
// RMW (readers take snapshots).
inline void count_owned(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
// The process running on this thread (a scheduled process, or a scoped_process on a foreign
// thread); nullptr elsewhere.
process* current_process() noexcept;
// The runtime this thread belongs to: its worker's, its scoped process's, else the running one (or
// nullptr). See runtime.cpp, "Which runtime".
runtime_state* current_runtime() noexcept;
void set_this_worker(worker* w) noexcept;
void set_scoped_process(process* p, runtime_state* rt) noexcept;
process* scoped_process_of_thread() noexcept;

class worker {
 public:
  worker(runtime_state& rt, unsigned index);
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;

  // Starts the thread, which holds `keep` (the runtime's state) until it ends (runtime.cpp, stop step 6).
  void start(std::shared_ptr<runtime_state> keep);
  void join();
  void detach();
  bool has_left_loop() const noexcept { return left_loop_.load(std::memory_order_acquire); }  // pairs with loop()'s release

  // Owner thread (process or scheduler context on this worker):
  void push_local(process* p);        // to the local queue (overflow goes to the inject queue)
  void push_runnext(process* p);      // to the LIFO slot (the old occupant goes to the local queue)
  // A process just queued here by this worker's own poller callback: counted, and true (this
  // worker runs it next, nobody need be woken); false outside that callback.
  bool queued_from_own_poll() noexcept {
    if (!polling_) return false;
    ++polled_ready_;
    return true;
  }
  void requeue(process* p);           // a runnable process back to a queue: its home's for a pinned one, else local
  void requeue_waiters(process* waiters);  // each of a slot's waiter list (stack_slots::release), requeued

  // The direct hand-off (worker.cpp, "Parking straight into the next process"). In process context,
  // from park_current of the running process, which parks to wait: the process in the LIFO slot,
  // made ready to run here (its slot taken, RUNNING, resident, counted as current), or null when
  // the hand-off is not allowed now or it cannot run at once (then it went where run() puts it).
  process* take_handoff();
  // The running process `p` is about to switch to `next`, which take_handoff gave: its run ends (its
  // counts, as when it switches back to the loop), `next` becomes current, and holds p (arrived).
  void hand_off(process* p, process* next) {
    end_run(p);
    start_counting(next);
    handoff_from_ = p;
    current = next;
  }
  // Where a process lands after any switch into it (park_current, process_main): `t` names the
  // worker now running it, and the context that switched in: the worker's loop, or a process that
  // handed off to it, which this keeps held here (worker.cpp, "Holding the one that handed off").
  static void arrived(transfer t);
  // Any thread: a wake found p held (RUNNING and HELD) and was its first (worker.cpp, "Holding the
  // one that handed off"): unless this thread's worker holds it, p is taken from its holder and
  // queued here, as the wake of a parked process would queue it.
  static void wake_held(runtime_state& rt, process* p);
  // Any thread: a started pinned process whose home this is, made runnable (scheduler.cpp, "Pinned").
  void push_pinned(process* p);
  // Any thread: a process gathered here (overload.cpp, "Senders gather where their receiver runs"),
  // made runnable. The owner runs it; a thief takes it only from a stuck worker, as its LIFO slot.
  void push_gathered(process* p);
  // Any thread: wake this worker if it sleeps past `deadline_ns` (a new timer) or at all.
  void unpark() noexcept;
  // Finalizing in batches (worker.cpp): p's last reference was dropped on this worker's thread.
  // True if p waits in this worker's batch (finalize_deferred finishes it); false if the caller
  // must finalize it now. finalize_deferred: this worker's thread, at a safe point.
  bool defer_finalize(process* p) noexcept;
  void finalize_deferred() noexcept;
  void unpark_if_sleeping_past(std::uint64_t deadline_ns) noexcept;

  runtime_state& rt;
  const unsigned index;
  process* current = nullptr;  // owner: the process running on this worker, if any
  context sched_ctx;           // owner: the worker's own context while a process runs
  stack_bounds thread_stack;   // owner: its thread's stack, for ASan
  eh_globals* thread_eh = nullptr;  // owner: its thread's C++ exception globals (context.hpp)

  // Timers of processes that ran here (timers.cpp). Other workers lock it to cancel.
  std::mutex wheel_lock;
  timer_wheel wheel;                                 // guarded by wheel_lock
  std::atomic<std::uint64_t> next_expiry_ns{~0ull};  // shared: a hint for the owner (relaxed); exact under the lock

  run_queue local;                          // owner pushes/pops; thieves steal
  inject_queue pinned_inbox;                // shared: pinned processes of this worker made runnable by other threads
  std::atomic<bool> pinned_pending{false};  // shared: set after a push into pinned_inbox; the owner clears it before draining
  std::atomic<process*> runnext{nullptr};   // shared: owner sets/takes; a thief takes it only from a stuck worker
  // Runnable processes gathered here (push_gathered), FIFO through process::next_waiter. A mutex,
  // not a lock-free queue: pushed and taken about once per time slice of a sender, and FIFO across
  // producers (moodycamel's queue is not, see take_pinned). `gathered_any` is stored under the lock
  // (seq_cst, for park's look-again) and read without it as a hint.
  std::mutex gathered_lock;
  process* gathered_head = nullptr;  // guarded by gathered_lock
  process* gathered_tail = nullptr;  // guarded by gathered_lock
  std::atomic<bool> gathered_any{false};

  // shared: the ring this worker records trace events into (tracer.hpp), or null: set by
  // trace::start (release), loaded by the owner's record() (acquire)
  std::atomic<trace_ring*> trace_out{nullptr};

  // Odd while this worker's thread pushes a message into a process it holds no reference on
  // (delivery.cpp, "Sending without a reference"): written by the owner only (loads and stores, no
  // RMW), read by whoever drops a process's last reference. A line of its own: it changes twice a
  // send, and those readers should not take the lines around it.
  alignas(64) std::atomic<std::uint32_t> send_seq{0};

  // Statistics: written by the owner (relaxed), read by system_info.
  alignas(64) std::atomic<std::uint64_t> switches{0}, steals{0}, parks{0}, timers_fired{0}, spawned{0};
  // Statistics only the owner writes, by a load and a store (count_owned: no RMW), read by system_info:
  // the reductions of the processes it ran, added as each run ends (BEAM's per-scheduler count);
  // the messages they received (taken into their mailboxes), likewise; the messages they sent, as
  // each send happens (receive.cpp, send_node).
  std::atomic<std::uint64_t> reductions{0}, messages_received{0}, messages_sent{0};

 private:
  friend class scheduler_access;
  void loop();
  process* find_work();
  process* take_local();
  process* take_pinned();
  process* take_gathered_from(worker& w);  // the oldest process gathered at w, or null
  process* steal_from_others();
  bool park();                                   // parking.cpp
  std::uint64_t start_watch(std::uint64_t now);
  bool sleep_on_cv(std::uint64_t expiry);
  bool sleep_in_poller(std::uint64_t expiry);
  bool fire_due_everywhere(std::uint64_t now);
  std::uint64_t earliest_timer();
  std::uint64_t earliest_timer_everywhere(std::uint64_t bound);
  void fire_stranded_timers();
  void reap_io(bool will_run = false);  // parking.cpp
  bool take_poller_to_sleep();
  bool spinner_reaps() const noexcept;
  bool spinner_lately_at_work() const noexcept;
  void run(process* p);
  bool begin_run(process* p);
  void start_counting(process* p);
  void end_run(process* p);
  void finish_park(process* p, void* fctx);
  void save_context(process* p, void* fctx) noexcept;  // a parked process's context, its stack size published
  // p has switched out: its park is finished (its slot released, RUNNING and HELD cleared), and if
  // a wake came while it ran it is queued: to the local queue with notify_work, or for a held one
  // finished by its own worker, to the LIFO slot (worker.cpp, finish_held).
  enum class woken_goes { local_queue, lifo_slot };
  void after_park(process* p, woken_goes woken = woken_goes::local_queue);
  bool begin_run_held(process* h);
  void prepare_run(process* p);
  void hold(process* p, void* fctx);
  process* take_held() noexcept;
  void finish_held();
  process* take_held_from_stuck(worker& victim);
  void advance_timers(std::uint64_t coarse_now);
  process* take_from_stuck_worker();
  enum class stillness { moved, still, stuck };
  stillness watch_switches(unsigned v, std::uint64_t now, std::uint64_t stuck_after_ns);
  process* keep_stolen(process* const* batch, std::uint32_t got, unsigned v);
  bool has_visible_work() const noexcept;
  bool may_leave() const noexcept;

  std::thread thread_;
  std::atomic<bool> left_loop_{false};  // shared: set by the thread when its loop ends
  std::uint32_t tick_ = 0;          // owner: scheduling rounds
  process* pinned_head_ = nullptr;  // owner: runnable pinned processes of this worker, FIFO through process::next_waiter
  process* pinned_tail_ = nullptr;  // owner
  std::uint32_t lifo_streak_ = 0;   // owner: consecutive runs from runnext
  std::uint32_t handoff_streak_ = 0;  // owner: hand-offs since the loop last ran a process
  bool holding_missed_ = false;       // owner: a held process was not woken before the next park, since the loop last ran one
  process* to_finalize_[finalize_batch];  // owner: PCBs whose last reference it dropped (defer_finalize)
  unsigned to_finalize_count_ = 0;        // owner
  bool finalizing_ = false;               // owner: in finalize_deferred (a release meanwhile finalizes at once)
  process* handoff_from_ = nullptr;   // owner: set by a hand-off just before its switch; taken by arrived()
  // The process that last parked here by a hand-off, its park not yet finished: still RUNNING, its
  // stack slot still held (worker.cpp, "Holding the one that handed off"). Shared: the owner stores
  // it (release: its saved context with it); the owner, or a thief while this worker is stuck,
  // exchanges it out and so alone resumes it or finishes its park. A line of its own: searching
  // thieves and wakes from elsewhere read it while the owner writes it at every hand-off.
  struct alignas(64) held_process {
    std::atomic<process*> p{nullptr};
  };
  held_process held_;
  std::uint64_t run_reductions_before_ = 0;  // owner: the current process's counts when its run began
  std::uint32_t run_received_before_ = 0;
  const std::uint64_t coarse_lag_ns_ = coarse_clock_lag_ns();  // immutable
  std::uint64_t last_coarse_ = 0;   // owner: coarse_now_ns() at the last round
  bool searching_ = false;          // owner: counted in runtime_state::searching
  // owner: in sleep_in_poller's event callback, processes made ready go to the local queue
  // without waking another worker; once the wait returns, one more than the worker runs itself
  // wakes one other (parking.cpp, "Readiness runs where it was polled")
  bool polling_ = false;
  std::uint32_t polled_ready_ = 0;  // owner: processes queued by that callback
  bool watch_expired_ = false;      // owner: the last park ended at its watch deadline (worker::park)
  bool suspect_ = false;            // owner: the last search saw a LIFO slot whose owner had not switched
  std::uint64_t watch_backoff_ns_;  // owner: the next watch's sleep (worker::start_watch)
  // owner: the adaptive spin (parking.cpp, "How long an idle worker spins"): when the current idle
  // spell began (0: working), and the gaps idle spells have lately lasted (a running average)
  std::uint64_t idle_since_ns_ = 0;
  std::uint64_t typical_gap_ns_ = ~0ull;
  void end_idle_spell() noexcept;
  std::uint64_t rng_ = 0;           // owner: victim order
  struct sighting {
    std::uint64_t count = ~0ull;  // a worker's switch count
    std::uint64_t since = 0;      // when we first saw it
  };
  std::vector<sighting> seen_switches_;  // owner: other workers' switch counts, for the stuck-worker rule

  std::mutex park_lock_;
  std::condition_variable park_cv_;
  bool wake_pending_ = false;   // guarded by park_lock_
  bool sleeping_ = false;       // guarded by park_lock_
  bool in_poller_ = false;      // guarded by park_lock_: it sleeps in the poller (unpark interrupts that)
  std::uint64_t sleep_until_ = 0;  // guarded by park_lock_
};

}  // namespace grove::internal

namespace grove {

// The runtime's shared state (grove::runtime holds it; scoped_processes keep it alive past stop()).
struct runtime::state : std::enable_shared_from_this<runtime::state> {
  explicit state(const runtime_config& cfg);
  ~state();

  runtime_config config;
  internal::process_table table;
  internal::stack_slots slots;
  internal::inject_queue injector;
  internal::registry names;
  std::vector<std::unique_ptr<internal::worker>> workers;

  // Idle workers (parking.cpp).
  alignas(64) std::atomic<unsigned> searching{0};  // shared: workers looking for work to steal
  std::atomic<unsigned> idle_count{0};             // shared: workers parked, or about to
  std::atomic<unsigned> watchers{0};               // shared: parked workers watching LIFO slots (worker::park)
  std::atomic<unsigned> long_spinners{0};          // shared: workers in a spin past 20 µs (at most one; parking.cpp)
  // shared: the long spinner whose spin ended in work it now runs (its index; ~0u: none) and when
  // that spin ended; it spins again when that work is done (parking.cpp, spinner_lately_at_work)
  std::atomic<unsigned> spinner_at_work{~0u};
  std::atomic<std::uint64_t> spinner_at_work_since_ns{0};
  internal::poller poller;                         // the runtime's epoll (poller.hpp)
  internal::io_table io;                           // fd registrations (io.hpp)
  internal::blocking_pool blocking;                // run_blocking's threads (blocking.hpp)
  internal::tracer tracer;                         // grove::trace's rings (tracer.hpp)
  internal::remote_seam remote;                    // the distribution layer's router (remote.hpp)
  internal::mute_registry mutes;                   // senders waiting for overloaded processes (overload.cpp)
  std::unique_ptr<internal::top_server> top;       // tools/top's socket, if asked for (owner: the runtime's thread)
  // shared: who holds the poller: nobody, an idle worker that sleeps in it (or is about to), or a
  // busy worker reaping it without waiting (parking.cpp, step 6)
  enum class poller_holder : std::uint8_t { none, sleeper, reaper };
  std::atomic<poller_holder> poller_held{poller_holder::none};
  // shared: an idle worker sleeps on its condition variable in the poller's place, leaving the
  // poller to a spinner (parking.cpp, "A spinner reaps"); at most one at a time
  std::atomic<bool> poller_ceded{false};
  std::atomic<std::uint32_t> io_waiters{0};        // shared: processes waiting for an fd (receive.cpp, wait_ready)
  // shared: until when the poller's holder sleeps (0: nobody does); read and lowered under wheel
  // locks (parking.cpp, step 4), so relaxed.
  std::atomic<std::uint64_t> poll_until{0};
  std::atomic<unsigned> fence_word{0};             // shared: parking_fence under ThreadSanitizer
  std::mutex idle_lock;
  std::vector<internal::worker*> idle_workers;     // guarded by idle_lock

  enum class phase : int { running, stopping, stopped };
  std::atomic<phase> current_phase{phase::running};  // shared
  std::atomic<bool> workers_stop{false};             // shared: workers leave their loop once set (but see offloaded)
  // shared: processes in run_blocking (blocking.cpp). Worker 0 stays in its loop after workers_stop
  // while any is, to end them when their call returns (runtime.cpp, stop step 6).
  std::atomic<unsigned> offloaded{0};
  std::atomic<std::size_t> scoped_live{0};           // shared: scoped processes alive
  std::atomic<std::size_t> scoped_blocked{0};        // shared: scoped processes blocked in a wait (runtime.cpp, stop step 2)
  std::atomic<unsigned> workers_in_loop{0};          // shared: worker threads not yet out of their loop
  std::mutex exits_lock;
  std::condition_variable exits_cv;                  // notified when the last scheduled PCB comes back, a
                                                     // scoped wait ends or a worker leaves, while someone waits
  std::atomic<unsigned> idle_waiters{0};             // shared: threads in stop() or wait_until_idle()

  alignas(64) std::atomic<std::uint64_t> next_ref{1};  // shared: monitor and request ids
  alignas(64) std::atomic<std::uint64_t> dead_letters{0};
  std::atomic<std::uint64_t> foreign_spawned{0};
  std::atomic<unsigned> timer_round_robin{0};
  std::atomic<bool> out_of_memory_reported{false};  // shared: worker.cpp reports running out once

  // Scheduling (scheduler.cpp).
  void schedule(internal::process* p);      // p just became NOTIFIED: put it in a queue
  // To the queue of p's home, pinned or gathered (process.hpp, `home`); false if it has none.
  bool send_home(internal::process* p);
  // Makes p runnable if it is not running or queued; why: for the trace (event_kind::wake).
  void wake(internal::process* p, trace::wake_cause why = trace::wake_cause::message) noexcept;
  void notify_work() noexcept;              // new work is visible: make sure someone looks
  void wake_one_idle() noexcept;
  void process_exited(internal::process* p) noexcept;  // exit protocol step 1
  void scheduled_released() noexcept;                   // a scheduled process's PCB came back (process_table.cpp)
};

}  // namespace grove

namespace grove::internal {

// Process context, after a send: counted on the worker running the sender (a load and a store, no
// RMW: only that worker writes its count). A scoped process's sends are not counted (no worker runs
// it), as its reductions are not.
inline void count_send(runtime_state& rt, process* self) noexcept {
  if (self->kind == process_kind::scheduled) count_owned(rt.workers[self->worker]->messages_sent);
}

// The seq_cst fence of the parking protocol (parking.cpp, step 2), and of the send without a
// reference (delivery.cpp): both are Dekker's store-fence-load. ThreadSanitizer does not
// model fences, so under it both sides instead do a seq_cst read-modify-write on one shared word:
// whichever comes second in that word's order synchronises with the first, which gives the same
// "one of us sees the other" guarantee in a form TSan checks.
inline void parking_fence(runtime_state& rt) noexcept {
#if defined(__SANITIZE_THREAD__)
  rt.fence_word.fetch_add(1, std::memory_order_seq_cst);
#else
  (void)rt;
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace grove::internal
