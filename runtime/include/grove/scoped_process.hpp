// grove/scoped_process.hpp: a process identity for a foreign thread.
//
// How an application's own threads talk to Grove: while a scoped_process lives, the thread that
// made it is a process to the runtime. It has a pid and a mailbox, so processes can reply to it, and
// the thread can use receive (blocking the thread, with after() timeouts), link, monitor, trap_exit
// and sleep_for like any process. It counts toward the process limit. When it is destroyed it exits
// with reason normal (or with the reason given to exit_with), which links and monitors see.
//
// One per thread at a time; not movable (it belongs to its thread). Never create one inside a process.
#pragma once

#include <memory>

#include <grove/exit_reason.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

class scoped_process {
 public:
  // Throws grove::error: errc::not_running, errc::process_limit, errc::bad_argument (inside a
  // process, or when this thread already has one).
  scoped_process();
  ~scoped_process();
  scoped_process(const scoped_process&) = delete;
  scoped_process& operator=(const scoped_process&) = delete;

  grove::pid pid() const noexcept { return pid_; }
  // The reason it will exit with when destroyed (default normal).
  void exit_with(exit_reason reason);

 private:
  grove::pid pid_;
  exit_reason reason_;
  void* process_ = nullptr;        // internal: its control block
  std::shared_ptr<void> runtime_;  // internal: keeps the runtime's memory alive until we are gone
};

}  // namespace grove

GROVE_PUBLIC_END
