// poller.cpp: see poller.hpp.
#include "poller.hpp"

#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <system_error>

#include "clock.hpp"

namespace grove::internal {

poller::poller() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::system_error(errno, std::generic_category(), "grove: epoll_create1");
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    const int e = errno;
    ::close(epoll_fd_);
    throw std::system_error(e, std::generic_category(), "grove: eventfd");
  }
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: an interrupt stays pending until a wait consumes it
  ev.data.ptr = nullptr;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) {
    const int e = errno;
    ::close(wake_fd_);
    ::close(epoll_fd_);
    throw std::system_error(e, std::generic_category(), "grove: epoll_ctl");
  }
}

poller::~poller() {
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void poller::interrupt() noexcept {
  const std::uint64_t one = 1;
  // A full counter (2^64 - 2 unread interrupts) cannot happen: every wait reads it back to zero.
  (void)!::write(wake_fd_, &one, sizeof one);
}

int poller::wait_once(std::uint64_t deadline_ns, epoll_event* out, int max) noexcept {
  timespec ts{};
  timespec* timeout = nullptr;  // never_deadline_ns: wait until woken
  if (deadline_ns != never_deadline_ns) {
    const std::uint64_t now = now_ns();
    const std::uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
    ts.tv_sec = static_cast<time_t>(left / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(left % 1'000'000'000);
    timeout = &ts;
  }
  // epoll_pwait2 takes a timespec, so a worker sleeps until its next timer to the microsecond;
  // epoll_wait's milliseconds would make every timer up to 1 ms late. Linux 5.11 and later; on an
  // older kernel (ENOSYS, remembered) epoll_wait with the timeout rounded up to a millisecond.
  static std::atomic<bool> no_pwait2{false};  // shared: relaxed, every writer stores the same value
  int n = -1;
  if (!no_pwait2.load(std::memory_order_relaxed)) {
    n = ::epoll_pwait2(epoll_fd_, out, max, timeout, nullptr);
    if (n < 0 && errno == ENOSYS) no_pwait2.store(true, std::memory_order_relaxed);
  }
  if (no_pwait2.load(std::memory_order_relaxed)) {
    const long ms = timeout ? static_cast<long>(ts.tv_sec * 1000 + (ts.tv_nsec + 999'999) / 1'000'000) : -1;
    n = ::epoll_wait(epoll_fd_, out, max, ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms));
  }
  if (n < 0) return 0;  // EINTR: a signal; the caller looks again
  for (int i = 0; i < n; ++i) {
    if (out[i].data.ptr == nullptr) {
      std::uint64_t v;
      (void)!::read(wake_fd_, &v, sizeof v);  // consume the interrupt (non-blocking)
    }
  }
  return n;
}

}  // namespace grove::internal
