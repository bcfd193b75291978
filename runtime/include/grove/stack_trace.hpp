// grove/stack_trace.hpp: a call stack, kept as return addresses and put into words only when read.
//
// Where Grove gives you one:
//   - exit_reason::throw_site(): where the exception that ended a process was thrown. Recorded only
//     in programs linked with grove::throw_traces (libgrove_throw_traces.so), which wraps the C++
//     runtime's __cxa_throw; without it nothing is recorded and no throw costs anything more. The
//     crash report (grove/logger.hpp) and a supervisor's report print it.
//   - process_details::stacktrace (process_info): where a live process stands, captured by the
//     process itself as it answers: for a parked one, the call that parks it (a receive, a sleep, an
//     IO wait) and every caller of it, like Erlang's process_info(Pid, current_stacktrace).
//   - stack_trace::current(): the calling thread's stack (inside a process, the process's).
//
// Capturing walks the unwind tables (Boost.Stacktrace's safe_dump, ~1-2 µs for 20 frames);
// to_string() reads symbol tables and debug information (Boost.Stacktrace over libbacktrace:
// milliseconds the first time on each thread, whose reading Boost keeps for the thread's life). Without debug information (-g) a frame has its
// function's name but no file and line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

class stack_trace {
 public:
  stack_trace() noexcept = default;
  // Return addresses, innermost first (the first one is where the capture was made).
  explicit stack_trace(std::vector<std::uintptr_t> frames) noexcept : frames_(std::move(frames)) {}

  // The calling thread's stack, innermost first, starting at the caller of current(); at most
  // max_frames frames.
  static stack_trace current(std::size_t max_frames = 64);

  const std::vector<std::uintptr_t>& frames() const noexcept { return frames_; }
  std::size_t size() const noexcept { return frames_.size(); }
  bool empty() const noexcept { return frames_.empty(); }

  // One frame a line, innermost first, each line ending in a newline:
  //   "#0 0x000055d0c3a1b2c4 in app::parse(std::string_view) at /src/app.cpp:41\n"
  // ("in ??" where no symbol is known; " at file:line" only with debug information), each line
  // after `indent`.
  std::string to_string(std::string_view indent = {}) const;
  // The function a frame is in ("??" if unknown), demangled.
  static std::string function_name(std::uintptr_t frame);

 private:
  std::vector<std::uintptr_t> frames_;
};

}  // namespace grove

GROVE_PUBLIC_END
