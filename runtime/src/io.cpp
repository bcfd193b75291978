// io.cpp: readiness of fds, and the processes that wait for it (grove/io.hpp is the API).
//
// Readiness, not completion: a process tries its syscall itself (non-blocking) while it runs on its
// own stack; on EAGAIN it waits for readiness and tries again. So the kernel never writes into the
// memory of a parked process, whose stack may be copied out and its execution stack reused
// (runtime/DESIGN.md §2): a buffer on the stack is safe.
//
// Registrations, two kinds (the epoll_event's data.ptr is the fd number's io_state, whose memory
// lives as long as the runtime, so an event that comes late for a closed fd is harmless: at most a
// spurious readiness, and the woken process retries its syscall):
//   - persistent (grove::net's sockets): registered once, edge-triggered, both directions, as Go's
//     netpoller; a readiness event is seen once, and no syscall is spent per wait;
//   - one-shot (grove::io::wait_readable/wait_writable on a foreign fd): each wait arms
//     EPOLLONESHOT for the directions someone waits on (MOD, or ADD the first time), so nothing
//     stays registered when the caller closes or reuses the fd.
//
// Each direction of an io_state has a wait slot (io.hpp): 0, io_readiness, or a waiting pid. The
// protocol, which loses no readiness and never wakes a process that has left:
//   - the poller on an event: old = slot.exchange(io_readiness); if old was a pid, wake that process
//     through the process table, so a pid whose process has gone wakes nobody;
//   - a process (wait_ready, receive.cpp): if the slot holds io_readiness, take it (exchange 0) and
//     try again; else CAS 0 → its pid and park (a receive-like wait that acts on signals, so it can
//     be killed); when it resumes it takes io_readiness if the poller left it; at its deadline (or
//     unwinding) it CASes pid → 0, which fails only if the poller has just made it ready.
// All slot operations are acq_rel: what the poller saw happens-before the process's retry.
#include "io.hpp"

#include <sys/epoll.h>

#include <cerrno>
#include <new>

#include <grove/errc.hpp>
#include <grove/io.hpp>

#include "delivery.hpp"
#include "receive.hpp"
#include "sanitizers.hpp"
#include "scheduler.hpp"

namespace grove::internal {

io_table::~io_table() {
  for (auto& c : chunks_) delete[] c.load(std::memory_order_relaxed);  // no other thread at destruction
}

io_state* io_table::state_for(int fd) {
  if (fd < 0 || fd >= chunk_fds * max_chunks) return nullptr;
  auto& slot = chunks_[fd / chunk_fds];
  io_state* chunk = slot.load(std::memory_order_acquire);  // pairs with the release below
  if (!chunk) {
    std::lock_guard<std::mutex> g(grow_lock_);
    chunk = slot.load(std::memory_order_relaxed);  // under the lock: only we write it
    if (!chunk) {
      chunk = new io_state[chunk_fds];
      slot.store(chunk, std::memory_order_release);  // publishes the constructed chunk
    }
  }
  return &chunk[fd % chunk_fds];
}

namespace {

void make_ready(runtime_state& rt, std::atomic<std::uint64_t>& slot) noexcept {
  const std::uint64_t old = slot.exchange(io_readiness, std::memory_order_acq_rel);  // acq_rel: see file comment
  if (old <= io_readiness) return;
  if (process* q = rt.table.acquire(pid::from_bits(old))) {
    rt.wake(q, trace::wake_cause::io);
    rt.table.release(q, worker_index_for(rt));
  }
}

// One lock for arming one-shot registrations: a process arming the readable direction and another
// the writable one of the same fd must not overwrite each other's interest (MOD sets both).
std::mutex g_arm_lock;

bool waiting(const std::atomic<std::uint64_t>& slot) noexcept {
  return slot.load(std::memory_order_acquire) > io_readiness;  // acquire: the waiter's CAS published it
}

}  // namespace

void io_ready(runtime_state& rt, io_state* s, std::uint32_t events) noexcept {
  sanitizer_acquire(s);  // pairs with the release before each epoll_ctl that handed s to the kernel
  // An error or a hang-up ends a wait in either direction: the retried syscall reports it. Either,
  // or urgent data, ends the short-read rule for good (io.hpp, io_state::short_read_empties):
  // relaxed, published to the reader by make_ready's exchange, before which it is stored.
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR | EPOLLPRI)) s->short_read_empties.store(0, std::memory_order_relaxed);
  if (events & (EPOLLIN | EPOLLPRI | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) make_ready(rt, s->reader);
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) make_ready(rt, s->writer);
}

int arm_one_shot(runtime_state& rt, int fd, io_state* s, bool writable) noexcept {
  std::lock_guard<std::mutex> g(g_arm_lock);
  epoll_event ev{};
  ev.events = EPOLLONESHOT | EPOLLRDHUP;
  if (!writable || waiting(s->reader)) ev.events |= EPOLLIN;
  if (writable || waiting(s->writer)) ev.events |= EPOLLOUT;
  ev.data.ptr = s;
  sanitizer_release(s);
  if (::epoll_ctl(rt.poller.fd(), EPOLL_CTL_MOD, fd, &ev) == 0) return 0;
  if (const int e = io::last_errno(); e != ENOENT) return e;
  return ::epoll_ctl(rt.poller.fd(), EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : io::last_errno();
}

int register_persistent(runtime_state& rt, int fd, io_state* s, bool short_read_empties) noexcept {
  s->reader.store(0, std::memory_order_relaxed);  // a fresh fd: nothing seen yet (published by the ADD's syscall)
  s->writer.store(0, std::memory_order_relaxed);
  s->short_read_empties.store(short_read_empties ? 1 : 0, std::memory_order_relaxed);
  s->emptied.store(false, std::memory_order_relaxed);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = s;
  sanitizer_release(s);
  if (::epoll_ctl(rt.poller.fd(), EPOLL_CTL_ADD, fd, &ev) != 0) return io::last_errno();
  s->persistent.store(1, std::memory_order_relaxed);  // statistics and checks only
  return 0;
}

void unregister_persistent(runtime_state& rt, int fd, io_state* s) noexcept {
  ::epoll_ctl(rt.poller.fd(), EPOLL_CTL_DEL, fd, nullptr);  // the close would drop it too; DEL makes it now
  s->persistent.store(0, std::memory_order_relaxed);
  make_ready(rt, s->reader);  // a waiter retries and finds the fd closed
  make_ready(rt, s->writer);
}

}  // namespace grove::internal

namespace grove::io {

// noipa: not inlined, and its callers learn nothing about it (GCC would otherwise find it reads
// only errno and treat it as const, as glibc's __errno_location is).
__attribute__((noipa)) int last_errno() noexcept { return errno; }

}  // namespace grove::io

namespace grove::io::detail {

using namespace grove::internal;

namespace {

std::error_code wait_for(int fd, bool writable, std::uint64_t deadline_ns) {
  process* p = current_process();
  if (!p) return make_error_code(errc::not_in_process);
  runtime_state* rt = current_runtime();
  if (!rt) return make_error_code(errc::not_running);
  io_state* s = rt->io.state_for(fd);
  if (!s) return make_error_code(errc::bad_argument);
  std::atomic<std::uint64_t>& slot = writable ? s->writer : s->reader;
  if (!s->persistent.load(std::memory_order_relaxed)) {  // a foreign fd: arm one shot for this wait
    // Readiness left by an earlier one-shot wait says nothing about now: start from nothing.
    std::uint64_t stale = io_readiness;
    slot.compare_exchange_strong(stale, 0, std::memory_order_acq_rel);
    if (int e = arm_one_shot(*rt, fd, s, writable)) return {e, std::generic_category()};
  }
  if (tracing(trace::event_kind::io_wait, p)) [[unlikely]]
    record(trace::event_kind::io_wait, writable ? 1 : 0, static_cast<std::uint32_t>(fd), p->id().bits());
  begin_wait(*s, writable);
  switch (wait_ready(p, slot, deadline_ns)) {
    case io_wait::ready: return {};
    case io_wait::timed_out: return make_error_code(errc::timeout);
    case io_wait::busy: break;
  }
  return make_error_code(std::errc::device_or_resource_busy);  // EBUSY: another process waits there
}

}  // namespace

std::error_code wait(int fd, bool writable, std::int64_t timeout_ns) {
  return wait_for(fd, writable, deadline_after_ns(timeout_ns));
}

std::error_code wait_until(int fd, bool writable, std::chrono::steady_clock::time_point deadline) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  const std::uint64_t d = ns <= 0 ? 0 : static_cast<std::uint64_t>(ns) >= never_deadline_ns ? never_deadline_ns : static_cast<std::uint64_t>(ns);
  return wait_for(fd, writable, d);
}

}  // namespace grove::io::detail
