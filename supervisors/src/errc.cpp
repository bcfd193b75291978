// errc.cpp: the "grove.supervisor" error category (grove/supervisor/errc.hpp).
#include <grove/supervisor/errc.hpp>

namespace grove::supervisor {

namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "grove.supervisor"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::invalid_flags:
        return "invalid supervisor flags";
      case errc::invalid_child_spec:
        return "invalid child spec";
      case errc::duplicate_child_id:
        return "duplicate child id";
      case errc::start_failed:
        return "a child failed to start";
      case errc::already_present:
        return "a child with this id is present (not running)";
      case errc::already_started:
        return "a child with this id is already running";
      case errc::not_found:
        return "no such child";
      case errc::running:
        return "the child is running";
      case errc::restarting:
        return "the child is waiting to be restarted";
      case errc::simple_one_for_one:
        return "not available on a simple_one_for_one supervisor";
      case errc::not_simple_one_for_one:
        return "only available on a simple_one_for_one supervisor";
      case errc::calling_self:
        return "a supervisor cannot call itself";
    }
    return "unknown supervisor error";
  }
};

}  // namespace

const std::error_category& supervisor_category() noexcept {
  static const category c;
  return c;
}

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::invalid_flags: return "invalid_flags";
    case errc::invalid_child_spec: return "invalid_child_spec";
    case errc::duplicate_child_id: return "duplicate_child_id";
    case errc::start_failed: return "start_failed";
    case errc::already_present: return "already_present";
    case errc::already_started: return "already_started";
    case errc::not_found: return "not_found";
    case errc::running: return "running";
    case errc::restarting: return "restarting";
    case errc::simple_one_for_one: return "simple_one_for_one";
    case errc::not_simple_one_for_one: return "not_simple_one_for_one";
    case errc::calling_self: return "calling_self";
  }
  return "unknown";
}

}  // namespace grove::supervisor
