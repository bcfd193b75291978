// Unit tests for runtime/src/run_queue.hpp: the owner's FIFO order, the 256-entry bound, pop_half and
// steal_half sizes, and a concurrent run (one owner pushing and popping, three thieves stealing half)
// in which every pushed entry is taken exactly once and each taker sees entries in push order.
// The queue never dereferences its entries, so the tests push fake pointers that encode a number.
#include "run_queue.hpp"

#include <doctest/doctest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

namespace {

using grove::internal::process;
using grove::internal::run_queue;

constexpr std::uint32_t capacity = run_queue::capacity;

// For hot loops: doctest records every passing CHECK, which dominates the run time under TSan.
#define GROVE_EXPECT(cond)                 \
  do {                                     \
    if (!(cond)) FAIL("expected: " #cond); \
  } while (false)

unsigned stress_scale() {
  const char* s = std::getenv("GROVE_STRESS_SCALE");
  const int v = s != nullptr ? std::atoi(s) : 1;
  return v > 0 ? static_cast<unsigned>(v) : 1u;
}

// Entry number n (n >= 1) as a process pointer, 64-byte aligned like a real PCB; and back.
process* fake(std::uint32_t n) { return reinterpret_cast<process*>(std::uintptr_t{n} << 6); }
std::uint32_t number_of(const process* p) { return static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(p) >> 6); }

}  // namespace

TEST_CASE("an empty run queue pops nothing, steals nothing and has size zero") {
  run_queue q;
  std::array<process*, capacity / 2> out{};
  CHECK(q.pop() == nullptr);
  CHECK(q.steal_half(out.data()) == 0);
  CHECK(q.pop_half(out.data()) == 0);
  CHECK(q.size() == 0);
}

TEST_CASE("the owner pops entries in the order it pushed them, across many laps of the ring") {
  run_queue q;
  std::uint32_t next_push = 1, next_pop = 1;
  // Batches of varying sizes wrap the ring many times.
  for (std::uint32_t round = 0; round < 100; ++round) {
    std::uint32_t batch = 1 + (round * 37) % capacity;
    for (std::uint32_t i = 0; i < batch; ++i) REQUIRE(q.push(fake(next_push++)));
    CHECK(q.size() == batch);
    for (std::uint32_t i = 0; i < batch; ++i) {
      process* p = q.pop();
      REQUIRE(p != nullptr);
      GROVE_EXPECT(number_of(p) == next_pop);
      ++next_pop;
    }
    CHECK(q.pop() == nullptr);
  }
  CHECK(next_pop == next_push);
}

TEST_CASE("a run queue holds 256 entries and refuses the 257th until one is taken") {
  run_queue q;
  for (std::uint32_t n = 1; n <= capacity; ++n) REQUIRE(q.push(fake(n)));
  CHECK(q.size() == capacity);
  CHECK_FALSE(q.push(fake(capacity + 1)));
  CHECK(q.size() == capacity);  // the refused push changed nothing
  REQUIRE(q.pop() == fake(1));
  CHECK(q.push(fake(capacity + 1)));
  CHECK_FALSE(q.push(fake(capacity + 2)));
  // Still FIFO after the refusal.
  for (std::uint32_t n = 2; n <= capacity + 1; ++n) REQUIRE(q.pop() == fake(n));
  CHECK(q.pop() == nullptr);
}

TEST_CASE("pop_half of a full queue takes the oldest 128 entries in order and leaves the newest") {
  run_queue q;
  for (std::uint32_t n = 1; n <= capacity; ++n) REQUIRE(q.push(fake(n)));
  std::array<process*, capacity / 2 + 1> out{};
  std::uint32_t got = q.pop_half(out.data());
  REQUIRE(got == capacity / 2);
  for (std::uint32_t i = 0; i < got; ++i) CHECK(out[i] == fake(i + 1));
  CHECK(q.size() == capacity / 2);
  for (std::uint32_t n = capacity / 2 + 1; n <= capacity; ++n) REQUIRE(q.pop() == fake(n));
  CHECK(q.pop() == nullptr);
}

TEST_CASE("taking half rounds up, so a single entry can be taken and an odd count leaves the smaller half") {
  for (std::uint32_t count : {1u, 2u, 3u, 5u, 100u, 255u}) {
    CAPTURE(count);
    run_queue q;
    for (std::uint32_t n = 1; n <= count; ++n) REQUIRE(q.push(fake(n)));
    std::array<process*, capacity / 2> out{};
    std::uint32_t got = q.steal_half(out.data());
    CHECK(got == count - count / 2);
    for (std::uint32_t i = 0; i < got; ++i) CHECK(out[i] == fake(i + 1));
    CHECK(q.size() == count / 2);
    for (std::uint32_t n = got + 1; n <= count; ++n) REQUIRE(q.pop() == fake(n));
    CHECK(q.pop() == nullptr);
  }
}

TEST_CASE("with an owner pushing and popping and three thieves stealing half, every entry is taken exactly once and in push order") {
  // The owner does what a worker does: push, pop now and then, and move half to an overflow list when
  // full (worker::push_local). The thieves steal half as idle workers do. Each taker records what it
  // got; entries from one take are consecutive, and each taker's entries increase (every take moves
  // the head forward over entries pushed in increasing order).
  const std::uint32_t total = 200'000 * stress_scale();
  constexpr int thieves = 3;
  run_queue q;
  auto taken = std::make_unique<std::atomic<std::uint8_t>[]>(total + 1);  // times each entry was taken
  std::atomic<bool> owner_done{false};
  std::atomic<bool> broken{false};  // an entry out of order or out of range, an oversized take, a refused push
  std::atomic<std::uint64_t> stolen{0};

  auto record = [&](process* const* entries, std::uint32_t n, std::uint32_t& last) {
    for (std::uint32_t i = 0; i < n; ++i) {
      std::uint32_t number = number_of(entries[i]);
      if (number == 0 || number > total || number <= last) broken.store(true, std::memory_order_relaxed);
      if (number != 0 && number <= total) taken[number].fetch_add(1, std::memory_order_relaxed);
      last = number;
    }
  };

  std::vector<std::thread> threads;
  for (int t = 0; t < thieves; ++t) {
    threads.emplace_back([&] {
      std::array<process*, capacity / 2> out{};
      std::uint32_t last = 0;
      std::uint64_t mine = 0;
      // Keep stealing until the owner is done and the queue looks empty.
      while (!owner_done.load(std::memory_order_acquire) || q.size() > 0) {
        std::uint32_t got = q.steal_half(out.data());
        if (got > capacity / 2) broken.store(true, std::memory_order_relaxed);
        record(out.data(), got, last);
        mine += got;
        if (got == 0) std::this_thread::yield();
      }
      stolen.fetch_add(mine, std::memory_order_relaxed);
    });
  }

  std::uint32_t owner_last = 0;
  std::uint64_t owner_took = 0;
  {
    std::array<process*, capacity / 2> out{};
    for (std::uint32_t n = 1; n <= total; ++n) {
      if (!q.push(fake(n))) {
        std::uint32_t got = q.pop_half(out.data());
        record(out.data(), got, owner_last);
        owner_took += got;
        // Only the owner pushes, and it just made room (or thieves did); no REQUIRE while threads run.
        if (!q.push(fake(n))) broken.store(true, std::memory_order_relaxed);
      }
      if (n % 3 == 0) {
        if (process* p = q.pop()) {
          record(&p, 1, owner_last);
          ++owner_took;
        }
      }
    }
    owner_done.store(true, std::memory_order_release);
    while (process* p = q.pop()) {
      record(&p, 1, owner_last);
      ++owner_took;
    }
  }
  for (auto& t : threads) t.join();

  CHECK_FALSE(broken.load());
  CHECK(owner_took + stolen.load() == total);
  std::uint32_t missing = 0, duplicated = 0;
  for (std::uint32_t n = 1; n <= total; ++n) {
    std::uint8_t c = taken[n].load(std::memory_order_relaxed);
    if (c == 0) ++missing;
    if (c > 1) ++duplicated;
  }
  CHECK(missing == 0);
  CHECK(duplicated == 0);
  CHECK(q.size() == 0);
}
