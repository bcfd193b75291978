// grove/runtime.hpp: configuring, starting and stopping the runtime.
//
// A program runs one Grove runtime at a time (as one BEAM per OS process); it may start and stop
// runtimes one after another. The free functions of Grove (spawn, send, ...) act on the running one.
// Thread-safety: construct and stop from a foreign (non-process) thread; never from inside a process.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace grove {

struct runtime_config {
  // Worker threads (the schedulers). 0: one per hardware thread.
  unsigned workers = 0;
  // Live processes at most, scoped_processes included; a spawn past it fails with errc::process_limit.
  // BEAM's default (+P). Reserving the table costs ~256 bytes of address space (not memory) per entry.
  std::size_t process_limit = std::size_t{1} << 20;
  // The deepest stack any process may use, in bytes. Each execution stack is this size plus a guard
  // page; a process that overflows it hits the guard page (SIGSEGV, named on stderr).
  std::size_t stack_bytes = 256 * 1024;
  // Execution stacks shared by all workers (see runtime/src/stack_slots.hpp). 0: 512 per worker, at
  // most 8,192. More stacks mean fewer stack-image copies when many processes take turns; each costs
  // address space (stack_bytes) and the memory its processes touched (at most the deepest stack used).
  unsigned stack_slots = 0;
  // Sends and received messages a process may do in one time slice before it yields its worker.
  std::uint32_t reductions_per_slice = 4000;
  // What ~runtime() gives processes to exit after exit(shutdown), before it kills them.
  std::chrono::milliseconds shutdown_timeout{5000};
};

// What stop() found: how the processes alive at the time ended.
struct stop_report {
  std::size_t exited = 0;   // exited after the shutdown signal (or had already gone)
  std::size_t killed = 0;   // were sent kill at the deadline
  bool clean = true;        // false if processes were still alive after the kill (never at a yield point)
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

  // Shuts down: every process gets exit(shutdown); at `deadline` the ones still alive get kill;
  // then the workers stop and every resource is released. Idempotent; call from a foreign thread.
  stop_report stop(std::chrono::milliseconds deadline);
  stop_report stop() { return stop(config().shutdown_timeout); }

  // Blocks the calling foreign thread until no process is alive (scoped_processes excluded) or the
  // timeout passes. True if none is alive.
  bool wait_until_idle(std::chrono::milliseconds timeout);

  bool is_running() const noexcept;
  const runtime_config& config() const noexcept;

  struct state;  // internal

 private:
  std::shared_ptr<state> state_;
};

}  // namespace grove
