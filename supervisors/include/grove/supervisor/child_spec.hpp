// grove/supervisor/child_spec.hpp: how a supervisor starts, restarts and stops one child (OTP's
// child specification), plus Grove's optional restart backoff.
//
//   namespace sup = grove::supervisor;
//   sup::child_spec db = sup::worker("db", [] { run_db(); });   // spawn_links the function
//   db.restart = sup::restart_type::permanent;                   // the defaults, as in OTP
//   db.shutdown = sup::shutdown_policy::timeout(std::chrono::seconds(5));
//
// The start function runs inside the supervisor process. It must spawn the child *linked* to the
// calling process (spawn_link, or spawn_options::link) and return its pid, or why it could not
// (OTP's {error, Reason}: an exit_reason, or an error code); a thrown exception or a null pid is a
// failed start too. That reason reaches whoever asked for the start (start_link's start_error,
// start_child's, and the supervisor's own exit reason {shutdown, {failed_to_start_child, Id, Reason}}).
// (The supervisor also links to the pid it gets back, a no-op when the start function did, so a child
// cannot escape supervision.) It may block briefly, e.g. to wait for the child's own initialisation,
// as OTP's start functions do; the supervisor answers nothing meanwhile.
#pragma once

#include <any>
#include <chrono>
#include <cstdint>
#include <functional>
#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <grove/process.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::supervisor {

// When a child that exited is restarted (OTP's restart types).
enum class restart_type {
  permanent,  // always
  transient,  // unless it exited normal or shutdown (or a user reason named "shutdown", OTP's
              // {shutdown, Term})
  temporary,  // never; its spec is forgotten when it exits
};

enum class child_type { worker, supervisor };

// The names, as OTP spells them: "permanent", ...; "worker", "supervisor". fmt formats them so.
const char* to_string(restart_type r) noexcept;
const char* to_string(child_type t) noexcept;

// What a start function returns: the started child's pid, or the reason it did not start.
class start_return {
 public:
  start_return(grove::pid started) noexcept : pid_(started) {}                  // NOLINT: implicit by design
  start_return(exit_reason why) noexcept : reason_(std::move(why)) {}           // NOLINT
  // An error code as the reason: a user reason named by the code's message, the code as its payload.
  start_return(std::error_code ec) : reason_(exit_reason::user<std::error_code>(ec.message(), ec)) {}  // NOLINT
  start_return(grove::errc e) : start_return(make_error_code(e)) {}             // NOLINT
  start_return(const grove::result<grove::pid>& r)                              // NOLINT: what try_spawn gives
      : start_return(r ? start_return(*r) : start_return(r.error())) {}

  bool started() const noexcept { return !pid_.is_null(); }
  grove::pid pid() const noexcept { return pid_; }
  // Why it did not start (meaningless once started).
  const exit_reason& reason() const noexcept { return reason_; }

 private:
  grove::pid pid_;
  exit_reason reason_;
};

// How a child is stopped (OTP's shutdown): brutal_kill sends kill at once; timeout(t) sends exit
// `shutdown` and waits up to t for the child to exit, then sends kill; infinity waits for ever (the
// default for supervisors, which need the time to stop their own children).
class shutdown_policy {
 public:
  enum class kind { brutal_kill, timeout, infinity };
  static shutdown_policy brutal_kill() noexcept { return shutdown_policy(kind::brutal_kill, {}); }
  static shutdown_policy timeout(std::chrono::milliseconds t) noexcept { return shutdown_policy(kind::timeout, t); }
  static shutdown_policy infinity() noexcept { return shutdown_policy(kind::infinity, {}); }
  // OTP's defaults: 5,000 ms for a worker, infinity for a supervisor.
  static shutdown_policy default_for(child_type type) noexcept {
    return type == child_type::worker ? timeout(std::chrono::milliseconds(5000)) : infinity();
  }

  kind what() const noexcept { return kind_; }
  std::chrono::milliseconds time() const noexcept { return time_; }  // for kind::timeout
  friend bool operator==(const shutdown_policy&, const shutdown_policy&) = default;

 private:
  shutdown_policy(kind k, std::chrono::milliseconds t) noexcept : kind_(k), time_(t) {}
  kind kind_;
  std::chrono::milliseconds time_;
};

// Beyond OTP: delay a child's restarts, exponentially, so a child that crashes at start does not
// hammer a failing dependency. The n-th restart in a row is delayed
//     min(max, initial × multiplier^(n-1)) × (1 + jitter × u),   u uniform in [-1, 1],
// never above `max`; the count starts again once the child has run for `reset_after`. While a
// restart waits (a send_after timer to the supervisor) the child shows as child_state::restarting
// and the supervisor goes on serving other children and calls.
// Interaction with intensity: a restart is counted when the supervisor decides on it, at the crash,
// as in OTP; the delay comes after. A delayed child crashes less often, so it eats less of the
// intensity: with delays >= period / intensity, one child alone never makes its supervisor give up
// (backoff replaces escalation); keep `max` below that if escalation is wanted.
// (For one_for_all and rest_for_one, the whole group is stopped at once and started after the delay
// of the child that crashed.)
struct backoff_policy {
  std::chrono::milliseconds initial{10};        // first delay (> 0)
  std::chrono::milliseconds max{5000};          // cap (>= initial)
  double multiplier = 2.0;                      // >= 1
  double jitter = 0.2;                          // in [0, 1]
  std::chrono::milliseconds reset_after{5000};  // a run this long forgets the earlier crashes (>= 0)

  // The delay before the n-th restart in a row (n >= 1); `u` in [-1, 1] is the jitter draw.
  std::chrono::nanoseconds delay(unsigned n, double u) const noexcept;
};

struct child_spec {
  std::string id{};  // unique within its supervisor, not empty
  // Starts the child: spawns it linked to the caller (the supervisor) and returns its pid, or why not.
  std::function<start_return()> start{};
  // For simple_one_for_one templates: starts a child with start_child's arguments. A template may
  // have `start` instead when start_child passes no arguments.
  std::function<start_return(const std::any& args)> start_with{};
  restart_type restart = restart_type::permanent;
  std::optional<shutdown_policy> shutdown{};  // unset: shutdown_policy::default_for(type)
  child_type type = child_type::worker;
  // OTP's significant children, for flags::auto_shutdown. Must be transient or temporary.
  bool significant = false;
  std::optional<backoff_policy> backoff{};  // unset: restart at once, as OTP does

  shutdown_policy effective_shutdown() const noexcept {
    return shutdown ? *shutdown : shutdown_policy::default_for(type);
  }
};

// A worker child whose start function spawn_links `fn` (copied for each start).
template <class F>
child_spec worker(std::string id, F fn, restart_type restart = restart_type::permanent) {
  child_spec spec;
  spec.id = std::move(id);
  spec.restart = restart;
  spec.start = [fn = std::move(fn)]() -> start_return {
    auto r = try_spawn(spawn_options{.link = true}, fn);
    if (!r) return r.error();
    return r->pid;
  };
  return spec;
}

// A simple_one_for_one template whose children run fn(arg), arg being start_child's argument, which
// must hold an Arg (else the start fails with grove::errc::bad_argument).
template <class Arg, class F>
child_spec worker_with(std::string id, F fn, restart_type restart = restart_type::permanent) {
  child_spec spec;
  spec.id = std::move(id);
  spec.restart = restart;
  spec.start_with = [fn = std::move(fn)](const std::any& args) -> start_return {
    const Arg* a = std::any_cast<Arg>(&args);
    if (!a) return grove::errc::bad_argument;
    auto r = try_spawn(spawn_options{.link = true}, [fn, arg = *a]() mutable { fn(std::move(arg)); });
    if (!r) return r.error();
    return r->pid;
  };
  return spec;
}

}  // namespace grove::supervisor

template <>
struct fmt::formatter<grove::supervisor::restart_type> : grove::detail::named_formatter<grove::supervisor::restart_type> {};
template <>
struct fmt::formatter<grove::supervisor::child_type> : grove::detail::named_formatter<grove::supervisor::child_type> {};

GROVE_PUBLIC_END
