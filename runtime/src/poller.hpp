// poller.hpp: the runtime's epoll instance, where the idle worker that holds it sleeps until a
// timer is due, an fd is ready or someone interrupts it (parking.cpp has the protocol).
//
// One epoll for the runtime, not one per worker. Readiness of an fd must reach whichever worker is
// free, whatever worker registered it, and a worker that is computing must not hold anyone's
// readiness hostage: with one instance any idle worker can wait in it and any busy worker can reap
// it at a scheduling point. The probe's figures (bench/grove/poller_probe.cpp) and why they do not
// argue for per-worker instances are in parking.cpp's design comment.
// Level-triggered eventfd for interrupts (its readiness stays until it is read, so an interrupt
// that comes before the wait still ends it), edge-triggered registrations for fds (io.cpp).
#pragma once

#include <sys/epoll.h>

#include <cstddef>
#include <cstdint>

namespace grove::internal {

struct io_state;

class poller {
 public:
  // Throws std::system_error if epoll or eventfd cannot be created (EMFILE: the process is out of fds).
  poller();
  ~poller();
  poller(const poller&) = delete;
  poller& operator=(const poller&) = delete;

  // Waits until an fd is ready, interrupt() is called or steady-clock deadline_ns passes (0: do not
  // wait; never_deadline_ns: no timeout), then calls on_ready(io_state*, epoll events) for each ready
  // registration. Returns how many it handled. One caller at a time (the poller's holder).
  template <class F>
  std::size_t wait(std::uint64_t deadline_ns, F&& on_ready);
  // Ends a wait in progress, or the next one, at once. Any thread; async-signal-safe.
  void interrupt() noexcept;

  int fd() const noexcept { return epoll_fd_; }  // for io.cpp's registrations

 private:
  // Waits once; fills `out` with up to `max` events. Returns how many (the interrupt's included:
  // its data.ptr is null).
  int wait_once(std::uint64_t deadline_ns, epoll_event* out, int max) noexcept;

  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // the eventfd interrupt() writes
};

template <class F>
std::size_t poller::wait(std::uint64_t deadline_ns, F&& on_ready) {
  constexpr int batch = 64;
  epoll_event events[batch];
  const int n = wait_once(deadline_ns, events, batch);
  std::size_t handled = 0;
  for (int i = 0; i < n; ++i) {
    if (auto* s = static_cast<io_state*>(events[i].data.ptr)) {
      on_ready(s, events[i].events);
      ++handled;
    }
  }
  return handled;
}

}  // namespace grove::internal
