// errors.cpp: grove::errc's category and exit_reason's words.
#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>

#include <string>

namespace grove {

const char* to_string(errc e) noexcept {
  switch (e) {
    case errc::process_limit: return "process_limit";
    case errc::noproc: return "noproc";
    case errc::name_taken: return "name_taken";
    case errc::already_named: return "already_named";
    case errc::no_such_name: return "no_such_name";
    case errc::not_in_process: return "not_in_process";
    case errc::not_running: return "not_running";
    case errc::already_running: return "already_running";
    case errc::timeout: return "timeout";
    case errc::bad_argument: return "bad_argument";
    case errc::in_process: return "in_process";
    case errc::end_of_file: return "end_of_file";
  }
  return "unknown";
}

namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "grove"; }
  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::process_limit: return "the process limit is reached";
      case errc::noproc: return "no such process";
      case errc::name_taken: return "the name is registered to another process";
      case errc::already_named: return "the process already has a registered name";
      case errc::no_such_name: return "no process is registered under that name";
      case errc::not_in_process: return "this call needs a calling process (a Grove process or a scoped_process)";
      case errc::not_running: return "no Grove runtime is running";
      case errc::already_running: return "a Grove runtime is already running";
      case errc::timeout: return "the wait timed out";
      case errc::bad_argument: return "bad argument";
      case errc::end_of_file: return "the peer closed the stream before all the bytes arrived";
      case errc::in_process: return "this call cannot be made from inside a Grove process (it would wait for its own worker); make it from another thread";
    }
    return "unknown grove error";
  }
};

}  // namespace

const std::error_category& grove_category() noexcept {
  static const category c;
  return c;
}

std::string_view exit_reason::text() const noexcept {
  switch (kind_) {
    case kind::normal: return "normal";
    case kind::shutdown: return "shutdown";
    case kind::kill: return "kill";
    case kind::killed: return "killed";
    case kind::noproc: return "noproc";
    case kind::exception:
    case kind::max_heap_size:
    case kind::user: return detail_ ? std::string_view(detail_->text) : std::string_view();
  }
  return {};
}

std::string exit_reason::to_string() const {
  switch (kind_) {
    case kind::exception: return std::string("exception: ").append(text());
    case kind::max_heap_size: return std::string("max_heap_size: ").append(text());
    case kind::user:
      if (!description().empty()) return std::string(text()).append(": ").append(description());
      return std::string(text());
    default: return std::string(text());
  }
}

}  // namespace grove
