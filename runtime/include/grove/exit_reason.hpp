// grove/exit_reason.hpp: why a process exited, carried by exit signals, down messages and
// process_info. A small value type (one byte of kind and a shared, immutable detail), cheap to copy
// to every linked and monitoring process.
//
// The built-in reasons follow Erlang: normal (the function returned), shutdown (asked to stop, as by
// a supervisor), kill (the untrappable signal when sent directly with exit(pid, kill)), killed (what a
// process killed that way dies with), noproc (the target did not exist), exception (a C++ exception
// escaped the process; what() is kept), max_heap_size (the process's arena passed its limit).
// Anything else is a user reason: a name, like an Erlang atom or a tagged tuple's tag, with an
// optional payload of any copyable type.
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include <fmt/core.h>

#include <grove/stack_trace.hpp>

#include <grove/detail/named_formatter.hpp>
#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

class exit_reason {
 public:
  enum class kind : std::uint8_t { normal, shutdown, kill, killed, noproc, exception, max_heap_size, user };

  exit_reason() noexcept = default;  // normal
  // A user reason named `name` (e.g. exit_reason("bad_config")).
  explicit exit_reason(std::string name) : kind_(kind::user), detail_(make(std::move(name), {})) {}

  static exit_reason normal() noexcept { return exit_reason(kind::normal); }
  static exit_reason shutdown() noexcept { return exit_reason(kind::shutdown); }
  static exit_reason kill() noexcept { return exit_reason(kind::kill); }
  static exit_reason killed() noexcept { return exit_reason(kind::killed); }
  static exit_reason noproc() noexcept { return exit_reason(kind::noproc); }
  // An exception escaped the process; `what` is its what(), `type` its type name when known (as
  // typeid().name() gives it), `throw_site` where it was thrown when known (grove/stack_trace.hpp).
  static exit_reason exception(std::string what, std::string type = {}, stack_trace throw_site = {}) {
    return exit_reason(kind::exception, make(std::move(what), type.empty() ? std::any{} : std::any(std::move(type)), {},
                                             std::move(throw_site)));
  }
  static exit_reason max_heap_size(std::string detail) {
    return exit_reason(kind::max_heap_size, make(std::move(detail), {}));
  }
  // A user reason with a payload, read back with payload<T>(), like an Erlang tagged tuple
  // {name, ...}. `description` (optional) is how to_string() shows the payload.
  template <class T>
  static exit_reason user(std::string name, T payload, std::string description = {}) {
    return exit_reason(kind::user, make(std::move(name), std::any(std::move(payload)), std::move(description)));
  }

  kind what_kind() const noexcept { return kind_; }
  bool is_normal() const noexcept { return kind_ == kind::normal; }
  bool is_shutdown() const noexcept { return kind_ == kind::shutdown; }
  bool is_kill() const noexcept { return kind_ == kind::kill; }
  bool is_killed() const noexcept { return kind_ == kind::killed; }
  bool is_exception() const noexcept { return kind_ == kind::exception; }

  // The reason's words: the name of a built-in reason, an exception's what(), a user reason's name.
  std::string_view text() const noexcept;
  // A user reason's payload (or an exception's type name as std::string), if it holds a T.
  template <class T>
  const T* payload() const noexcept {
    return detail_ ? std::any_cast<T>(&detail_->payload) : nullptr;
  }
  // One line, e.g. "normal", "exception: division by zero", "bad_config", or a user reason's name
  // and description: "shutdown: failed_to_start_child 'db': exception: connection refused".
  std::string to_string() const;
  // An exception reason's type, demangled ("std::runtime_error"); empty if unknown or not an exception.
  std::string exception_type() const;
  // Where an exception reason's exception was thrown: recorded in programs linked with
  // grove::throw_traces (grove/stack_trace.hpp); nullptr if not recorded or not an exception.
  const stack_trace* throw_site() const noexcept {
    return detail_ && !detail_->throw_site.empty() ? &detail_->throw_site : nullptr;
  }
  // A user reason's description (empty if it has none).
  std::string_view description() const noexcept { return detail_ ? std::string_view(detail_->description) : std::string_view(); }

  // Equal when kind and text are equal (payloads are not compared).
  friend bool operator==(const exit_reason& a, const exit_reason& b) noexcept {
    return a.kind_ == b.kind_ && a.text() == b.text();
  }

 private:
  struct detail {
    std::string text;
    std::any payload;
    std::string description;
    stack_trace throw_site;
  };
  static std::shared_ptr<const detail> make(std::string text, std::any payload, std::string description = {},
                                            stack_trace throw_site = {}) {
    return std::make_shared<const detail>(
        detail{std::move(text), std::move(payload), std::move(description), std::move(throw_site)});
  }
  explicit exit_reason(kind k, std::shared_ptr<const detail> d = {}) noexcept : kind_(k), detail_(std::move(d)) {}

  kind kind_ = kind::normal;
  std::shared_ptr<const detail> detail_;  // null for the built-in reasons without text
};

inline std::ostream& operator<<(std::ostream& os, const exit_reason& r) { return os << r.to_string(); }

}  // namespace grove

template <>
struct fmt::formatter<grove::exit_reason> : grove::detail::text_formatter {
  template <class Ctx>
  auto format(const grove::exit_reason& r, Ctx& ctx) const -> decltype(ctx.out()) {
    return format_text(r.to_string(), ctx);
  }
};

GROVE_PUBLIC_END
