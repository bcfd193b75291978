// grove/errc.hpp: the errors Grove reports, as a std::error_code category and one exception type.
//
// Operations that can fail in normal use come in two forms: a throwing one (`spawn`) that throws
// grove::error, and a `try_` one that returns grove::result<T> and never throws for these errors.
#pragma once

#include <string>
#include <system_error>
#include <utility>
#include <variant>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

enum class errc {
  process_limit = 1,   // spawning would exceed runtime_config::process_limit
  noproc,              // the target process does not exist (never did, or has exited)
  name_taken,          // register_name: the name is already registered to a live process
  already_named,       // register_name: the process already has a registered name
  no_such_name,        // send/whereis by a name that no live process holds
  not_in_process,      // the call needs a calling process (a Grove process or a scoped_process)
  not_running,         // no Grove runtime is running
  already_running,     // a second runtime was started while one is running
  timeout,             // a wait on a foreign thread ran past its timeout
  bad_argument,        // an argument outside its domain (e.g. a negative timeout where none is allowed)
  in_process,          // the call must be made from a thread that runs no Grove process (runtime::stop,
                       // wait_until_idle, scoped_process: from a process they would wait for themselves)
  end_of_file,         // the peer closed the stream before all the bytes asked for arrived (grove/net.hpp)
};

// The enumerator's name ("noproc"); fmt formats an errc so. The sentence is make_error_code(e).message().
const char* to_string(errc e) noexcept;

// The category's name is "grove"; messages are one sentence each.
const std::error_category& grove_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), grove_category()}; }

// Thrown by the throwing forms of Grove's operations. code() compares equal to the errc.
class error : public std::system_error {
 public:
  explicit error(errc e) : std::system_error(make_error_code(e)) {}
  error(errc e, const std::string& what) : std::system_error(make_error_code(e), what) {}
};

// What result<T>::value() throws when there is no value: std::system_error for an error code. A
// library with its own error type E gives it a throw_result_error(const E&) found by ADL
// (grove::supervisor::start_error does).
[[noreturn]] inline void throw_result_error(const std::error_code& ec) { throw std::system_error(ec); }

// A value or an error: what the `try_` operations return. E is std::error_code unless an operation
// has more to say about a failure (grove::supervisor::start_error carries the child and its reason).
template <class T, class E = std::error_code>
class result {
 public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  result(E e) : v_(std::in_place_index<1>, std::move(e)) {}          // NOLINT
  template <class C>
    requires(std::is_error_code_enum_v<C> && std::is_constructible_v<E, std::error_code>)
  result(C e) : v_(std::in_place_index<1>, E(make_error_code(e))) {}  // NOLINT: an errc, as an error

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  // Throw (throw_result_error) when there is no value.
  T& value() & { check(); return std::get<0>(v_); }
  const T& value() const& { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  T& operator*() & noexcept { return std::get<0>(v_); }
  const T& operator*() const& noexcept { return std::get<0>(v_); }
  T* operator->() noexcept { return &std::get<0>(v_); }
  const T* operator->() const noexcept { return &std::get<0>(v_); }
  // The error; a default E (for error_code: false) when there is a value.
  E error() const { return has_value() ? E{} : std::get<1>(v_); }

 private:
  void check() const {
    if (!has_value()) throw_result_error(std::get<1>(v_));
  }
  std::variant<T, E> v_;
};

}  // namespace grove

template <>
struct std::is_error_code_enum<grove::errc> : std::true_type {};

template <>
struct fmt::formatter<grove::errc> : grove::detail::named_formatter<grove::errc> {};

GROVE_PUBLIC_END
