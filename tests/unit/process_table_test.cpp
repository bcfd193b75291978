// Unit tests for runtime/src/process_table.hpp: pids stay dead after their index is reused, the
// process limit, references that hold an entry, and lookups racing with reuse. The table needs a
// runtime state to belong to; the tests build one without starting its workers (no runtime runs).
#include "process_table.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include <grove/introspection.hpp>

#include "scheduler.hpp"

namespace {

using grove::pid;
using grove::internal::process;
using grove::internal::process_table;

#define GROVE_EXPECT(cond)                 \
  do {                                     \
    if (!(cond)) FAIL("expected: " #cond); \
  } while (false)

// A runtime state whose workers never start: just enough for a process table to belong to.
std::shared_ptr<grove::runtime::state> idle_state(std::size_t process_limit) {
  grove::runtime_config c;
  c.workers = 1;
  c.process_limit = process_limit;
  c.stack_slots = 1;
  c.stack_bytes = 64 * 1024;
  return std::make_shared<grove::runtime::state>(c);
}

// What a process's exit does to the table: stop counting it live, drop its life reference.
void end_life(process_table& t, process* p, int worker = -1) {
  t.mark_exited(worker);
  t.release(p, worker);
}

// Allocates until a process lands on `index` (the free list's order is the table's business), keeping
// the others in `others`; nullptr if none did within `tries`.
process* allocate_at(process_table& t, std::uint32_t index, std::vector<process*>& others, int tries = 1000) {
  for (int i = 0; i < tries; ++i) {
    process* p = t.allocate(-1);
    if (p == nullptr) return nullptr;
    if (p->id().index() == index) return p;
    others.push_back(p);
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a stale pid finds nothing once its table entry holds a new process") {
  auto st = idle_state(4096);
  process_table& t = st->table;
  const std::size_t baseline = grove::resources_in_use().processes;

  process* first = t.allocate(-1);
  REQUIRE(first != nullptr);
  const pid old_pid = first->id();
  CHECK_FALSE(old_pid.is_null());
  CHECK(old_pid.serial() != 0);
  end_life(t, first);
  CHECK(t.acquire(old_pid) == nullptr);

  std::vector<process*> others;
  process* second = allocate_at(t, old_pid.index(), others);
  REQUIRE(second != nullptr);
  const pid new_pid = second->id();
  CHECK(new_pid.index() == old_pid.index());
  CHECK(new_pid.serial() != old_pid.serial());
  CHECK(new_pid != old_pid);

  CHECK(t.acquire(old_pid) == nullptr);
  process* found = t.acquire(new_pid);
  CHECK(found == second);
  if (found) t.release(found, -1);
  end_life(t, second);
  for (process* p : others) end_life(t, p);
  CHECK(grove::resources_in_use().processes == baseline);
}

TEST_CASE("the null pid, an index never handed out and a wrong serial find nothing") {
  auto st = idle_state(16);
  process_table& t = st->table;
  process* p = t.allocate(-1);
  REQUIRE(p != nullptr);
  const pid id = p->id();
  CHECK(t.acquire(pid()) == nullptr);
  CHECK(t.acquire(pid::from_parts(id.index() + 1, id.serial())) == nullptr);  // constructed, never used
  CHECK(t.acquire(pid::from_parts(1'000'000, 1)) == nullptr);                 // beyond what is constructed
  CHECK(t.acquire(pid::from_parts(id.index(), id.serial() + 1)) == nullptr);  // a future incarnation
  end_life(t, p);
}

TEST_CASE("the table refuses a process past the limit and accepts one again after an exit") {
  constexpr std::size_t limit = 8;
  auto st = idle_state(limit);
  process_table& t = st->table;
  std::vector<process*> live;
  for (std::size_t i = 0; i < limit; ++i) {
    process* p = t.allocate(-1);
    REQUIRE(p != nullptr);
    live.push_back(p);
  }
  CHECK(t.live() == limit);
  CHECK(t.allocate(-1) == nullptr);
  CHECK(t.allocate(-1) == nullptr);
  CHECK(t.live() == limit);  // a refused allocation leaves the count as it was

  end_life(t, live.back());
  live.pop_back();
  CHECK(t.live() == limit - 1);
  process* again = t.allocate(-1);
  REQUIRE(again != nullptr);
  live.push_back(again);
  CHECK(t.allocate(-1) == nullptr);
  for (process* p : live) end_life(t, p);
  CHECK(t.live() == 0);
}

// A worker reserves room under the limit in batches and keeps what its exits return
// (process_table.hpp): none of that may make the limit less exact, for it or for anyone else.
TEST_CASE("room a worker reserved under the limit is taken back when another thread reaches it, and the limit stays exact") {
  constexpr std::size_t limit = 300;
  auto st = idle_state(limit);  // one worker, index 0, that never runs: this thread plays it
  process_table& t = st->table;
  const std::size_t baseline = grove::resources_in_use().processes;
  std::vector<process*> on_worker, foreign;
  for (int i = 0; i < 100; ++i) {
    process* p = t.allocate(0);
    REQUIRE(p != nullptr);
    on_worker.push_back(p);
  }
  CHECK(t.live() == 100);
  // The other 200 from a foreign thread: part of them is room the worker reserved and has not used.
  for (std::size_t i = 0; i < 2 * limit; ++i) {
    process* p = t.allocate(-1);
    if (p == nullptr) break;
    foreign.push_back(p);
  }
  CHECK(foreign.size() == limit - 100);
  CHECK(t.live() == limit);
  CHECK(t.allocate(0) == nullptr);  // and for the worker too
  CHECK(t.live() == limit);

  // Exits on the worker return room to it; the foreign thread finds exactly that much.
  for (int i = 0; i < 10; ++i) {
    end_life(t, on_worker.back(), 0);
    on_worker.pop_back();
  }
  CHECK(t.live() == limit - 10);
  std::size_t refilled = 0;
  while (process* p = t.allocate(-1)) {
    foreign.push_back(p);
    ++refilled;
  }
  CHECK(refilled == 10);

  // Many exits on the worker (more than it keeps reserved), then the worker fills the table again.
  for (process* p : on_worker) end_life(t, p, 0);
  on_worker.clear();
  for (int i = 0; i < 150; ++i) {
    end_life(t, foreign.back(), 0);
    foreign.pop_back();
  }
  const std::size_t room = limit - foreign.size();
  CHECK(t.live() == foreign.size());
  while (process* p = t.allocate(0)) on_worker.push_back(p);
  CHECK(on_worker.size() == room);
  CHECK(t.live() == limit);
  CHECK(t.allocate(-1) == nullptr);

  for (process* p : on_worker) end_life(t, p, 0);
  for (process* p : foreign) end_life(t, p);
  CHECK(t.live() == 0);
  CHECK(grove::resources_in_use().processes == baseline);
}

TEST_CASE("a reference taken by a lookup keeps the entry from being reused until it is dropped") {
  auto st = idle_state(4096);
  process_table& t = st->table;
  process* p = t.allocate(-1);
  REQUIRE(p != nullptr);
  const pid id = p->id();
  process* held = t.acquire(id);  // as a sender holds one while it pushes
  REQUIRE(held == p);
  end_life(t, p);  // the process exits; the sender's reference remains

  process* other = t.allocate(-1);
  REQUIRE(other != nullptr);
  CHECK(other->id().index() != id.index());  // the held entry was not handed out
  CHECK(held->id() == id);                   // and still names the process the sender looked up

  t.release(held, -1);  // the last reference: now the index is free
  std::vector<process*> others;
  process* reused = allocate_at(t, id.index(), others);
  REQUIRE(reused != nullptr);
  CHECK(reused->id() != id);
  CHECK(t.acquire(id) == nullptr);
  end_life(t, other);
  end_life(t, reused);
  for (process* p : others) end_life(t, p);
}

TEST_CASE("lookups racing with the reuse of an index only ever return the process they asked for") {
  // One thread makes an index live, publishes its pid, and ends it, over and over; two readers look
  // up the published pid and an older one. A lookup may miss (the process is gone), but if it finds
  // a process, that process must carry the pid asked for.
  auto st = idle_state(64);
  process_table& t = st->table;
  const std::size_t baseline = grove::resources_in_use().processes;
  constexpr int rounds = 20'000;
  std::atomic<std::uint64_t> published{0};
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> wrong{0};

  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      std::uint64_t older = 0;
      while (!done.load(std::memory_order_acquire)) {
        std::uint64_t bits = published.load(std::memory_order_acquire);
        for (std::uint64_t b : {bits, older}) {
          if (b == 0) continue;
          pid asked = pid::from_bits(b);
          if (process* q = t.acquire(asked)) {
            if (q->id() != asked) wrong.fetch_add(1, std::memory_order_relaxed);
            t.release(q, -1);
          }
        }
        older = bits;
      }
    });
  }
  std::uint32_t last_serial = 0;
  std::uint32_t serial_went_back = 0;
  for (int i = 0; i < rounds; ++i) {
    process* p = t.allocate(-1);
    if (!p) continue;  // readers may hold the previous entry for a moment; the margin absorbs it
    const pid id = p->id();
    if (id.index() == 0 && id.serial() <= last_serial) ++serial_went_back;
    if (id.index() == 0) last_serial = id.serial();
    published.store(id.bits(), std::memory_order_release);
    end_life(t, p);
  }
  done.store(true, std::memory_order_release);
  for (auto& r : readers) r.join();

  CHECK(wrong.load() == 0);
  CHECK(serial_went_back == 0);
  CHECK(t.live() == 0);
  CHECK(grove::resources_in_use().processes == baseline);
}
