// protocol.hpp: the messages between supervisor processes and their callers. Internal.
//
// Every management call is one `request` to the supervisor and one `reply` back, matched by `ref`
// (the id of the caller's monitor on the supervisor, unique in the runtime's life). A supervisor
// tells the process that started it how its start went with one `init_ack`. `restart_due` is what a
// supervisor sends itself: a backoff timer that fired, or a failed restart to try again.
#pragma once

#include <any>
#include <cstdint>
#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/supervisor.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace grove::supervisor::internal {

enum class op : std::uint8_t {
  start_child,    // spec
  start_dynamic,  // args (simple_one_for_one)
  terminate_id,   // id
  terminate_pid,  // child
  restart_child,  // id
  delete_child,   // id
  which_children,
  count_children,
  stop,  // reason; no reply: the caller waits for the supervisor's down
};

struct request {
  grove::pid from{};
  std::uint64_t ref = 0;
  op what = op::which_children;
  std::string id{};
  grove::pid child{};
  std::optional<child_spec> spec{};
  std::any args{};
  exit_reason reason{};
};

struct reply {
  std::uint64_t ref = 0;
  std::error_code code;
  grove::pid pid;
  std::vector<child_info> children;
  child_counts counts;
  start_error failure;  // a failed start_child / restart_child: the details (code repeats `code`)
};

// A reply relayed by the helper process of a call with a finite timeout (supervisor.cpp).
struct relayed_reply {
  grove::pid relay;
  reply answer;
};

struct init_ack {
  grove::pid supervisor;
  start_error failure;  // failure.code unset: started
};

struct restart_due {
  std::uint64_t key = 0;         // the child (child::key)
  std::uint64_t generation = 0;  // stale unless equal to the child's
  bool count = false;            // a retry after a failed start: counts toward the intensity
};

// {shutdown, {failed_to_start_child, Id, Reason}}: a supervisor's exit reason when child `id` did not start.
exit_reason failed_to_start_reason(const std::string& id, const exit_reason& reason);

// Runs a supervisor in the calling process (the body of the process try_start_link spawns).
[[noreturn]] void run_supervisor(pid parent, flags f, std::vector<child_spec> specs);

// What supervisor::validate says about one spec ("" when it is fine).
std::string check_spec(const child_spec& spec, const flags& f, bool is_template);

// The global logger, re-read only when set_logger changed it since `seen_version` (crash_report.cpp).
// Returns false when unchanged; otherwise stores the current one in `out` and updates the version.
bool global_logger_changed(std::uint64_t& seen_version, std::shared_ptr<const logger>& out);

}  // namespace grove::supervisor::internal
