// errc.cpp: the "grove.services" error category, failure's and deadline's words
// (grove/services/outcome.hpp, grove/services/deadline.hpp).
#include <grove/services/deadline.hpp>
#include <grove/services/outcome.hpp>

#include <chrono>
#include <string>
#include <typeinfo>

#include <fmt/format.h>

namespace grove::services {

namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "grove.services"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::deadline_exceeded: return "the deadline passed";
      case errc::exited: return "the process exited before answering";
      case errc::call_to_self: return "a process cannot call itself (it would wait for its own reply)";
      case errc::pool_full: return "the pool's wait queue is full";
      case errc::exception: return "the work threw an exception";
      case errc::init_failed: return "the server's initialisation failed";
      case errc::bad_request: return "the server does not handle this request";
      case errc::no_workers: return "the router has no live workers";
    }
    return "unknown services error";
  }
};

}  // namespace

const std::error_category& services_category() noexcept {
  static const category c;
  return c;
}

failure failure::from_exception(const std::exception& e) {
  return failure(make_error_code(errc::exception), exit_reason::exception(e.what(), typeid(e).name()));
}

failure failure::from_exit(exit_reason r) {
  if (r.what_kind() == exit_reason::kind::noproc) return failure(grove::errc::noproc);
  return failure(make_error_code(errc::exited), std::move(r));
}

std::string failure::to_string() const {
  if (!code) return "no failure";
  std::string out = code.message();
  const bool has_reason = !reason.is_normal() || code == errc::exited;
  if (code.category() == services_category() && has_reason) {
    if (code == errc::exception) return reason.to_string();  // "exception: <what>"
    out.append(": ").append(reason.to_string());
  }
  return out;
}

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::deadline_exceeded: return "deadline_exceeded";
    case errc::exited: return "exited";
    case errc::call_to_self: return "call_to_self";
    case errc::pool_full: return "pool_full";
    case errc::exception: return "exception";
    case errc::init_failed: return "init_failed";
    case errc::bad_request: return "bad_request";
    case errc::no_workers: return "no_workers";
  }
  return "unknown";
}

std::string to_string(const deadline& d) {
  if (d.is_never()) return "never";
  const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(d.remaining()).count();
  if (left <= 0) return "passed";
  if (left >= 1'000'000'000) return fmt::format("in {:.3f} s", left / 1e9);
  if (left >= 1'000'000) return fmt::format("in {:.1f} ms", left / 1e6);
  return fmt::format("in {} us", (left + 999) / 1000);
}

}  // namespace grove::services
