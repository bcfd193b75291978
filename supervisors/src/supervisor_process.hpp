// supervisor_process.hpp: the state of one supervisor process. Internal; the design is at the top
// of supervisor_process.cpp. Everything here is owned by the supervisor process alone.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <grove/grove.hpp>
#include <grove/supervisor.hpp>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol.hpp"

namespace grove::supervisor::internal {

using clock = std::chrono::steady_clock;

struct child {
  std::uint64_t key = 0;                   // unique in this supervisor; names it in restart_due
  std::shared_ptr<const child_spec> spec;  // static: its own; simple_one_for_one: the template
  std::any args;                           // simple_one_for_one: start_child's arguments
  grove::pid pid;                          // set iff state == running
  child_state state = child_state::stopped;
  exit_reason last_exit;           // why it last exited (for the gave_up report)
  clock::time_point started_at{};  // last successful start (backoff's reset_after)
  unsigned backoff_count = 0;      // delayed restarts in a row (backoff_policy::delay's n)
  timer_ref timer;                 // the pending backoff timer, if any
  std::uint64_t generation = 0;    // bumped when a pending restart is armed or cancelled
};

class supervisor_process {
 public:
  supervisor_process(pid parent, flags f);
  [[noreturn]] void run(std::vector<child_spec> specs);

 private:
  using child_list = std::list<child>;
  using child_it = child_list::iterator;

  // What start() found: empty `why` on success; else `why` in words and the child's `reason`.
  struct start_outcome {
    std::string why;
    exit_reason reason{};
    bool runtime_stopping = false;  // spawn said not_running: grove::runtime::stop is under way
  };

  [[noreturn]] void fail_start(start_error e, exit_reason exit_with);
  void serve();  // the loop; returns never (exits by grove::exit)
  void on_exit_signal(exit_signal e);
  void on_request(request r);
  void on_restart_due(const restart_due& t);

  child_it add_child(std::shared_ptr<const child_spec> spec, std::any args);
  void forget(child_it c);
  start_outcome start(child_it c);
  start_result start_added(child_it c);
  start_error failed_start(const child& c, const start_outcome& out) const;
  void child_exited(child_it c, exit_reason why);
  void restart(child_it c, grove::pid crashed);  // c crashed as `crashed`
  void restart_group(child_it trigger);
  bool restart_member(child_it m, child_it trigger);  // false: it failed and waits for a retry
  void retry_later(child_it c);
  void arm(child& c, clock::duration delay, bool count);
  void disarm(child& c);
  clock::duration next_delay(child& c);
  std::vector<child_it> group_of(child_it c);
  void stop_child(child& c);
  void stop_all();
  bool auto_shutdown_due() const;
  [[noreturn]] void give_up(child_it c, grove::pid crashed);
  [[noreturn]] void shut_down(exit_reason why);

  const logger* active_logger();
  void report(report_kind kind, const child& c, grove::pid p, const exit_reason& why, std::string text = {});
  child_info info_of(const child& c) const;

  grove::pid self_;
  grove::pid parent_;
  flags flags_;
  bool simple_;
  restart_intensity intensity_;
  std::shared_ptr<const child_spec> template_;          // simple_one_for_one
  child_list children_;                                 // start order
  std::unordered_map<std::string, child_it> by_id_;     // static children
  std::unordered_map<grove::pid, child_it> by_pid_;     // exactly the running children
  std::unordered_map<std::uint64_t, child_it> by_key_;  // every child
  std::uint64_t next_key_ = 1;
  std::uint64_t rng_state_;           // splitmix64, for backoff jitter
  std::uint64_t logger_version_ = 0;  // of global_logger_
  std::shared_ptr<const logger> global_logger_;

  // A named supervisor's figures on grove::metrics's page while it lives (supervisor_process.cpp,
  // "Metrics"). The collector holds the counters, never the supervisor.
  struct counters {
    std::atomic<std::uint64_t> restarts{0};  // owner adds (relaxed); the page reads a snapshot
  };
  struct metrics_registration {
    std::uint64_t id = 0;
    ~metrics_registration();
  };
  std::shared_ptr<counters> counters_ = std::make_shared<counters>();
  metrics_registration metrics_;
  void register_metrics();
};

}  // namespace grove::supervisor::internal
