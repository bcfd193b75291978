// grove/supervisor/errc.hpp: the errors of grove::supervisor, as a std::error_code category
// ("grove.supervisor") and one exception type.
//
// The management calls return these codes in grove::result<T> (or a std::error_code). Calls that
// reach no supervisor return the runtime's codes instead: grove::errc::noproc (it is not alive, or
// exited during the call), grove::errc::timeout (no reply within the caller's timeout),
// grove::errc::not_in_process (called from a thread that is not a process).
#pragma once

#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>
#include <string>
#include <system_error>
#include <type_traits>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::supervisor {

enum class errc {
  invalid_flags = 1,       // flags out of their domain (negative intensity, period <= 0, ...)
  invalid_child_spec,      // a child spec field out of its domain, or a bad combination of fields
  duplicate_child_id,      // two specs, or a new spec and a present child, share an id
  start_failed,            // a child's start function failed (threw, returned an error or no pid)
  already_present,         // start_child: a child with this id exists and is not running
  already_started,         // start_child: a child with this id is running (or the name is taken)
  not_found,               // no child with this id (or pid)
  running,                 // restart_child / delete_child: the child is running
  restarting,              // restart_child / delete_child: the child is waiting to be restarted
  simple_one_for_one,      // the call is not available on a simple_one_for_one supervisor
  not_simple_one_for_one,  // start_child with arguments on a supervisor that is not simple_one_for_one
  calling_self,            // a supervisor called its own management API (it would wait for itself)
};

// The category's name is "grove.supervisor"; messages are one sentence each.
const std::error_category& supervisor_category() noexcept;
// The enumerator's name: "invalid_flags", ...; fmt formats an errc so.
const char* to_string(errc e) noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), supervisor_category()}; }

// Why a start (start_link, start_child, restart_child) failed, with what OTP's error term carries.
struct start_error {
  std::error_code code;  // supervisor::errc (start_failed, already_started, ...) or grove::errc (noproc, timeout, ...)
  std::string child_id;  // the child concerned, if one is
  exit_reason reason;    // start_failed: the child's reason; a failed start_link: also the supervisor's exit reason's payload
  grove::pid pid;        // already_started: the running child (or the name's holder)
  std::string message;   // one sentence naming all of it

  start_error() = default;
  start_error(std::error_code c) : code(c) {}  // NOLINT: a bare code
  template <class E>
    requires std::is_error_code_enum_v<E>
  start_error(E e) : code(make_error_code(e)) {}  // NOLINT
  friend bool operator==(const start_error& e, const std::error_code& c) noexcept { return e.code == c; }
  template <class E>
    requires std::is_error_code_enum_v<E>
  friend bool operator==(const start_error& e, E c) noexcept {
    return e.code == make_error_code(c);
  }
};

// Thrown by supervisor::start_link: code() says what kind of failure, what() names the child and the
// reason in full, e.g. "supervisor start failed: child 'db' (spec 1 of 3): start function threw:
// connection refused"; details() has the child's id and reason as data.
class error : public std::system_error {
 public:
  error(std::error_code code, const std::string& what) : std::system_error(code, what), details_{code} {}
  explicit error(start_error e) : std::system_error(e.code, e.message), details_(std::move(e)) {}
  const start_error& details() const noexcept { return details_; }

 private:
  start_error details_;
};

[[noreturn]] inline void throw_result_error(const start_error& e) { throw error(e); }

}  // namespace grove::supervisor

template <>
struct std::is_error_code_enum<grove::supervisor::errc> : std::true_type {};

namespace grove::supervisor {
// What start_link (try_), start_child and restart_child return.
using start_result = grove::result<grove::pid, start_error>;
}  // namespace grove::supervisor

template <>
struct fmt::formatter<grove::supervisor::errc> : grove::detail::named_formatter<grove::supervisor::errc> {};

GROVE_PUBLIC_END
