// restarts: crash-and-restart cycles per second (bench/README.md's `restarts` workload).
//
// 1. restarts_per_second: a one_for_one supervisor (intensity 1,000,000,000 per 1 s: it never gives
//    up) over one permanent worker whose start function counts the start and spawn_links a process
//    that exits with reason `crash` at once. The clock runs from starting the supervisor until the
//    (N+1)-th start (the first start plus N restarts), as in bench/peers/erlang/restarts.erl. Crash
//    reports are switched off (the supervisor's logger is empty), as the Erlang peer runs with
//    logger level none.
//    The worker crashes the way C++ code crashes: grove::exit(exit_reason("crash")) throws, and the
//    C++ unwinder walks the process's stack (about 2-3 us per throw on the reference machine, most of
//    a cycle: bench/RESULTS.md).
//    The clock is read in a Grove process, as the Erlang peer reads it in an Erlang process: timed
//    from this program's main thread (a scoped_process on a foreign thread), starting the supervisor
//    and learning of the last start each wait for a sleeping OS thread to be woken, ~0.1-0.2 ms of
//    the ~4 ms that 1,000 restarts take here, which the peer does not pay.
// 2. restarts_no_unwind_per_second: the same, but the worker's function *returns*
//    exit_reason("crash") (grove/process.hpp): the same exit signal and restart without an exception,
//    which isolates the cost of the runtime and the supervisor from the cost of C++ unwinding.
// 3. bare_restarts_per_second: the cycle of 1 without the supervisor, for reference: a process that
//    traps exits spawn_links the crashing worker, receives its exit_signal and starts the next, N times.
// 4. restarts_exception_per_second: 1 with a worker that throws std::runtime_error (a crash as a bug
//    makes it, which the exit reason records as an exception). Built twice: `restarts`, and
//    `restarts_throw_traces`, linked with grove::throw_traces, which records each throw's site
//    (grove/stack_trace.hpp): the two side by side are the cost of the throw sites (bench/RESULTS.md).
//
//   restarts [--n 1000] [--threads 2]
//   restarts_throw_traces [--n 1000] [--threads 2]
#include <atomic>
#include <stdexcept>
#include <grove/grove.hpp>
#include <grove/supervisor.hpp>

#include "bench_common.hpp"

namespace {

struct started {
  long long count;
};
struct bare_done {
  double seconds;
  long long cycles;
};

void crash_at_once() { grove::exit(grove::exit_reason("crash")); }
grove::exit_reason return_crash() { return grove::exit_reason("crash"); }
[[gnu::noinline]] void throw_crash() { throw std::runtime_error("crash"); }

#ifdef GROVE_BENCH_THROW_TRACES
constexpr const char* workload = "restarts_throw_traces";
#else
constexpr const char* workload = "restarts";
#endif

struct supervised_done {
  double seconds;
  long long starts;
};

// N restarts of a worker under a one_for_one supervisor that never gives up; the seconds they took.
// Runs in a Grove process (the driver) and sends it supervised_done.
template <class Crash>
void supervised(long long n, grove::pid main_pid, Crash crash) {
  namespace sup = grove::supervisor;
  std::atomic<long long> starts{0};
  sup::child_spec worker;
  worker.id = "worker";
  worker.shutdown = sup::shutdown_policy::brutal_kill();
  const grove::pid driver = grove::self();
  worker.start = [&starts, driver, n, crash]() -> grove::result<grove::pid> {
    // relaxed: only the count matters; the (N+1)-th start tells the driver
    if (starts.fetch_add(1, std::memory_order_relaxed) + 1 == n + 1) grove::send(driver, started{n + 1});
    auto r = grove::try_spawn(grove::spawn_options{.link = true}, crash);
    if (!r) return r.error();
    return r->pid;
  };
  sup::flags flags{
      .strategy = sup::strategy::one_for_one, .intensity = 1'000'000'000, .period = std::chrono::seconds(1)};
  flags.logger = sup::logger{};  // silent
  const auto t0 = std::chrono::steady_clock::now();
  grove::pid s = sup::start_link(flags, {worker});
  const long long seen = grove::receive([](started m) { return m.count; });
  const double seconds = bench::seconds_since(t0);
  grove::unlink(s);
  const grove::monitor_ref ref = grove::monitor(s);
  grove::exit(s, grove::exit_reason::kill());
  // Its start function uses `starts` on this stack: it must be gone before we return.
  grove::receive(grove::when([ref](const grove::down& d) { return d.ref == ref; }, [](grove::down) {}));
  grove::send(main_pid, supervised_done{seconds, seen});
}

template <class Crash>
double run_supervised(long long n, grove::pid main_pid, Crash crash, int& status) {
  grove::spawn([=] { supervised(n, main_pid, crash); });
  const supervised_done done = grove::receive([](supervised_done d) { return d; });
  if (done.starts < n + 1) {
    std::fprintf(stderr, "restarts: too few starts (%lld)\n", done.starts);
    status = 1;
  }
  return done.seconds;
}

}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 1000}});
  const long long n = f["n"];
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"])});
  grove::scoped_process main_process;
  const grove::pid main_pid = main_process.pid();
  int status = 0;

  // 1. and 2. Through the supervisor.
  bench::result(workload, "restarts_per_second", "1/s",
                static_cast<double>(n) / run_supervised(n, main_pid, &crash_at_once, status), f);
  bench::result(workload, "restarts_no_unwind_per_second", "1/s",
                static_cast<double>(n) / run_supervised(n, main_pid, &return_crash, status), f);
  // 4. A thrown exception.
  bench::result(workload, "restarts_exception_per_second", "1/s",
                static_cast<double>(n) / run_supervised(n, main_pid, &throw_crash, status), f);

  // 3. Bare link and trap_exit, no supervisor.
  grove::spawn([n, main_pid] {
    grove::trap_exit(true);
    const auto t0 = std::chrono::steady_clock::now();
    long long cycles = 0;
    for (long long k = 0; k < n; ++k) {
      grove::pid p = grove::spawn_link(&crash_at_once);
      grove::receive(
          grove::when([p](const grove::exit_signal& e) { return e.from == p; }, [&](grove::exit_signal) { ++cycles; }));
    }
    grove::send(main_pid, bare_done{bench::seconds_since(t0), cycles});
  });
  const bare_done bare = grove::receive([](bare_done d) { return d; });
  bench::result(workload, "bare_restarts_per_second", "1/s", static_cast<double>(n) / bare.seconds, f);
  if (bare.cycles != n) {
    std::fprintf(stderr, "restarts: wrong number of bare cycles (%lld)\n", bare.cycles);
    status = 1;
  }
  return status;
}
