// parking.cpp: how an idle worker goes to sleep, how it is woken, and who watches timers and IO
// while others are busy or blocked. The room of its own for the parking protocol; worker.cpp has
// the loop that calls it, scheduler.cpp the overview.
//
// ## The protocol (Go's spinning rules, plus one poller)
// 1. Searching: `searching` counts workers looking for work to steal; at most half of the busy
//    workers search. A worker that finds nothing spins for 20 µs (a futex wake costs more than that
//    here), then parks.
// 2. Store/load pairing, so that no wake-up is lost:
//    - a producer (spawn, wake into a queue) makes the work visible, then notify_work(): a seq_cst
//      fence, then loads `idle_count`; if someone is idle and nobody searches, it wakes one worker,
//      which starts out searching;
//    - a parking worker increments `idle_count`, issues a seq_cst fence, then looks at every queue
//      once more before sleeping.
//    Either the producer sees the idle worker or the worker sees the work. The last searcher to give
//    up also looks once more (after decrementing `searching` and a fence), since producers skip the
//    wake while someone searches. A searcher that finds work wakes another idle worker if it was
//    the last searcher, so parallelism ramps up one worker at a time.
// 3. Sleeping: the first worker to park takes the poller (poller_held) and sleeps in it (4.; but
//    beside a spinner that reaps it, neither sleeps there nor spins first: "A spinner reaps"
//    below); the others sleep on their own condition variable until unparked, their own wheel's
//    next timer, or their watch (5.). An idle runtime burns ~0 CPU (bench/grove/idle: 0.00003 s of
//    CPU over 5 s with 100,000 parked processes).
// 4. The poller's holder sleeps in epoll (poller.hpp) until the earliest timer of *any* worker, an
//    fd's readiness, an interrupt or its watch. unpark() of the holder writes the poller's eventfd;
//    of another worker, notifies its condition variable. A timer armed anywhere that is earlier than
//    the holder's wake-up reads `poll_until` under its wheel's lock and interrupts the poller; the
//    holder publishes poll_until before it reads each wheel's earliest deadline under the same
//    lock, so either it sees the timer or the timer sees it. On waking it hands over the poller,
//    then fires what is due on every wheel and readies the processes waiting on ready fds: they are
//    queued on this worker, which runs them next; it wakes one other worker only when it readied
//    more than one ("Readiness runs where it was polled" at the wait below).
// 6. IO while every worker is busy: nobody sleeps in the poller then, so a busy worker reaps it
//    (epoll_wait without waiting) every io_reap_rounds scheduling rounds and at the first round of
//    each kernel tick (a round lasts as long as its process: 61 rounds of a process that computes
//    5 ms were 300 ms), when any process waits
//    for an fd (io_waiters, as Go's netpollWaiters) and no idle worker holds it; the processes it
//    readies are queued on it. A worker that computes without runtime calls reaps nothing, as it
//    fires no timers; the others do.
// 5. The watch: a process in another worker's LIFO slot is not work we may take now, but it becomes
//    stealable if that worker stays in one process for stuck_worker_ns, and nobody wakes us for that.
//    So a parked worker watches (start_watch below).
//
// ## Timers no worker strands
// A worker's timers live in its own wheel, which it fires itself at every scheduling round. A worker
// that is blocked in a syscall or computes for a long time does not, so: (a) the poller's holder,
// whenever a worker is idle, sleeps until the earliest deadline of all wheels and fires every wheel
// that is due (fire_due_everywhere); (b) busy workers look at the other wheels every
// steal_timers_rounds rounds and at each kernel tick (4 ms), and fire one that is due by more than
// stranded_timer_grace_ns. With one
// worker free, a timer armed on a blocked worker fires within the poller's wake-up latency; with
// every worker busy, within the next scheduling round of any worker that reaches one (Grove does not
// preempt: a worker in an endless computation reaches none). bench/grove/blocked_worker measures it.
//
// ## One poller, shared: measured
// `g++ -std=c++20 -O2 bench/grove/poller_probe.cpp -o /tmp/pp -pthread && /tmp/pp 1000 2` on this
// 2-vCPU VM, 3 runs: a look at the poller that finds nothing (epoll_wait, timeout 0) costs
// 109-121 ns, which is what a busy worker pays every io_reap_rounds rounds (step 6); waking a
// thread asleep in it and back costs 4.6-6.1 µs (49 µs in reruns on 2026-12-01: this VM's wake-up
// latency varies from day to day). 1,000 socketpairs bouncing a byte on 2 threads
// that do nothing else: 0.47-0.83 M events/s through one shared epoll, 0.66-0.88 M with one epoll
// per thread (1.04-1.56x). Kept: one instance, held by one idle worker at a time (tokio's driver,
// Go's netpoller), because readiness must reach whichever worker is free: per-worker instances tie
// an fd to a worker, and a worker that blocks or computes would strand its fds as it stranded its
// timers. The probe's gap is the cost of two threads in one epoll_wait, which this design avoids
// (one sleeper; reapers do not wait). Per-worker instances with stealing are the thing to try if
// the HTTP benchmarks on many cores show the lock (golang/go#65064 reports it at dozens of cores).
//
// ## Readiness (epoll), not completions (io_uring): measured
// The same probe, built with liburing where liburing-dev is installed (build/release/bench/grove/
// poller_probe 1000 2, 3 rounds, 2026-12-01, Linux 6.18): the bounce by completions, one io_uring
// per thread with a one-byte recv outstanding on every fd, a send queued as it completes and one
// submit-and-wait per batch, handles 0.66-0.81 M completions/s against 0.89-0.98 M readiness events/s
// for one epoll per thread (0.69-0.91x); on one thread with 100 pairs 0.87-1.06x. Looking at an
// empty completion ring costs 5.3-5.6 ns against epoll_wait's 110 ns, but a busy worker looks only
// every io_reap_rounds rounds, so that saving is small next to the syscalls io_uring does not save
// here (socket IO of small messages: each recv still waits on the socket's readiness inside the
// kernel). A completion design also needs a buffer per pending read (an idle connection would hold
// one: bench/grove/idle_connections measures 2,265 B per connection without) and a cancel round trip
// for a killed reader. Kept: readiness through epoll. io_uring is the thing to try for files
// (blocking.cpp offloads them to threads today) and with registered buffers on newer kernels.
#include <sched.h>

#include <algorithm>

#include "io.hpp"
#include "scheduler.hpp"
#include "timers.hpp"

namespace grove::internal {

namespace {
// The longest a watching worker sleeps (worker::park): how late, at worst, an idle worker notices a
// process stranded in the LIFO slot of a worker that computes without runtime calls. Go's sysmon
// preempts such a goroutine after 10 ms.
constexpr std::uint64_t watch_max_ns = 5'000'000;
// How long a worker that ran out of work keeps looking before it sleeps. A futex wake costs ~5-10 µs
// on these VMs; without this, a trickle of work from a foreign thread (one send every few µs) wakes
// a sleeping worker for every message. Measured with examples/spawn_million's shutdown (1M exit
// signals from a foreign thread): 15.4 s without the spin. 20 µs is short against the idle goal.
constexpr std::uint64_t spin_before_park_ns = 20'000;
// How often a spinning worker yields its CPU (sched_yield: 355-367 ns here when nothing else waits,
// `build/release/bench/grove/machine_probe`). A spinner holds a CPU that a thread made runnable
// meanwhile may need: on a machine with more runnable threads than CPUs (two nodes on one host,
// the host's own threads), the kernel would otherwise leave that thread waiting for the spinner's
// time slice, though it is often the one that makes the work the spinner waits for. BEAM's
// schedulers yield in their busy wait for the same reason. Measured with
// `python3 bench/harness/dist_send.py` round trips on this 2-vCPU VM (each node 2 threads, both
// nodes spinning while the other answers), 2026-12-06: Grove -> Erlang 22-24 K/s without the yield,
// 38-45 K/s yielding every spin round, 36-41 K/s every 4th round; Erlang -> Grove 22-25 K/s against
// 36-40 K/s; Grove -> Grove, and in-process skynet, ping_pong, fan_in and tcp_echo on 2 threads,
// within noise. Once a microsecond rather than every round: a round costs ~150-400 ns (a look at
// the poller), so a worker still sees new work within about a microsecond.
constexpr std::uint64_t spin_yield_ns = 1'000;
// How long a worker that ceded the poller to a spinner sleeps before it looks again ("A spinner
// reaps" below): the bound on how late readiness is found when that spinner then computes for long
// without a scheduling round. Below the kernel tick (4 ms) at which busy workers reap anyway.
constexpr std::uint64_t ceded_poller_sleep_ns = 1'000'000;
}  // namespace

// ## A spinner reaps; nobody sleeps in the poller beside it
// A worker that parks while another spins with the long-spin ticket (below), and processes wait
// for fds, sleeps on its condition variable for at most ceded_poller_sleep_ns instead of in the
// poller. Asleep in epoll_wait, it would be woken by the kernel for every event, though the
// spinner is the one there to take it; and a spinner does not reap while a sleeper holds the
// poller (reap_io), so every readiness went through that wake-up. The spinner takes the poller
// when its own spin ends; if it finds work instead and computes, the ceding worker takes the poller
// at its next look. One worker cedes at a time (poller_ceded), and only while nobody sleeps in
// the poller (a reaper holds it for a moment only: not ceding then halved round trips); the others
// sleep on their condition variables as beside a poller's sleeper, rather than each waking every
// millisecond. The ceding worker keeps every wheel's timers as the poller's sleeper would (step 4;
// a timer armed during its sleep is seen within the 1 ms bound). Measured: Grove -> Grove round
// trips with two workers per node (`build/release/bench/grove/dist_send --mode 1 --n 30000
// --threads 2`, against a sink of the same build, 2-vCPU VM, 2026-12-06, four alternating runs of
// a throwaway build with an environment switch): 19.0-22.5 K/s sleeping in the poller, 21.8-28.7
// K/s ceding it (one worker per node: 40-43 K/s); a sink's worker threads switched 40 K times in
// 30,000 round trips, 11-15 K ceding.
// Nor does it spin its own 20 µs first: on 2 vCPUs that spin takes the core the peer node needs to
// answer. Same command, five alternating runs of one build with an environment switch (a faster
// day): 24.4-28.7 K/s with that spin, 28.2-35.5 K/s without (higher in every pair); Grove -> Grove
// streams (`--mode 0 --n 1000000`) 1.38-2.82 M/s with, 1.87-2.57 M/s without (higher in 4 of 5);
// `bench/grove/tcp_echo --n 1` (45.6-50.1 K vs 50.3-50.8 K) and wrk against
// `bench/grove/http_hello` (c=1 25-31 K vs 24-32 K, c=64 57-78 K vs 59-74 K) do not move.
// Nor while the spinner runs the work its spin found, for up to ceded_poller_sleep_ns after that
// spin (spinner_at_work; it spins again when done): a worker woken meanwhile spun 20 µs on the
// core the rest of the work needed. Six alternating pairs, one build with a throwaway switch
// (2026-12-07): Erlang -> Grove streams of small terms into a two-worker Grove sink (`erl +S 2:2
// ... -s dist_send main -extra --mode 0 --payload 0 --n 1000000` against `build/release/bench/
// grove/dist_send --sink 1 --threads 2`) 171-204 K/s without, 188-242 K/s with (higher in each);
// Grove -> Grove round trips (`dist_send --mode 1 --n 30000 --threads 2`) 1 KB 30.4-35.2 K
// against 30.5-31.8 K (4 pairs), small 27.0-34.1 K against 26.5-32.9 K (3 pairs, each 2-3% lower:
// within this VM's drift), streams (`--mode 0 --n 1000000`) 1.36-2.34 M against 1.47-2.28 M.
// Rejected: a spinner that reaps while a sleeper holds the poller (the sleeper's wake-up still
// comes, and two threads take events from one epoll), waking the sleeper to hand it over; counting
// the spinner that runs the work its spin found as the reaper for 1 ms (or 100 µs), so that a
// worker that wakes meanwhile also cedes the poller again: Grove -> Grove round trips of 1 KB
// binaries rose from 26.7-34.6 to 32.7-38.7 K/s (5 alternating pairs, `dist_send --mode 1 --n 30000
// --threads 2`, 2026-12-07), but Erlang -> Grove streams of small terms fell from 161-233 K/s to
// 129-169 K/s (lower in 6 of 7 pairs; `erl ... -s dist_send main -extra --mode 0 --n 1000000`
// against a Grove sink with 2 workers; 164-166 K against 173-246 K with 100 µs). Nor a worker
// that parks beside a spinner at work, polls once without waiting, and cedes the poller if it found
// nothing (2026-12-07, same commands, alternating pairs): 1 KB round trips 27.0-32.3 -> 37.8-40.1
// K/s (sink threads switched 13.8 K -> 5.4 K times), but Erlang -> Grove streams 230-252 K ->
// 170-184 K/s (the sink read 2.5 messages per recvfrom instead of 6.4, and switched 3x as often:
// with nobody asleep in the poller the spinner reads each message as it comes, and on 2 vCPUs
// that time is the Erlang sender's). Restricted to a spinner whose work spells average under 100
// µs, or to the park after a ceded sleep that ran to its bound: the stream still fell (151-184 K)
// or the round trips no longer rose (27.1-34.5 K against 24.1-31.3 K). Restricted to a runtime
// whose stream reads lately answered writes (a conversation's turns, not a stream's; a score fed by
// grove::net's reads and writes), on another host (an Intel Xeon KVM guest, 2026-12-07, alternating
// pairs, sink and sender of one build with a throwaway switch): Grove -> Grove round trips of 1 KB
// binaries 61.3-64.0 -> 63.0-70.0 K/s (4 pairs), small 69.5-72.8 -> 74.2-80.8 K (3 pairs), Erlang
// -> Grove and Grove -> Grove streams within noise, but Erlang -> Grove round trips of 1 KB binaries
// 34.7-35.9 -> 26.0-28.8 K/s (3 pairs, `erl ... -s dist_send main -extra --mode 1 --payload 1024
// --n 30000` against a two-worker Grove sink): not kept either.

// ## How long an idle worker spins (runtime_config::max_idle_spin)
// 20 µs, unless idle spells have lately ended sooner than max_idle_spin: then one and a half times
// their running average (1/4 weight to the newest), up to max_idle_spin, for one worker of the
// runtime at a time (the others spin 20 µs, so a runtime never burns every core waiting). A spell
// ends when the worker finds work; one that ended in a sleep counts with the sleep, so sparse work
// (gaps of milliseconds) brings the spin back to 20 µs within a few spells, and an idle runtime
// sleeps as before (bench/grove/idle). What it buys: a round trip between two nodes on this 2-vCPU
// VM is two sleeps and two wake-ups without it, and the raw floor of a blocking socket ping-pong
// between two processes here is ~95 µs (10.3-10.9 K/s; a C probe with blocking sockets and
// TCP_NODELAY). `python3 bench/harness/dist_send.py --runs 3 --stream-n 500000 --rtt-n 30000`:
// Grove-to-Grove round trips 8 K/s with 20 µs always, 24-30 K/s with 200 µs (Erlang-to-Erlang in
// the same run: 7-8 K/s). Rejected: a fixed long spin (every worker burns a core after every burst
// of work, whatever comes next) and spinning every worker (on 2 vCPUs the spinners of one node
// take the cores the other node's workers need to answer).
void worker::end_idle_spell() noexcept {
  const std::uint64_t cap = 2 * static_cast<std::uint64_t>(std::chrono::nanoseconds(rt.config.max_idle_spin).count()) + spin_before_park_ns;
  const std::uint64_t gap = std::min(now_ns() - idle_since_ns_, cap);
  typical_gap_ns_ = typical_gap_ns_ == ~0ull ? gap : (3 * typical_gap_ns_ + gap) / 4;
  idle_since_ns_ = 0;
}

// Work this worker could take now. Other workers' LIFO slots do not count: they are not stealable
// while their owner is making progress, and counting them kept an idle worker spinning beside a
// ping-pong pair, pulling on the owner's cache lines (ping_pong ran slower on 2 workers than on 1).
bool worker::has_visible_work() const noexcept {
  // pinned_pending: seq_cst, as the other loads of park's look-again (parking.cpp, step 2)
  if (pinned_head_ != nullptr || pinned_pending.load(std::memory_order_seq_cst) || rt.injector.size_approx() > 0) return true;
  if (gathered_any.load(std::memory_order_seq_cst)) return true;  // seq_cst: as pinned_pending
  for (auto& w : rt.workers)
    if (w->local.size() > 0) return true;  // after the fence in park
  return runnext.load(std::memory_order_relaxed) != nullptr;
}

// The watch (parking.cpp step 5; scheduler.cpp, "Where work comes from", 6.), for park: a process in another worker's
// LIFO slot is not work we may take now, but it becomes stealable if that worker stays in one
// process for stuck_worker_ns, and nobody wakes us for that. So a parked worker watches, sleeping no
// longer than watch_backoff_ns_ (stuck_worker_ns, doubling up to watch_max_ns while it finds
// nothing), or stuck_worker_ns when its last search saw a slot whose owner had not switched
// (suspect_):
//   - when a LIFO slot or a gathered list (overload.cpp) is occupied: always (the occupant may be stranded);
//   - else when another worker is busy and nobody else watches (a busy worker may strand one).
// Returns when to look again, counted in rt.watchers (park stops counting when it wakes), or ~0 when
// there is nothing to watch. The pairing that leaves no occupant unwatched: push_runnext fills an
// empty slot, then reads `watchers` and wakes someone if it is 0; we count ourselves, then look, and
// stop counting only after looking again. All seq_cst: either we see its process or it sees our
// count (a count it read before we stopped counting means our second look comes after its push).
std::uint64_t worker::start_watch(std::uint64_t now) {
  const bool suspect = suspect_;
  suspect_ = false;
  auto slot_occupied = [&] {
    for (auto& w : rt.workers)
      // seq_cst: above; a gathered list counts as a LIFO slot (worker::push_gathered)
      if (w.get() != this && (w->runnext.load(std::memory_order_seq_cst) != nullptr || w->gathered_any.load(std::memory_order_seq_cst)))
        return true;
    return false;
  };
  const unsigned others_watching = rt.watchers.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: above
  const bool others_busy = rt.idle_count.load(std::memory_order_relaxed) < rt.workers.size();  // a hint: we count as idle
  if (!slot_occupied() && !(others_watching == 0 && others_busy)) {
    rt.watchers.fetch_sub(1, std::memory_order_seq_cst);  // seq_cst: above; a pusher now wakes someone
    if (!slot_occupied()) return ~0ull;
    rt.watchers.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: above
  }
  return now + (suspect ? stuck_worker_ns : watch_backoff_ns_);
}

// Another worker spins with the long-spin ticket while processes wait for fds: it reaps the poller
// ("A spinner reaps" above). relaxed: hints; a wrong answer costs a wake-up, never a lost event
bool worker::spinner_reaps() const noexcept {
  return rt.long_spinners.load(std::memory_order_relaxed) != 0 && rt.io_waiters.load(std::memory_order_relaxed) != 0;
}

// Another worker's long spin ended in work less than ceded_poller_sleep_ns ago, while processes
// wait for fds: it runs that work and spins again when done ("Nor does it spin its own 20 µs"
// above). relaxed: hints, as spinner_reaps (a torn pair of loads costs one wrong guess)
bool worker::spinner_lately_at_work() const noexcept {
  if (rt.io_waiters.load(std::memory_order_relaxed) == 0) return false;
  const unsigned at_work = rt.spinner_at_work.load(std::memory_order_relaxed);
  return at_work != ~0u && at_work != index &&
         now_ns() - rt.spinner_at_work_since_ns.load(std::memory_order_relaxed) < ceded_poller_sleep_ns;
}

// Returns after sleeping or on finding that work appeared; the caller looks for work again.
bool worker::park() {
  if (searching_) {
    searching_ = false;
    // The last searcher to give up looks again: producers skipped waking anyone while we searched.
    if (rt.searching.fetch_sub(1, std::memory_order_seq_cst) == 1) {  // seq_cst: pairs with notify_work's fence
      parking_fence(rt);
      if (has_visible_work()) {
        rt.searching.fetch_add(1, std::memory_order_seq_cst);
        searching_ = true;
        return false;
      }
    }
  }
  // After a watch (below) found nothing, sleep again at once: spinning 20 us after every watch would
  // burn up to a tenth of a core beside a busy worker and pull on its cache lines. The flag also
  // holds when the worker found work after that watch (or after a ceded sleep that ran to its
  // bound): clearing it then, so that the worker spins after that work, cost Erlang -> Grove
  // streams of small terms into a two-worker sink 229-271 K -> 178-221 K/s (3 alternating pairs,
  // 2026-12-07, commands in "A spinner reaps" below) and left Grove -> Grove round trips as they
  // were (23.6-30.4 K against 25.2-29.3 K, 4 pairs).
  const bool watched = watch_expired_;
  watch_expired_ = false;
  const std::uint64_t spin_start = now_ns();
  if (idle_since_ns_ == 0) idle_since_ns_ = spin_start;
  // How long this spin lasts ("How long an idle worker spins" above).
  std::uint64_t spin_ns = watched ? 0 : spin_before_park_ns;
  bool long_spinner = false;
  const auto max_spin = static_cast<std::uint64_t>(std::chrono::nanoseconds(rt.config.max_idle_spin).count());
  // A max_idle_spin at or below the short spin leaves the short spin alone (std::clamp needs lo <= hi).
  if (!watched && typical_gap_ns_ < max_spin && max_spin > spin_before_park_ns) {
    // relaxed: a ticket among spinners, ordering nothing (two long spinners for a moment are harmless)
    if (rt.long_spinners.fetch_add(1, std::memory_order_relaxed) == 0) {
      long_spinner = true;
      spin_ns = std::clamp(typical_gap_ns_ * 3 / 2, spin_before_park_ns, max_spin);
    } else {
      rt.long_spinners.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // Beside a spinner that reaps, a second one only takes the core a peer needs ("A spinner reaps"
  // above): sleep at once. relaxed: hints, as below
  // Nor while that spinner runs the work its spin found.
  if (!long_spinner && (spinner_reaps() || spinner_lately_at_work())) spin_ns = 0;
  {
    struct spin_ticket {  // given back when the spin ends, found work or not
      runtime_state& rt;
      bool held;
      unsigned index;
      bool found_work = false;
      ~spin_ticket() {
        if (!held) return;
        // relaxed: hints (spinner_lately_at_work); a spin that ended without work clears it
        if (found_work) rt.spinner_at_work_since_ns.store(now_ns(), std::memory_order_relaxed);
        rt.spinner_at_work.store(found_work ? index : ~0u, std::memory_order_relaxed);
        rt.long_spinners.fetch_sub(1, std::memory_order_relaxed);  // relaxed: as above
      }
    } ticket{rt, long_spinner, index};
    // While it spins it also looks at the poller (as Go's findrunnable calls netpoll(0) before it
    // blocks): a lone connection's next request is usually there within the spin, and waiting for
    // the poller's sleeper to be scheduled put ~30 µs into every round trip (bench tcp_echo, C=1).
    // And it lets the kernel run any thread waiting for a CPU (spin_yield_ns below).
    std::uint64_t yielded = spin_start;
    for (std::uint64_t until = spin_start + spin_ns, now; (now = now_ns()) < until;) {
      reap_io(true);
      if (has_visible_work()) {
        ticket.found_work = true;
        return false;
      }
      if (now - yielded >= spin_yield_ns) {
        ::sched_yield();
        yielded = now;
      } else {
        __builtin_ia32_pause();
      }
    }
  }
  // The spin's reaps may have dropped last references (a process killed while it waited on an
  // fd): finalize them before sleeping (worker.cpp, "Finalizing in batches"); work that makes is
  // seen by the look below.
  finalize_deferred();
  {
    std::lock_guard<std::mutex> g(rt.idle_lock);
    rt.idle_workers.push_back(this);
    rt.idle_count.fetch_add(1, std::memory_order_seq_cst);  // seq_cst: pairs with notify_work
  }
  parking_fence(rt);  // our idle_count increment before the checks below (file comment, step 2)
  auto leave_idle_list = [&] {
    std::lock_guard<std::mutex> g(rt.idle_lock);
    auto it = std::find(rt.idle_workers.begin(), rt.idle_workers.end(), this);
    if (it != rt.idle_workers.end()) {
      rt.idle_workers.erase(it);
      rt.idle_count.fetch_sub(1, std::memory_order_seq_cst);
      return true;  // nobody woke us
    }
    return false;  // wake_one_idle took us: we count as searching now
  };
  std::uint64_t expiry = next_expiry_ns.load(std::memory_order_relaxed);  // we are its only writer
  const std::uint64_t now = now_ns();
  if (has_visible_work() || expiry <= now || may_leave()) {
    if (!leave_idle_list()) searching_ = true;
    return false;
  }
  const std::uint64_t look_again = start_watch(now);
  const bool watch = look_again != ~0ull;  // then we count in rt.watchers until the sleep ends
  expiry = std::min(expiry, look_again);
  parks.fetch_add(1, std::memory_order_relaxed);  // statistics
  // Cede the poller to a spinner ("A spinner reaps; nobody sleeps in the poller beside it" above):
  // one worker at a time, and only while nobody sleeps in the poller already.
  // relaxed: hints; a wrong guess costs a wake-up of the kernel's or ours, never a lost event
  bool cede = false, beside_ceder = false;
  using holder = runtime_state::poller_holder;
  if (spinner_reaps() && rt.poller_held.load(std::memory_order_relaxed) != holder::sleeper) {
    cede = !rt.poller_ceded.exchange(true, std::memory_order_relaxed);  // relaxed: a hint, as above
    beside_ceder = !cede;
  }
  bool timed_out;
  if (cede) {
    // In the poller's place it also keeps every wheel's timers (step 4): it wakes for the earliest
    // (as published then; one armed later waits at most the 1 ms bound) and fires what is due.
    const std::uint64_t ceded_until = now + ceded_poller_sleep_ns;
    const std::uint64_t deadline = earliest_timer_everywhere(std::min(expiry, ceded_until));  // exact: hints run early
    timed_out = sleep_on_cv(deadline);
    rt.poller_ceded.store(false, std::memory_order_relaxed);  // relaxed: a hint, as above
    if (fire_due_everywhere(now_ns())) {
      timed_out = false;  // timers fired: work, not an empty watch
    } else if (timed_out && deadline < expiry) {  // our bound ended it, not our timer or the watch
      timed_out = false;                          // so the watch keeps its backoff
      watch_expired_ = true;                      // and the next park sleeps again without a spin first
    }
  } else if (beside_ceder) {
    timed_out = sleep_on_cv(expiry);  // as beside a worker that sleeps in the poller
  } else {
    timed_out = take_poller_to_sleep() ? sleep_in_poller(expiry) : sleep_on_cv(expiry);
  }
  if (timed_out && watch) {
    watch_expired_ = true;
    watch_backoff_ns_ = std::min(2 * watch_backoff_ns_, watch_max_ns);
  }
  if (watch) rt.watchers.fetch_sub(1, std::memory_order_seq_cst);  // seq_cst: as in start_watch
  if (!leave_idle_list()) searching_ = true;
  return true;
}

// Sleeps on the condition variable until unparked or `expiry` (file comment, step 3). True if the
// sleep ended at `expiry`.
bool worker::sleep_on_cv(std::uint64_t expiry) {
  std::unique_lock<std::mutex> g(park_lock_);
  sleeping_ = true;
  // A foreign send_after may have added an earlier timer to our wheel after we read the hint in
  // park, and found us not yet sleeping (unpark_if_sleeping_past wakes only a sleeper): read the
  // hint again. Its store comes before that thread's park_lock_ section, so if that section came
  // first we see the store here; if ours comes first, it sees sleeping_ and sleep_until_ and wakes us.
  expiry = std::min(expiry, next_expiry_ns.load(std::memory_order_relaxed));
  sleep_until_ = expiry;
  bool timed_out = false;
  while (!wake_pending_) {
    if (expiry == ~0ull) {
      park_cv_.wait(g);
    } else if (park_cv_.wait_until(g, steady_time(expiry)) == std::cv_status::timeout) {
      timed_out = true;
      break;
    }
  }
  wake_pending_ = false;
  sleeping_ = false;
  return timed_out;
}

// Holds the poller (file comment, step 4): sleeps in it until the earliest timer of any worker, an
// fd's readiness, an unpark or `expiry`; then fires whatever is due on every wheel. True if the
// sleep ended at its deadline with nothing else to do.
bool worker::sleep_in_poller(std::uint64_t expiry) {
  // Publish how long we mean to sleep, then take every wheel's earliest deadline under its lock: a
  // timer armed after our look at a wheel reads poll_until under the same lock and interrupts us if
  // it is earlier (timers.cpp, arm); one armed before is in what we read.
  rt.poll_until.store(expiry, std::memory_order_relaxed);  // ordered by the wheel locks below
  const std::uint64_t deadline = earliest_timer_everywhere(expiry);
  rt.poll_until.store(deadline, std::memory_order_relaxed);  // lower or equal: still ordered by the locks
  bool sleep = false;
  {
    std::lock_guard<std::mutex> g(park_lock_);
    if (!wake_pending_) {
      sleeping_ = true;
      in_poller_ = true;
      sleep_until_ = deadline;
      sleep = true;
    }
    wake_pending_ = false;
  }
  std::size_t ready = 0;
  if (sleep) {
    // An unpark between the section above and the wait interrupts the poller: the eventfd stays
    // readable until the wait reads it, so the wait ends at once.
    polling_ = true;
    ready = rt.poller.wait(deadline == ~0ull ? never_deadline_ns : deadline, [&](io_state* s, std::uint32_t events) {
      io_ready(rt, s, events);
    });
    polling_ = false;
    // Readiness runs where it was polled: this worker is about to run what it queued, so only a
    // second one is worth waking another worker for (Go's netpoll does the same: findrunnable
    // runs one goroutine and starts idle Ps only for the rest). Waking one per event put a futex
    // wake and a steal in every round trip of a lone connection.
    if (polled_ready_ > 1) rt.notify_work();
    polled_ready_ = 0;
    std::lock_guard<std::mutex> g(park_lock_);
    sleeping_ = false;
    in_poller_ = false;
    wake_pending_ = false;
  }
  rt.poll_until.store(0, std::memory_order_relaxed);  // nobody sleeps in the poller now (ordered by the locks)
  rt.poller_held.store(runtime_state::poller_holder::none, std::memory_order_release);  // pairs with the next holder's acquire
  const std::uint64_t now = now_ns();
  const bool fired = fire_due_everywhere(now);
  return ready == 0 && !fired && now >= deadline;
}

// True if this parking worker now holds the poller to sleep in it; false if another sleeps there.
// A reaper holds it for one epoll_wait that does not wait: we wait for it rather than sleep beside
// it on our condition variable, which would leave nobody in the poller once it goes back to work.
bool worker::take_poller_to_sleep() {
  using holder = runtime_state::poller_holder;
  for (;;) {
    holder cur = holder::none;
    // acquire: pairs with the release that gives the poller up (the previous holder's events handled)
    if (rt.poller_held.compare_exchange_weak(cur, holder::sleeper, std::memory_order_acquire, std::memory_order_relaxed))
      return true;
    if (cur == holder::sleeper) return false;
    __builtin_ia32_pause();  // a reaper, or a spurious failure: it lets go within a syscall
  }
}

// A busy worker, every io_reap_rounds rounds, and a worker spinning before it parks: when processes
// wait for fds and no idle worker sleeps in the poller, looks at it without waiting and readies
// what it reports (step 6). `will_run`: this worker runs what it readies next (it has nothing
// else), so it wakes another worker only for a second one.
void worker::reap_io(bool will_run) {
  using holder = runtime_state::poller_holder;
  // relaxed: hints; the exchange decides
  if (rt.io_waiters.load(std::memory_order_relaxed) == 0 || rt.poller_held.load(std::memory_order_relaxed) != holder::none)
    return;
  holder cur = holder::none;
  // acquire: as take_poller_to_sleep
  if (!rt.poller_held.compare_exchange_strong(cur, holder::reaper, std::memory_order_acquire, std::memory_order_relaxed))
    return;
  polling_ = will_run;
  rt.poller.wait(0, [&](io_state* s, std::uint32_t events) { io_ready(rt, s, events); });
  polling_ = false;
  rt.poller_held.store(holder::none, std::memory_order_release);  // pairs with the next holder's acquire
  if (polled_ready_ > 1) rt.notify_work();
  polled_ready_ = 0;
}

// Any worker: fires what is due on every wheel whose earliest deadline has passed (the owner's, or a
// blocked or busy worker's: file comment, "Timers no worker strands"). True if any wheel had something.
bool worker::fire_due_everywhere(std::uint64_t now) {
  bool any = false;
  for (auto& wp : rt.workers) {
    // relaxed: a hint; fire_due_timers takes the wheel's lock and fires exactly what is due
    if (wp->next_expiry_ns.load(std::memory_order_relaxed) <= now) {
      fire_due_timers(*wp);
      any = true;
    }
  }
  return any;
}

// The earliest deadline in this worker's wheel, read under its lock (sleep_in_poller's pairing).
std::uint64_t worker::earliest_timer() {
  std::lock_guard<std::mutex> g(wheel_lock);
  auto next = wheel.next_expiry();
  return next ? *next : ~0ull;
}

// The earliest of `bound` and every wheel's earliest deadline, each read under its lock: what a
// worker that keeps every wheel's timers while it sleeps (in the poller, or ceding it) wakes for.
std::uint64_t worker::earliest_timer_everywhere(std::uint64_t bound) {
  for (auto& wp : rt.workers) bound = std::min(bound, wp->earliest_timer());
  return bound;
}
void worker::unpark() noexcept {
  std::lock_guard<std::mutex> g(park_lock_);
  wake_pending_ = true;
  if (in_poller_) {
    rt.poller.interrupt();
  } else {
    park_cv_.notify_one();
  }
}

void worker::unpark_if_sleeping_past(std::uint64_t deadline_ns) noexcept {
  std::lock_guard<std::mutex> g(park_lock_);
  if (sleeping_ && sleep_until_ > deadline_ns) {
    wake_pending_ = true;
    if (in_poller_) {
      rt.poller.interrupt();
    } else {
      park_cv_.notify_one();
    }
  }
}

}  // namespace grove::internal

namespace grove {

using namespace grove::internal;

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

}  // namespace grove
