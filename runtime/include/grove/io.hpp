// grove/io.hpp: waiting for file descriptors without holding a worker.
//
//   int fd = ...;                                        // any non-blocking fd: a socket, a pipe, an eventfd
//   while (::read(fd, buf, n) < 0 && grove::io::last_errno() == EAGAIN)
//     if (auto ec = grove::io::wait_readable(fd, 2s)) return ec;   // errc::timeout after 2 s
//
// A process that waits here is parked like one in receive: its worker runs other processes, the
// runtime's poller (one epoll, runtime/src/parking.cpp) tells it when the fd is ready, and it can be
// linked, monitored, killed (a kill ends the wait at once; the fd stays the caller's to close, which
// RAII owners such as grove::net's sockets do as the stack unwinds). Messages that arrive meanwhile
// stay in the mailbox. A scoped_process blocks its thread the same way.
//
// Readiness, not completion: the process makes the syscall itself while it runs, so the kernel
// never writes into a parked process's memory, and a buffer on the stack is safe. These calls are
// for fds the caller owns and drives itself (libpq, curl multi, c-ares, an inotify fd): each wait
// arms a one-shot registration, so nothing is left registered between waits and an fd may be closed
// and its number reused freely (but not closed while another process waits on it: that wait then
// lasts until its timeout). grove::net's sockets keep a registration for their life instead, which
// saves that syscall on every wait.
//
// Timeouts saturate as everywhere (grove/duration.hpp); a steady_clock time point is an absolute
// deadline (services::deadline::when() gives one). Errors: errc::timeout when the time passes, never
// later; errc::not_in_process outside a process; errc::bad_argument for a negative fd; EBUSY
// (std::errc::device_or_resource_busy) if another process already waits on the fd in that direction
// (one waiter per direction, as in Go); an errno code (std::generic_category) if the poller refuses
// the fd (EPERM: a regular file, which is always ready).
#pragma once

#include <chrono>
#include <cstdint>
#include <system_error>

#include <grove/duration.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove::io {

namespace detail {
// Waits for fd's readiness in one direction until the steady-clock deadline (never_ns: none).
std::error_code wait(int fd, bool writable, std::int64_t timeout_ns);
std::error_code wait_until(int fd, bool writable, std::chrono::steady_clock::time_point deadline);
}  // namespace detail

// The calling thread's errno, read afresh: use it instead of `errno` in code that waits (here, or
// in receive, sleep, yield) between a syscall and its errno check. A process may resume on another
// worker after it waits, and GCC keeps errno's address across calls in one function (glibc declares
// __errno_location const), so a plain `errno` after a wait can read the errno of the thread the
// process ran on before (tests/runtime/net_test.cpp shows it: "last_errno is the errno ..."). An
// out-of-line call whose result the compiler cannot reuse.
int last_errno() noexcept;

// Waits until fd can be read without blocking (or has an error or hang-up), or the timeout passes.
template <class Rep, class Period>
std::error_code wait_readable(int fd, std::chrono::duration<Rep, Period> timeout) {
  return detail::wait(fd, false, grove::detail::timeout_ns(timeout));
}
inline std::error_code wait_readable(int fd) { return detail::wait(fd, false, grove::detail::never_ns); }
inline std::error_code wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  return detail::wait_until(fd, false, deadline);
}

// Waits until fd can be written without blocking (or has an error or hang-up), or the timeout passes.
template <class Rep, class Period>
std::error_code wait_writable(int fd, std::chrono::duration<Rep, Period> timeout) {
  return detail::wait(fd, true, grove::detail::timeout_ns(timeout));
}
inline std::error_code wait_writable(int fd) { return detail::wait(fd, true, grove::detail::never_ns); }
inline std::error_code wait_writable(int fd, std::chrono::steady_clock::time_point deadline) {
  return detail::wait_until(fd, true, deadline);
}

}  // namespace grove::io

GROVE_PUBLIC_END
