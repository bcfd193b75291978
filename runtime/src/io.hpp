// io.hpp: fds registered with the runtime's poller, and the processes waiting for them to be ready
// (design in io.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include <grove/runtime.hpp>

namespace grove::internal {

// One fd number's registration. A wait slot holds 0 (nobody waits, no readiness seen), io_readiness
// (the fd became ready since the last wait: the next wait returns at once), or the bits of the pid
// of the one process waiting (never 0 or 1: a pid's serial is in its upper half and never 0).
inline constexpr std::uint64_t io_readiness = 1;
struct io_state {
  std::atomic<std::uint64_t> reader{0};  // shared: the poller sets readiness; the waiting process sets and clears its pid
  std::atomic<std::uint64_t> writer{0};  // shared: likewise, for writability
  std::atomic<std::uint32_t> persistent{0};  // shared: 1 while an owner (grove::net) keeps it registered edge-triggered
  // shared: 1 while a short read proves the socket's receive queue empty (net.cpp, stream::read_some).
  // Set when a TCP socket is registered; cleared for good once the poller reports a hang-up or an
  // error (EPOLLRDHUP, EPOLLHUP, EPOLLERR: reported once, edge-triggered, and the short read may have
  // taken the FIN with the data) or urgent data (EPOLLPRI: TCP's recv stops short at the urgent
  // mark). Never set for a Unix stream socket: its recv stops short with data left when the next
  // message carries descriptors (SCM_RIGHTS) or other credentials (SO_PASSCRED).
  std::atomic<std::uint32_t> short_read_empties{0};
  // The last read_some returned less than it asked, and no wait for readability has begun since
  // (every such wait clears it, whoever waits: the edge it consumes may be for data; begin_wait).
  // Relaxed: written by the fd's one reader at a time, and by the registration of the fd number's
  // next socket, which the close of this one orders.
  std::atomic<bool> emptied{false};
};

// Called by every wait on s before it parks: a wait for readability takes the edge that a read
// after a short read would wait for (io_state::emptied).
inline void begin_wait(io_state& s, bool writable) noexcept {
  if (!writable) s.emptied.store(false, std::memory_order_relaxed);  // io_state says why relaxed
}

// The io_state of every fd number, in chunks that live as long as the runtime (a late event for a
// closed fd finds valid memory). Thread-safe.
class io_table {
 public:
  static constexpr int chunk_fds = 1024;
  static constexpr int max_chunks = 4096;  // fd numbers below 4M

  io_table() = default;
  ~io_table();
  io_table(const io_table&) = delete;
  io_table& operator=(const io_table&) = delete;

  // The state of fd (made on first use); nullptr for a negative fd or one past the table. Throws
  // std::bad_alloc.
  io_state* state_for(int fd);

 private:
  std::atomic<io_state*> chunks_[max_chunks] = {};  // shared: a chunk is published once (release), never replaced
  std::mutex grow_lock_;                            // guards making a chunk
};

// The poller's holder (parking.cpp), for each ready registration: marks the slots the events make
// ready and wakes the processes waiting in them.
void io_ready(grove::runtime::state& rt, io_state* s, std::uint32_t events) noexcept;

// Makes the process's wait in the readable or writable direction of `fd` (its state `s`) end when
// the fd is ready, by a one-shot registration (grove/io.hpp's free functions). Returns an errno.
int arm_one_shot(grove::runtime::state& rt, int fd, io_state* s, bool writable) noexcept;

// Registers fd for its life, edge-triggered in both directions (grove::net's sockets). Returns an errno.
int register_persistent(grove::runtime::state& rt, int fd, io_state* s, bool short_read_empties) noexcept;
// Before the fd is closed: drops the registration and wakes a waiter (it retries and finds the fd gone).
void unregister_persistent(grove::runtime::state& rt, int fd, io_state* s) noexcept;

}  // namespace grove::internal
