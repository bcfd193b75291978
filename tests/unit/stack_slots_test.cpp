// Unit tests for runtime/src/stack_slots.hpp's images kept as differences (image_delta.hpp), driven
// by hand on one execution stack: parked stacks written, evicted and resumed without a runtime, to
// check what the stress tests cannot see: that a slot keeps one reference per image size and at most
// references_per_slot of them, that a reference still in use is never replaced (the fifth size is
// kept whole) and one no longer in use is, and that every image comes back byte for byte.
#include "stack_slots.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <grove/introspection.hpp>

#include "process.hpp"

namespace {

using grove::internal::process;
using grove::internal::stack_slots;

struct parked {
  std::unique_ptr<process> p = std::make_unique<process>();
  std::vector<std::uint64_t> words;  // its stack, top-aligned in the slot
};

// Makes `who` resident in slot 0 (evicting the one there) and checks its stack came back intact.
bool resume(stack_slots& slots, parked& who) {
  REQUIRE(slots.acquire(who.p.get(), 0));
  slots.make_resident(who.p.get(), 0);
  bool ok = true;
  if (who.p->started) {
    const char* sp = slots.top_of(0) - who.words.size() * 8;
    ok = std::memcmp(sp, who.words.data(), who.words.size() * 8) == 0;
  }
  return ok;
}

// Runs `who` for the first time: writes its stack into the slot and parks it waiting on a timer.
void first_park(stack_slots& slots, parked& who, std::size_t words, std::uint64_t seed) {
  REQUIRE(resume(slots, who));
  who.words.resize(words);
  for (std::size_t i = 0; i < words; ++i) who.words[i] = 0x7f0000000000ull + i * 0x40 + (i % 5 == 0 ? seed : 0);
  char* sp = slots.top_of(0) - words * 8;
  std::memcpy(sp, who.words.data(), words * 8);
  who.p->ctx.fctx = sp;
  who.p->started = true;
  who.p->activity.store(static_cast<std::uint8_t>(grove::wait_reason::sleep), std::memory_order_relaxed);
  slots.release(who.p.get());
}

}  // namespace

TEST_CASE("a slot keeps one reference per image size, never replaces one in use, and every image comes back") {
  stack_slots slots(1, 64 * 1024, 1);
  // 20 sleepers of one size: past the density rule (16 images out), the rest are differences.
  std::vector<parked> sleepers(20);
  for (std::size_t i = 0; i < sleepers.size(); ++i) {
    sleepers[i].p->slot = 0;
    first_park(slots, sleepers[i], 34, i);
  }
  // The last one is resident; the 19 others were evicted: the first 16 whole, then differences.
  CHECK(slots.image_copies() == 19);
  const std::uint64_t first_differences = slots.image_differences();
  CHECK(first_differences == 3);

  // Four more sizes, a process each, all parked: the references of 34 words (in use) and of three
  // of these sizes fill the slot's four; the fifth size is kept whole.
  std::vector<parked> others(5);
  for (std::size_t k = 0; k < others.size(); ++k) {
    others[k].p->slot = 0;
    first_park(slots, others[k], 40 + 8 * k, 1000 + k);
  }
  const std::uint64_t after_sizes = slots.image_differences();
  CHECK(after_sizes == first_differences + 4);  // the evicted sleeper and three new sizes; the fifth whole

  // Every one resumes intact (each resume evicts the one resident before it).
  int intact = 0;
  for (auto& s : sleepers) intact += resume(slots, s) ? 1 : 0, slots.release(s.p.get());
  for (auto& o : others) intact += resume(slots, o) ? 1 : 0, slots.release(o.p.get());
  CHECK(intact == static_cast<int>(sleepers.size() + others.size()));

  // The others resumed and were evicted again in turn, so the references of their sizes are in use
  // once more: a sixth size finds none it may replace and is kept whole.
  parked sixth;
  sixth.p->slot = 0;
  first_park(slots, sixth, 90, 7);
  std::uint64_t before_sixth = slots.image_differences();
  REQUIRE(resume(slots, sleepers[0]));  // evicts the sixth
  slots.release(sleepers[0].p.get());
  CHECK(slots.image_differences() == before_sixth);
  // Then the others exit (resumed, then forgotten as an exit does): their references are free, and
  // the sixth size's image replaces one of them.
  for (auto& o : others) {
    REQUIRE(resume(slots, o));
    slots.forget(o.p.get(), 0);
    slots.release(o.p.get());
  }
  CHECK(resume(slots, sixth));
  sixth.p->activity.store(static_cast<std::uint8_t>(grove::wait_reason::sleep), std::memory_order_relaxed);
  slots.release(sixth.p.get());
  before_sixth = slots.image_differences();
  REQUIRE(resume(slots, sleepers[1]));  // evicts the sixth again
  slots.release(sleepers[1].p.get());
  CHECK(slots.image_differences() == before_sixth + 1);
  CHECK(resume(slots, sixth));
  slots.release(sixth.p.get());
  // The sleepers' images (differences, and whole ones) all come back.
  intact = 0;
  for (auto& s : sleepers) intact += resume(slots, s) ? 1 : 0, slots.release(s.p.get());
  CHECK(intact == static_cast<int>(sleepers.size()));
  // Tear down as the runtime does: each forgets its image.
  for (auto& s : sleepers) slots.forget(s.p.get(), 0);
  slots.forget(sixth.p.get(), 0);
}

TEST_CASE("every slot's stack has its full size, a guard of at least 64 KiB right below it, and tops in many cache sets") {
  // Slot tops are coloured (stack_slots.hpp, "Colours"): each one sits at its own offset, and the
  // guard must still start right under each stack, or an overflow would write unseen into the
  // colour's gap instead of faulting.
  const std::size_t stack = 64 * 1024, page = 4096;
  stack_slots slots(300, stack, 2);
  std::vector<bool> offsets(128 * 1024 / 1024);  // the 1 KiB offsets of the tops within 128 KiB
  for (std::uint32_t i = 0; i < slots.count(); ++i) {
    CAPTURE(i);
    char* top = slots.top_of(i);
    REQUIRE(reinterpret_cast<std::uintptr_t>(top) % 16 == 0);  // the ABI's stack alignment
    char* bottom = top - stack;
    CHECK_FALSE(slots.is_guard_page(top - 1));
    CHECK_FALSE(slots.is_guard_page(bottom));
    // Below the stack, at most the rest of its lowest page is writable, then 64 KiB of guard.
    char* guard = reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(bottom) / page * page);
    CHECK(slots.is_guard_page(guard - 1));
    CHECK(slots.is_guard_page(guard - stack_slots::guard_bytes));
    if (i > 0) CHECK(slots.top_of(i - 1) <= guard - stack_slots::guard_bytes);  // no overlap with the slot below
    offsets[(reinterpret_cast<std::uintptr_t>(top) % (128 * 1024)) / 1024] = true;
  }
  CHECK(std::count(offsets.begin(), offsets.end(), true) == 128);
}
