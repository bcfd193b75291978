// grove/services/outcome.hpp: the error model of Grove's service patterns: one error code category
// ("grove.services"), a `failure` (a code plus, where it matters, an exit reason), and outcome<T>,
// the value-or-failure that every call, await, pool run, gather and retry returns.
//
//   auto r = grove::services::call(db, get_user{42}, grove::services::deadline::after(1s));
//   if (r) use(*r);
//   else if (r.error() == grove::services::errc::deadline_exceeded) ...
//   else log(r.failure().to_string());   // e.g. "the server exited during the call: exception: boom"
//
// Why a failure carries an exit_reason: OTP's call answers a dead server with the server's own exit
// reason, and a task's exception or a killed worker must reach the caller with its words. A bare
// std::error_code cannot carry that, so failure = {code, reason}; reason is meaningful for
// errc::exited (the target's exit reason) and errc::exception (exit_reason::exception(what, type)).
//
// One meaning, one code: what only services mean (deadline_exceeded, exited, pool_full, ...) is a
// services::errc; what the runtime already names is the runtime's grove::errc (noproc, timeout,
// not_in_process, bad_argument), so a caller compares a call's error with the same code whether the
// runtime or a service produced it. Nothing here throws except outcome::value() on a failure
// (services::error).
#pragma once

#include <exception>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::services {

// Besides these: grove::errc::timeout (a call's timeout passed without a reply: OTP's timeout),
// grove::errc::noproc (the target, a server, pool or name, is not alive), grove::errc::not_in_process
// (the call needs a calling process), grove::errc::bad_argument (an argument out of its domain: a
// pool of 0 workers, a task awaited twice).
enum class errc {
  deadline_exceeded = 1,  // the request's deadline passed before the operation finished
  exited,             // the target exited before answering; the failure carries its exit reason
  call_to_self,       // a process called itself: it would wait for its own reply for ever
  pool_full,          // the pool's wait queue is full: rejected at once, nothing queued
  exception,          // the work threw; the failure carries exit_reason::exception(what, type)
  init_failed,        // a server's initialisation (its constructor) threw, or its name was taken
  bad_request,        // the target does not handle this request (a server_ref of another behaviour)
  no_workers,         // a router with no live members
};

}  // namespace grove::services

template <>
struct std::is_error_code_enum<grove::services::errc> : std::true_type {};

namespace grove::services {

// The category's name is "grove.services"; messages are one sentence each.
const std::error_category& services_category() noexcept;
// The enumerator's name: "deadline_exceeded", ...; fmt formats an errc so.
const char* to_string(errc e) noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), services_category()}; }

// Why an operation has no value.
struct failure {
  std::error_code code;  // a services::errc (or another category's code, passed through)
  exit_reason reason;    // errc::exited: the target's reason; errc::exception: the exception

  failure() = default;
  failure(errc e) : code(make_error_code(e)) {}  // NOLINT: implicit by design
  failure(grove::errc e) : code(grove::make_error_code(e)) {}  // NOLINT
  failure(std::error_code c, exit_reason r = {}) : code(c), reason(std::move(r)) {}  // NOLINT

  // failure{exception, exit_reason::exception(e.what(), its type)}.
  static failure from_exception(const std::exception& e);
  // The failure a monitor's down reason means: noproc for noproc, else exited with that reason.
  static failure from_exit(exit_reason r);

  // One line, e.g. "deadline exceeded", "the server exited during the call: exception: boom".
  std::string to_string() const;
};

// Thrown by outcome::value() when there is no value; code() is the failure's code, what() its text.
class error : public std::system_error {
 public:
  explicit error(services::failure f) : std::system_error(f.code, f.to_string()), failure_(std::move(f)) {}
  const services::failure& failure() const noexcept { return failure_; }

 private:
  services::failure failure_;
};

// A value or a failure. Cheap to move; copyable when T is.
template <class T>
class [[nodiscard]] outcome {
 public:
  using value_type = T;

  outcome(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  template <class U>
    requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
             !std::is_same_v<std::remove_cvref_t<U>, outcome> && !std::is_same_v<std::remove_cvref_t<U>, failure> &&
             !std::is_same_v<std::remove_cvref_t<U>, errc> && !std::is_same_v<std::remove_cvref_t<U>, grove::errc>)
  outcome(U&& value) : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  outcome(services::failure f) : v_(std::in_place_index<1>, std::move(f)) {}  // NOLINT
  outcome(errc e) : outcome(services::failure(e)) {}                          // NOLINT
  outcome(grove::errc e) : outcome(services::failure(e)) {}                   // NOLINT

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  // Throws services::error when there is no value.
  T& value() & { check(); return std::get<0>(v_); }
  const T& value() const& { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  T& operator*() & noexcept { return *std::get_if<0>(&v_); }
  const T& operator*() const& noexcept { return *std::get_if<0>(&v_); }
  T* operator->() noexcept { return std::get_if<0>(&v_); }
  const T* operator->() const noexcept { return std::get_if<0>(&v_); }

  // The failure's code; a default (false) error_code when there is a value.
  std::error_code error() const noexcept { return has_value() ? std::error_code{} : std::get<1>(v_).code; }
  // The failure; a default one (no code) when there is a value.
  services::failure failure() const { return has_value() ? services::failure{} : std::get<1>(v_); }

 private:
  void check() const {
    if (!has_value()) throw services::error(std::get<1>(v_));
  }
  std::variant<T, services::failure> v_;
};

// outcome<void>: success, or a failure.
template <>
class [[nodiscard]] outcome<void> {
 public:
  using value_type = void;

  outcome() noexcept = default;
  outcome(services::failure f) : failure_(std::move(f)) {}  // NOLINT: implicit by design
  outcome(errc e) : failure_(e) {}                          // NOLINT
  outcome(grove::errc e) : failure_(e) {}                   // NOLINT

  bool has_value() const noexcept { return !failure_.code; }
  explicit operator bool() const noexcept { return has_value(); }
  // Throws services::error on a failure.
  void value() const {
    if (!has_value()) throw services::error(failure_);
  }
  std::error_code error() const noexcept { return failure_.code; }
  services::failure failure() const { return failure_; }

 private:
  services::failure failure_;  // no code: success
};

}  // namespace grove::services

template <>
struct fmt::formatter<grove::services::errc> : grove::detail::named_formatter<grove::services::errc> {};
// A failure formats as its to_string(): "deadline exceeded", "the server exited during the call: ...".
template <>
struct fmt::formatter<grove::services::failure> : grove::detail::text_formatter {
  template <class Ctx>
  auto format(const grove::services::failure& f, Ctx& ctx) const -> decltype(ctx.out()) {
    return format_text(f.to_string(), ctx);
  }
};

GROVE_PUBLIC_END
