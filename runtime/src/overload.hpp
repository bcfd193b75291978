// overload.hpp: senders to a process that cannot keep up wait until it catches up (design in
// overload.cpp).
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <grove/pid.hpp>

#include "process.hpp"

namespace grove::internal {

// The senders waiting for overloaded processes, by receiver. Sharded by the receiver's pid so that
// unrelated overloads do not share a lock.
class mute_registry {
 public:
  static constexpr std::size_t shard_count = 64;
  struct shard {
    std::mutex lock;
    std::vector<std::pair<std::uint64_t, pid>> muted;  // (receiver's pid bits, sender), guarded by lock
  };
  shard& shard_for(pid receiver) noexcept { return shards_[receiver.bits() % shard_count]; }

 private:
  shard shards_[shard_count];
};

// Process context, the receiver (owner): its drain found a full batch with more behind it.
void begin_overload(process* p) noexcept;
// Process context, the receiver (owner), or its exit: no longer overloaded; the senders waiting for
// it are woken. A no-op unless p->overloaded.
void end_overload(process* p) noexcept;
inline void end_overload_if_any(process* p) noexcept {
  if (p->overloaded) [[unlikely]]
    end_overload(p);
}
// Process context, the sender, right after its send to `to` found `to` overloaded: waits (parked,
// wait_reason::muted) until `to` catches up, exits or the sender is woken otherwise (a message or a
// signal: exit signals act on return). Does nothing where a wait could deadlock or is not allowed
// (overload.cpp, "When a sender waits").
void wait_for_overloaded(process* self, pid to);

}  // namespace grove::internal
