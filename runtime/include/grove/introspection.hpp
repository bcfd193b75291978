// grove/introspection.hpp: what a process and the runtime are doing, as Erlang's process_info and
// system_info.
//
// process_info of another process is a signal the target answers when it next runs (as in OTP), so
// its view is consistent; a process that never yields cannot answer and the call times out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <grove/exit_reason.hpp>
#include <grove/link.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

enum class process_status { runnable, running, waiting, exiting };

struct message_type_count {
  std::string type;  // the C++ type, demangled ("std::__cxx11::basic_string<char, ...>" for std::string)
  std::size_t count = 0;
};

struct process_details {
  grove::pid pid;
  process_status status = process_status::running;  // as seen by the process itself: running
  std::size_t mailbox_length = 0;  // messages waiting (signals excluded): the saved queue, once what
                                   // had arrived is taken in
  std::vector<message_type_count> mailbox_types;  // the commonest types among them, most first (at most 5)
  std::size_t stack_bytes = 0;     // live execution stack at the moment it answered
  std::size_t arena_bytes = 0;     // held by its arena
  std::size_t max_heap_bytes = 0;  // its arena limit (0: none)
  std::uint64_t reductions = 0;    // sends and receives done so far
  std::vector<grove::pid> links;
  std::vector<monitor_ref> monitors;         // monitors it holds on others
  std::vector<grove::pid> monitored_by;      // processes monitoring it
  std::string registered_name;               // empty if none
  int worker = -1;                           // the worker it runs on; -1 for a scoped_process
  bool trap_exit = false;
};

// Details of a live process; nullopt if it is not alive (or did not answer within `timeout`).
// From a process or a foreign thread. Thread-safe.
std::optional<process_details> process_info(pid p, std::chrono::milliseconds timeout = std::chrono::seconds(5));

struct worker_details {
  std::size_t run_queue_length = 0;   // processes waiting in its local queue (approximate)
  std::uint64_t context_switches = 0; // processes resumed
  std::uint64_t steals = 0;           // processes taken from other workers
  std::uint64_t parks = 0;            // times it went idle and slept
  std::uint64_t timers_fired = 0;
};

struct system_details {
  std::size_t process_count = 0;       // live processes, scoped_processes included
  std::size_t process_limit = 0;
  std::uint64_t spawned = 0;           // since start
  std::uint64_t dead_letters = 0;      // messages sent to dead or null pids
  std::size_t global_queue_length = 0; // runnable processes in the shared inject queue (approximate)
  std::size_t stack_slots = 0;         // execution stacks
  std::size_t stack_bytes = 0;         // size of each
  std::uint64_t stack_image_copies = 0;// parked stacks copied out to make room (see scheduler.cpp)
  std::vector<worker_details> workers;
  // Totals over the workers.
  std::uint64_t context_switches = 0;
  std::uint64_t steals = 0;
  std::uint64_t parks = 0;
};

// A snapshot of the running runtime; counters are read without stopping anything.
// Throws grove::error(errc::not_running) without a runtime.
system_details system_info();

// Resources held anywhere in Grove (all runtimes, across start and stop): after a clean stop, all
// are zero. Tests use it as a leak check.
struct resource_usage {
  std::size_t processes = 0;      // control blocks in use
  std::size_t stack_images = 0;   // saved stack images
  std::size_t arenas = 0;
  std::size_t messages = 0;       // message and signal nodes allocated and not yet freed
  std::size_t timers = 0;         // pending timers
  std::size_t fds = 0;            // sockets grove::net holds open
};
resource_usage resources_in_use() noexcept;

}  // namespace grove

GROVE_PUBLIC_END
