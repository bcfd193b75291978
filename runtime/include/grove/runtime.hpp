// grove/runtime.hpp: configuring, starting and stopping the runtime.
//
// A program runs one Grove runtime at a time (as one BEAM per OS process); it may start and stop
// runtimes one after another. The free functions of Grove (spawn, send, ...) act on the running one
// (a process, or a thread with a scoped_process, acts on its own runtime even after that stopped).
// Thread-safety: construct, stop and wait from a foreign (non-process) thread: from inside a process
// they throw grove::error(errc::in_process), since they would wait for their own worker.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// Which exits runtime_config::crash_reports reports (log_kind::crash_report, grove/logger.hpp).
enum class crash_report_policy {
  unobserved,  // exits whose reason reaches no one else: of the process's own making (it returned or
               // threw a reason, grove::exit, its arena; not an exit signal, whose sender knows), with
               // a reason other than normal or shutdown, while no process links to it or monitors it
  all,         // every exit of the process's own making with a reason other than normal or shutdown,
               // linked or monitored or not, as OTP's proc_lib does (a supervised child's crash is then
               // reported twice: this report and the supervisor's)
};

struct runtime_config {
  // Worker threads (the schedulers). 0: one per hardware thread.
  unsigned workers = 0;
  // Live processes at most, scoped_processes included; a spawn past it fails with errc::process_limit.
  // BEAM's default (+P). Reserving the table costs ~256 bytes of address space (not memory) per entry.
  std::size_t process_limit = std::size_t{1} << 20;
  // The deepest stack any process may use, in bytes: 16 KiB to 256 MiB (rounded up to pages; a
  // stack may have up to a page more). Below each execution stack is a 64 KiB guard; a process that
  // overflows its stack hits the guard (SIGSEGV, named on stderr, and the program aborts).
  std::size_t stack_bytes = 256 * 1024;
  // Execution stacks shared by all workers (see runtime/src/stack_slots.hpp). 0: 512 per worker, at
  // most 8,192. More stacks mean fewer stack-image copies when many processes take turns; each costs
  // address space (stack_bytes plus 68 KiB) and the memory its processes touched (at most the
  // deepest stack used).
  unsigned stack_slots = 0;
  // Sends and received messages a process may do in one time slice before it yields its worker.
  std::uint32_t reductions_per_slice = 4000;
  // What ~runtime() gives processes to exit after exit(shutdown), before it kills them.
  std::chrono::milliseconds shutdown_timeout{5000};
  // Threads that run run_blocking's calls (grove/blocking.hpp), made as calls need them; more calls
  // at once wait for a free one. BEAM has 10 dirty IO schedulers, tokio up to 512 blocking threads.
  unsigned blocking_threads = 64;
  // A process whose mailbox holds this many messages it has taken in but no receive has matched
  // (the saved queue: grove/message.hpp) is reported once through the logger (log_kind::
  // unmatched_mail), with the types piling up; process_info shows the same. 0: never. The default
  // is far above what any workload in bench/ queues (a receiver that keeps up holds at most one
  // inbox batch, 256, in its saved queue).
  std::size_t unmatched_mail_warning = 10'000;
  // The longest an idle worker keeps looking for work before it sleeps. It spins 20 µs after
  // running out of work, and longer, up to this, while work has lately come back that soon: the
  // gaps of a request/response conversation with another process or node, where the sleep and the
  // wake-up (10-50 µs on the VMs this was measured on) are most of a round trip. One worker of the
  // runtime spins that long at a time. The price is CPU while the worker would sleep, as BEAM's
  // scheduler busy-wait; 0 keeps every spin at 20 µs (runtime/src/parking.cpp has the figures).
  std::chrono::microseconds max_idle_spin{200};
  // Which crashes get a crash report (crash_report_policy above).
  crash_report_policy crash_reports = crash_report_policy::unobserved;
  // A path for tools/top to attach to: a Unix-domain socket (mode 0600) the runtime answers on from
  // a thread of its own, so it answers while every worker is busy (runtime/src/top_server.cpp).
  // Empty: the GROVE_TOP_SOCKET environment variable's, else none.
  std::string top_socket{};
};

// What stop() found: how the processes alive at the time ended, and what it had to leave behind.
struct stop_report {
  std::size_t exited = 0;   // exited after the shutdown signal (or had already gone)
  std::size_t killed = 0;   // were still alive at the kill point and were sent kill
  // Still running at the deadline without reaching a runtime call (an endless loop, a blocking
  // syscall): they die at their next runtime call, or end when their function returns, on their own
  // worker thread, which stop() could not join (workers_left_running) and which keeps the runtime's
  // memory until then.
  std::vector<grove::pid> left_behind;
  unsigned workers_left_running = 0;
  std::size_t scoped_blocked = 0;  // scoped processes still blocked in Grove at the deadline
  bool clean = true;        // nothing left behind, nothing blocked
};

class runtime {
 public:
  // Starts the worker threads. Throws grove::error(errc::already_running) if a runtime is running,
  // errc::bad_argument for a config out of range.
  explicit runtime(runtime_config config = {});
  // Stops with config().shutdown_timeout if still running.
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  // Shuts down within `deadline` (runtime/src/runtime.cpp has the steps): spawns fail from now on;
  // scoped processes' blocking calls throw errc::not_running (the blocked ones are woken); every
  // process gets exit(shutdown); those alive at deadline - min(deadline / 4, 1 s) get kill; at the
  // deadline stop returns, and whatever still runs (an endless loop, a blocking syscall) is named in
  // the report and the logger, and left to die at its next runtime call. milliseconds::max() waits
  // for ever and kills nobody. Idempotent. Throws errc::in_process from inside a process.
  stop_report stop(std::chrono::milliseconds deadline);
  stop_report stop() { return stop(config().shutdown_timeout); }

  // Blocks the calling foreign thread until no process is alive (scoped_processes excluded) and every
  // exited process's control block, stack image, arena and messages are released, so that
  // resources_in_use() then counts none of them; or until the timeout passes. True if idle. Throws
  // errc::in_process from inside a process.
  bool wait_until_idle(std::chrono::milliseconds timeout);

  bool is_running() const noexcept;
  const runtime_config& config() const noexcept;

  struct GROVE_INTERNAL state;  // internal

 private:
  std::shared_ptr<state> state_;
};

}  // namespace grove

GROVE_PUBLIC_END
