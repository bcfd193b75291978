// Unit tests for runtime/src/stack_slots.hpp's images kept as differences (image_delta.hpp), driven
// by hand on one execution stack: parked stacks written, evicted and resumed without a runtime, to
// check what the stress tests cannot see: that a slot keeps one reference per image size and at most
// references_per_slot of them, that a reference still in use is never replaced (the fifth size is
// kept whole) and one no longer in use is, and that every image comes back byte for byte.
#include "stack_slots.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
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

TEST_CASE("every slot's stack has its full size, at most a page more, a 64 KiB guard below, and tops at every line of a page") {
  // Slot tops are coloured (stack_slots.hpp, "Colours"): each sits at its own offset in a page, and
  // the guard must still lie under each stack with at most a page between, or an overflow would
  // write unseen past the stack's end instead of faulting. Checked against the kernel's own view of
  // the mappings (/proc/self/maps), not only the class's is_guard_page.
  struct mapping {
    std::uintptr_t begin, end;
    std::string perms;
  };
  const std::size_t stack = 64 * 1024, span = 4096;  // colours x colour_step
  stack_slots slots(300, stack, 2);
  std::vector<mapping> maps;
  {
    std::ifstream in("/proc/self/maps");
    std::string line;
    while (std::getline(in, line)) {
      mapping m{};
      char perms[8] = {};
      if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %7s", &m.begin, &m.end, perms) == 3) {
        m.perms = perms;
        maps.push_back(m);
      }
    }
  }
  auto at = [&](std::uintptr_t a) -> const mapping* {
    for (const mapping& m : maps)
      if (a >= m.begin && a < m.end) return &m;
    return nullptr;
  };
  std::vector<bool> lines(4096 / 64);  // the cache-line offsets of the tops within a page
  for (std::uint32_t i = 0; i < slots.count(); ++i) {
    CAPTURE(i);
    const auto top = reinterpret_cast<std::uintptr_t>(slots.top_of(i));
    REQUIRE(top % 16 == 0);  // the ABI's stack alignment
    const std::uintptr_t bottom = top - stack;
    const mapping* live = at(bottom);
    REQUIRE(live != nullptr);
    CHECK(live->perms.compare(0, 2, "rw") == 0);
    CHECK(live->end >= top);                   // the whole stack is writable
    CHECK(bottom - live->begin <= span);       // with at most a page more below it
    const mapping* guard = at(live->begin - 1);
    REQUIRE(guard != nullptr);
    CHECK(guard->perms.compare(0, 3, "---") == 0);
    CHECK(live->begin - guard->begin >= stack_slots::guard_bytes);
    auto* g = reinterpret_cast<char*>(live->begin);  // the class agrees with the kernel
    CHECK(slots.is_guard_page(g - 1));
    CHECK(slots.is_guard_page(g - stack_slots::guard_bytes));
    CHECK_FALSE(slots.is_guard_page(g));
    CHECK_FALSE(slots.is_guard_page(reinterpret_cast<char*>(top) - 1));
    if (i > 0) CHECK(reinterpret_cast<std::uintptr_t>(slots.top_of(i - 1)) <= guard->begin);  // not into the slot below
    lines[top % 4096 / 64] = true;
  }
  CHECK(std::count(lines.begin(), lines.end(), true) == 64);
}
