// Unit tests for runtime/src/timer_wheel.hpp: when nodes fire (never early, exactly when due), removal,
// long and past deadlines, re-entrancy from the callback, next_expiry, and a randomized comparison with a
// std::multimap model. Behaviour only; the costs are measured by bench/grove/timer_wheel_probe.cpp.
// Large loops scale with GROVE_STRESS_SCALE (default 1).
#include "timer_wheel.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using grove::internal::timer_node;
using grove::internal::timer_wheel;

constexpr std::uint64_t tick_ns = timer_wheel::tick_ns;
constexpr std::uint64_t ms_ns = 1'000'000;
constexpr std::uint64_t s_ns = 1'000 * ms_ns;
constexpr std::uint64_t hour_ns = 3600 * s_ns;
constexpr std::uint64_t day_ns = 24 * hour_ns;
constexpr std::uint64_t wheel_range_ns = timer_wheel::range_ticks * tick_ns;  // ~208.5 days
// A start time that is not tick-aligned and leaves room below, so past deadlines can be tested.
constexpr std::uint64_t start_ns = 1'000 * s_ns + 12'345;

// For hot loops: doctest records every passing CHECK, which dominates the run time under TSan.
#define GROVE_EXPECT(cond)                 \
  do {                                     \
    if (!(cond)) FAIL("expected: " #cond); \
  } while (false)

int stress_scale() {
  const char* s = std::getenv("GROVE_STRESS_SCALE");
  const int v = s != nullptr ? std::atoi(s) : 1;
  return v > 0 ? v : 1;
}

std::uint64_t round_up_to_tick(std::uint64_t t) { return (t + tick_ns - 1) / tick_ns * tick_ns; }

// A pool of nodes addressed by index, so a fired pointer maps back to an id.
struct node_pool {
  explicit node_pool(std::size_t n) : nodes(std::make_unique<timer_node[]>(n)), count(n) {}
  std::size_t id(const timer_node* n) const { return static_cast<std::size_t>(n - nodes.get()); }
  timer_node* operator[](std::size_t i) { return &nodes[i]; }
  std::unique_ptr<timer_node[]> nodes;
  std::size_t count;
};

// Advances to `now`, checking that no node fires early or while still linked; returns the fired ids.
std::vector<std::size_t> advance_checked(timer_wheel& w, node_pool& pool, std::uint64_t now) {
  std::vector<std::size_t> fired;
  const std::uint64_t effective_now = std::max(now, w.now_ns());
  w.advance(now, [&](timer_node* n) {
    GROVE_EXPECT(n->deadline_ns <= effective_now);
    GROVE_EXPECT(!n->is_linked());
    fired.push_back(pool.id(n));
  });
  return fired;
}

}  // namespace

TEST_CASE("a timer node fits in 32 bytes and starts unlinked") {
  static_assert(sizeof(timer_node) <= 32);
  timer_node n;
  CHECK_FALSE(n.is_linked());
}

TEST_CASE("a new wheel is empty and has no next expiry") {
  timer_wheel w(start_ns);
  CHECK(w.empty());
  CHECK(w.size() == 0);
  CHECK_FALSE(w.next_expiry().has_value());
  CHECK(w.advance(start_ns + hour_ns, [](timer_node*) { FAIL("nothing should fire"); }) == 0);
  CHECK_FALSE(w.next_expiry().has_value());
}

TEST_CASE("a timer never fires before its deadline") {
  std::mt19937_64 rng(1);
  constexpr std::size_t count = 2000;
  node_pool pool(count);
  timer_wheel w(start_ns);
  std::uniform_int_distribution<std::uint64_t> delay(0, 3 * s_ns);
  for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], start_ns + delay(rng));
  std::uniform_int_distribution<std::uint64_t> step(1, 5 * tick_ns);
  std::uint64_t now = start_ns;
  std::size_t fired = 0;
  while (!w.empty()) {
    now += step(rng);
    fired += advance_checked(w, pool, now).size();
  }
  CHECK(fired == count);
}

TEST_CASE("a timer fires at the first advance at or after its deadline, at most one tick late") {
  std::mt19937_64 rng(2);
  constexpr std::size_t count = 1000;
  node_pool pool(count);
  timer_wheel w(start_ns);
  std::uniform_int_distribution<std::uint64_t> delay(1, 2 * s_ns);
  for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], start_ns + delay(rng));
  std::uint64_t now = start_ns;
  std::uint64_t previous = now;
  std::size_t fired = 0;
  while (!w.empty()) {
    previous = now;
    now += tick_ns;
    w.advance(now, [&](timer_node* n) {
      CHECK(n->deadline_ns <= now);
      CHECK(n->deadline_ns > previous);  // it was not due at the previous advance, so it fired at the first
      CHECK(now - n->deadline_ns < tick_ns);
      ++fired;
    });
  }
  CHECK(fired == count);
}

TEST_CASE("a timer due later in the current tick stays linked until its deadline") {
  const std::uint64_t tick_start = round_up_to_tick(start_ns) + 10 * tick_ns;
  timer_wheel w(tick_start);
  timer_node n;
  w.insert(&n, tick_start + tick_ns / 2);
  for (std::uint64_t now = tick_start + 1; now < tick_start + tick_ns / 2; now += tick_ns / 16) {
    CHECK(w.advance(now, [](timer_node*) { FAIL("fired early"); }) == 0);
    CHECK(n.is_linked());
  }
  CHECK(w.advance(tick_start + tick_ns / 2 - 1, [](timer_node*) { FAIL("fired early"); }) == 0);
  CHECK(w.advance(tick_start + tick_ns / 2, [&](timer_node* f) { CHECK(f == &n); }) == 1);
  CHECK_FALSE(n.is_linked());
  CHECK(w.empty());
}

TEST_CASE("a removed timer never fires") {
  timer_wheel w(start_ns);
  timer_node a;
  timer_node b;
  timer_node c;
  w.insert(&a, start_ns + 5 * ms_ns);
  w.insert(&b, start_ns + 5 * ms_ns);
  w.insert(&c, start_ns + 5 * s_ns);
  CHECK(w.size() == 3);
  w.remove(&a);
  w.remove(&c);
  CHECK_FALSE(a.is_linked());
  CHECK_FALSE(c.is_linked());
  CHECK(w.size() == 1);
  std::vector<timer_node*> fired;
  w.advance(start_ns + hour_ns, [&](timer_node* n) { fired.push_back(n); });
  CHECK(fired == std::vector<timer_node*>{&b});
  CHECK(w.empty());
  CHECK_FALSE(w.next_expiry().has_value());
}

TEST_CASE("removing many timers in random order leaves the rest to fire and the wheel empty") {
  std::mt19937_64 rng(3);
  const std::size_t count = 20'000 * static_cast<std::size_t>(stress_scale());
  node_pool pool(count);
  timer_wheel w(start_ns);
  // Deadlines from the past to beyond the wheel's range, so every level, the due list and the wrap are used.
  const std::uint64_t spans[] = {tick_ns, 10 * ms_ns, s_ns,         60 * s_ns,
                                 hour_ns, 3 * day_ns, 100 * day_ns, 3 * wheel_range_ns};
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t span = spans[i % std::size(spans)];
    const std::uint64_t d =
        start_ns - 100 * ms_ns + std::uniform_int_distribution<std::uint64_t>(0, span)(rng);
    w.insert(pool[i], d);
  }
  std::vector<std::size_t> order(count);
  for (std::size_t i = 0; i < count; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const std::size_t removed = count * 3 / 4;
  std::vector<bool> is_removed(count, false);
  for (std::size_t i = 0; i < removed; ++i) {
    w.remove(pool[order[i]]);
    is_removed[order[i]] = true;
    CHECK_FALSE(pool[order[i]]->is_linked());
  }
  CHECK(w.size() == count - removed);
  std::size_t fired = 0;
  w.advance(start_ns + 4 * wheel_range_ns, [&](timer_node* n) {
    CHECK_FALSE(is_removed[pool.id(n)]);
    ++fired;
  });
  CHECK(fired == count - removed);
  CHECK(w.empty());

  // And removing all of them, with nothing fired, leaves no trace either.
  for (std::size_t i = 0; i < count; ++i)
    w.insert(pool[i], start_ns + 4 * wheel_range_ns + 1 + (i * 7919) % (2 * wheel_range_ns));
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i : order) w.remove(pool[i]);
  CHECK(w.empty());
  CHECK_FALSE(w.next_expiry().has_value());
  CHECK(w.advance(start_ns + 100 * wheel_range_ns, [](timer_node*) { FAIL("a removed timer fired"); }) == 0);
}

TEST_CASE("timers hours and days away fire at their deadline and not before") {
  timer_wheel w(start_ns);
  const std::uint64_t delays[] = {hour_ns, hour_ns + 1,    5 * hour_ns + 17,
                                  day_ns,  3 * day_ns + 5, 100 * day_ns + 123'456};
  constexpr std::size_t count = std::size(delays);
  node_pool pool(count);
  for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], start_ns + delays[i]);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t d = start_ns + delays[i];
    CHECK(advance_checked(w, pool, d - 1).empty());
    CHECK(pool[i]->is_linked());
    CHECK(advance_checked(w, pool, d) == std::vector<std::size_t>{i});
  }
  CHECK(w.empty());
}

TEST_CASE("a deadline beyond the top level's range is re-placed until it comes due and never fires early") {
  timer_wheel w(start_ns);
  const std::uint64_t delays[] = {wheel_range_ns - 1, wheel_range_ns, wheel_range_ns + tick_ns,
                                  2 * wheel_range_ns + 17, 10 * wheel_range_ns + 3 * day_ns};
  constexpr std::size_t count = std::size(delays);
  node_pool pool(count);
  for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], start_ns + delays[i]);
  // Step in jumps of about a top-level slot, so every slot turn re-places the far nodes.
  std::uint64_t now = start_ns;
  std::size_t fired = 0;
  while (!w.empty()) {
    now += 77 * hour_ns + 12'345;
    fired += advance_checked(w, pool, now).size();
    for (std::size_t i = 0; i < count; ++i) {
      CHECK(pool[i]->is_linked() == (start_ns + delays[i] > now));  // and none fires late
    }
  }
  CHECK(fired == count);

  // The largest representable deadline is kept too, and fires when time reaches it.
  timer_node last;
  w.insert(&last, UINT64_MAX);
  CHECK(w.advance(UINT64_MAX - 1, [](timer_node*) { FAIL("fired early"); }) == 0);
  CHECK(w.advance(UINT64_MAX, [&](timer_node* n) { CHECK(n == &last); }) == 1);
}

TEST_CASE("a deadline at or before the current time fires at the next advance") {
  timer_wheel w(start_ns);
  timer_node past;
  timer_node now_exactly;
  timer_node zero;
  w.insert(&past, start_ns - 10 * s_ns);
  w.insert(&now_exactly, start_ns);
  w.insert(&zero, 0);
  CHECK(w.size() == 3);
  REQUIRE(w.next_expiry().has_value());
  CHECK(*w.next_expiry() == 0);  // the earliest of them
  // The next advance fires them even when its time does not move on, or goes backwards.
  std::vector<timer_node*> fired;
  CHECK(w.advance(start_ns - 1, [&](timer_node* n) { fired.push_back(n); }) == 3);
  std::sort(fired.begin(), fired.end());
  std::vector<timer_node*> expected{&past, &now_exactly, &zero};
  std::sort(expected.begin(), expected.end());
  CHECK(fired == expected);
  CHECK(w.empty());
}

TEST_CASE("advance treats a time earlier than the wheel's current time as the current time") {
  timer_wheel w(start_ns);
  timer_node n;
  w.insert(&n, start_ns + 10 * ms_ns);
  CHECK(w.advance(start_ns + 20 * ms_ns, [](timer_node*) {}) == 1);
  w.insert(&n, start_ns + 15 * ms_ns);  // already due: the wheel's time is start + 20 ms
  CHECK(w.now_ns() == start_ns + 20 * ms_ns);
  CHECK(w.advance(start_ns, [](timer_node*) {}) == 1);
  CHECK(w.now_ns() == start_ns + 20 * ms_ns);
  w.insert(&n, start_ns + 21 * ms_ns);
  CHECK(w.advance(start_ns + 5 * ms_ns, [](timer_node*) { FAIL("fired early"); }) == 0);
  CHECK(w.advance(start_ns + 21 * ms_ns, [](timer_node*) {}) == 1);
}

TEST_CASE("a callback may re-insert its timer, and a due re-insertion waits for the next advance") {
  timer_wheel w(start_ns);
  timer_node periodic;
  constexpr std::uint64_t period_ns = 3 * ms_ns + 7;
  w.insert(&periodic, start_ns + period_ns);
  std::size_t fired = 0;
  std::uint64_t now = start_ns;
  for (int i = 0; i < 1000; ++i) {
    now += ms_ns;
    w.advance(now, [&](timer_node* n) {
      CHECK(n == &periodic);
      CHECK(n->deadline_ns <= now);
      REQUIRE(++fired < 1000);  // fails fast rather than looping if a re-insertion fired at once
      w.insert(n, n->deadline_ns + period_ns);
    });
  }
  CHECK(fired == (now - start_ns) / period_ns);
  CHECK(periodic.is_linked());

  // Re-inserting with a deadline that is already due cannot loop within one advance.
  w.remove(&periodic);
  w.insert(&periodic, now);
  std::size_t calls = 0;
  CHECK(w.advance(now, [&](timer_node* n) {
    REQUIRE(++calls < 100);
    w.insert(n, 0);
  }) == 1);
  CHECK(calls == 1);
  CHECK(periodic.is_linked());
  CHECK(w.advance(now, [&](timer_node*) {}) == 1);
  CHECK(w.empty());

  // Also when the advance crosses many ticks: a re-insertion due exactly at the advance's time waits.
  w.insert(&periodic, now + ms_ns);
  const std::uint64_t far = now + 10 * s_ns + 12'345;
  calls = 0;
  CHECK(w.advance(far, [&](timer_node* n) {
    REQUIRE(++calls < 100);
    w.insert(n, far);
  }) == 1);
  CHECK(calls == 1);
  CHECK(periodic.is_linked());
  CHECK(w.advance(far, [&](timer_node*) {}) == 1);
  CHECK(w.empty());
}

TEST_CASE("a callback may remove timers that are due in the same advance, and they do not fire") {
  constexpr std::size_t count = 200;
  node_pool pool(count);
  timer_wheel w(start_ns);
  // All due at once, in several slots and levels and in the due list.
  for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], start_ns - s_ns + i * 10 * ms_ns);
  std::vector<bool> removed(count, false);
  std::vector<bool> fired(count, false);
  std::size_t fired_count = 0;
  w.advance(start_ns + 10 * s_ns, [&](timer_node* n) {
    const std::size_t id = pool.id(n);
    CHECK_FALSE(removed[id]);
    CHECK_FALSE(fired[id]);
    fired[id] = true;
    ++fired_count;
    // Remove the next two not-yet-fired nodes, whichever list they are in.
    int to_remove = 2;
    for (std::size_t j = id + 1; j < count && to_remove > 0; ++j) {
      if (pool[j]->is_linked()) {
        w.remove(pool[j]);
        removed[j] = true;
        --to_remove;
      }
    }
  });
  std::size_t removed_count = 0;
  for (std::size_t i = 0; i < count; ++i) {
    CHECK(fired[i] != removed[i]);
    removed_count += removed[i] ? 1 : 0;
  }
  CHECK(fired_count + removed_count == count);
  CHECK(w.empty());
}

TEST_CASE("a callback may insert new timers, which fire at their own deadlines") {
  constexpr std::size_t count = 64;
  node_pool pool(count);
  timer_wheel w(start_ns);
  w.insert(pool[0], start_ns + ms_ns);
  std::size_t next = 1;
  std::uint64_t now = start_ns + ms_ns;
  std::vector<std::size_t> fired;
  // Each fired node inserts two: one later in the current tick, one 10 ms away.
  auto fn = [&](timer_node* n) {
    CHECK(n->deadline_ns <= now);
    fired.push_back(pool.id(n));
    for (std::uint64_t delay : {std::uint64_t{1}, 10 * ms_ns}) {
      if (next < count) w.insert(pool[next++], now + delay);
    }
  };
  CHECK(w.advance(now, fn) == 1);
  std::size_t steps = 0;
  while (!w.empty()) {
    const std::optional<std::uint64_t> e = w.next_expiry();
    REQUIRE(e.has_value());
    now = std::max(now, *e);
    w.advance(now, fn);
    REQUIRE(++steps < 100 * count);  // each step makes progress
  }
  CHECK(fired.size() == count);
}

TEST_CASE("a callback that throws leaves the unfired timers linked") {
  constexpr std::size_t count = 10;
  node_pool pool(count + 1);
  const std::uint64_t base = round_up_to_tick(start_ns);
  timer_wheel w(base - 1);
  timer_node* later = pool[count];  // in the same tick and not yet due, so set aside when the callback throws
  // Throw part way through the tick's due nodes, then at the last of them.
  for (const std::size_t throw_at : {std::size_t{3}, count}) {
    CAPTURE(throw_at);
    const std::uint64_t now = w.now_ns() + 1;
    const std::uint64_t tick_start = round_up_to_tick(now) + tick_ns;
    w.insert(later, tick_start + tick_ns / 2);
    for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], tick_start + 10);
    std::size_t calls = 0;
    CHECK_THROWS_AS(w.advance(tick_start + tick_ns / 4,
                              [&](timer_node*) {
                                if (++calls == throw_at) throw std::runtime_error("callback failed");
                              }),
                    std::runtime_error);
    CHECK(w.size() == count + 1 - throw_at);
    CHECK(later->is_linked());
    REQUIRE(w.next_expiry().has_value());
    CHECK(*w.next_expiry() <= (throw_at < count ? tick_start + tick_ns / 4 : later->deadline_ns));
    std::size_t rest = 0;
    w.advance(tick_start + tick_ns / 4, [&](timer_node* n) {
      CHECK(n != later);
      ++rest;
    });
    CHECK(rest == count - throw_at);
    CHECK(w.advance(tick_start + tick_ns / 2, [&](timer_node* n) { CHECK(n == later); }) == 1);
    CHECK(w.empty());
  }

  // The same while firing deadlines that were already past when inserted.
  const std::uint64_t now = w.now_ns();
  for (std::size_t i = 0; i < count; ++i) w.insert(pool[i], now - i * s_ns);
  CHECK_THROWS_AS(w.advance(now + tick_ns, [&](timer_node*) { throw std::runtime_error("callback failed"); }),
                  std::runtime_error);
  CHECK(w.size() == count - 1);
  CHECK(w.advance(now + tick_ns, [](timer_node*) {}) == count - 1);
  CHECK(w.empty());
}

TEST_CASE("size counts linked timers and clear unlinks them all without firing") {
  constexpr std::size_t count = 100;
  node_pool pool(count);
  timer_wheel w(start_ns);
  for (std::size_t i = 0; i < count; ++i) {
    w.insert(pool[i], start_ns - s_ns + i * hour_ns);
    CHECK(w.size() == i + 1);
    CHECK(pool[i]->is_linked());
  }
  w.clear();
  CHECK(w.empty());
  CHECK_FALSE(w.next_expiry().has_value());
  for (std::size_t i = 0; i < count; ++i) CHECK_FALSE(pool[i]->is_linked());
  CHECK(w.advance(start_ns + 1000 * day_ns, [](timer_node*) { FAIL("a cleared timer fired"); }) == 0);
  for (std::size_t i = 0; i < count; ++i)
    w.insert(pool[i], start_ns + 1000 * day_ns + i);  // the nodes are reusable
  CHECK(w.size() == count);
}

TEST_CASE("next_expiry is never later than the earliest deadline rounded up to a tick") {
  std::mt19937_64 rng(4);
  const std::size_t rounds = 300 * static_cast<std::size_t>(stress_scale());
  node_pool pool(8);
  for (std::size_t r = 0; r < rounds; ++r) {
    const std::uint64_t t0 = start_ns + std::uniform_int_distribution<std::uint64_t>(0, day_ns)(rng);
    timer_wheel w(t0);
    std::uint64_t earliest = UINT64_MAX;
    const std::uint64_t spans[] = {tick_ns, 20 * ms_ns, 2 * s_ns, hour_ns, 30 * day_ns, 3 * wheel_range_ns};
    const std::size_t n = 1 + r % pool.count;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t span =
          spans[std::uniform_int_distribution<std::size_t>(0, std::size(spans) - 1)(rng)];
      const std::uint64_t d = t0 + 1 + std::uniform_int_distribution<std::uint64_t>(0, span)(rng);
      w.insert(pool[i], d);
      earliest = std::min(earliest, d);
    }
    // Advance part of the way, as a worker would, then check the bound on what is left.
    const std::uint64_t now = t0 + (earliest - t0) / 2;
    w.advance(now, [](timer_node*) { FAIL("fired early"); });
    const std::optional<std::uint64_t> e = w.next_expiry();
    REQUIRE(e.has_value());
    CHECK(*e <= round_up_to_tick(earliest));
    CHECK(*e <= earliest);  // this wheel promises more: never later than the deadline itself
    w.clear();
  }
}

TEST_CASE("advancing to next_expiry repeatedly fires everything, and nothing fires before it") {
  std::mt19937_64 rng(5);
  constexpr std::size_t count = 3000;
  node_pool pool(count);
  timer_wheel w(start_ns);
  const std::uint64_t spans[] = {2 * tick_ns, 50 * ms_ns,  10 * s_ns,
                                 2 * hour_ns, 20 * day_ns, 2 * wheel_range_ns};
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t span = spans[i % std::size(spans)];
    w.insert(pool[i], start_ns + std::uniform_int_distribution<std::uint64_t>(0, span)(rng));
  }
  std::size_t fired = 0;
  std::size_t steps = 0;
  while (!w.empty()) {
    const std::optional<std::uint64_t> e = w.next_expiry();
    REQUIRE(e.has_value());
    if (*e > w.now_ns()) {
      CHECK(w.advance(*e - 1, [](timer_node*) { FAIL("fired before next_expiry"); }) == 0);
    }
    fired += advance_checked(w, pool, *e).size();
    ++steps;
    REQUIRE(steps < 100 * count);
  }
  CHECK(fired == count);
  CHECK_FALSE(w.next_expiry().has_value());
}

TEST_CASE("a lone timer an hour away is reached in a few next_expiry steps, not one per tick") {
  timer_wheel w(start_ns);
  timer_node n;
  w.insert(&n, start_ns + hour_ns + 12'345);
  std::size_t steps = 0;
  while (!w.empty()) {
    const std::optional<std::uint64_t> e = w.next_expiry();
    REQUIRE(e.has_value());
    w.advance(*e, [](timer_node*) {});
    ++steps;
    REQUIRE(steps <= 20);
  }
  // One step per level it cascades through, plus the scan of its tick.
  CHECK(steps <= timer_wheel::level_count + 1);
}

// The reference model: a multimap from deadline to id. At every advance the fired set must be exactly
// the model's due set, less what the callback removed before it came to it.
TEST_CASE("the wheel fires exactly what a multimap model says is due over random operations") {
  std::mt19937_64 rng(20240601);
  const std::size_t operations = 200'000 * static_cast<std::size_t>(stress_scale());
  constexpr std::size_t count = 1024;
  node_pool pool(count);
  std::uint64_t now = start_ns;
  std::optional<timer_wheel> wheel;
  wheel.emplace(now);
  std::multimap<std::uint64_t, std::size_t> model;
  std::vector<std::multimap<std::uint64_t, std::size_t>::iterator> where(count, model.end());
  std::vector<std::size_t> linked;  // ids, for picking a random linked node
  std::vector<std::size_t> slot_in_linked(count, 0);
  constexpr std::uint64_t epoch_limit_ns = std::uint64_t{1}
                                           << 62;  // far from overflow; then start a new wheel
  std::uint32_t stamp = 0;                         // one per advance; marks below are valid when equal to it
  std::vector<std::uint32_t> due_stamp(count, 0);
  std::vector<std::uint32_t> added_stamp(count, 0);

  auto add = [&](std::size_t id, std::uint64_t d) {
    wheel->insert(pool[id], d);
    where[id] = model.emplace(d, id);
    slot_in_linked[id] = linked.size();
    linked.push_back(id);
  };
  auto forget = [&](std::size_t id) {  // from the model only
    model.erase(where[id]);
    where[id] = model.end();
    const std::size_t pos = slot_in_linked[id];
    linked[pos] = linked.back();
    slot_in_linked[linked[pos]] = pos;
    linked.pop_back();
  };
  auto random_deadline = [&]() -> std::uint64_t {
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
      case 0:
        return now -
               std::uniform_int_distribution<std::uint64_t>(0, std::min(now, 10 * s_ns))(rng);  // past or now
      case 1:
        return now + std::uniform_int_distribution<std::uint64_t>(0, tick_ns)(rng);  // this or next tick
      case 2:
      case 3:
        return now + std::uniform_int_distribution<std::uint64_t>(0, 20 * ms_ns)(rng);
      case 4:
      case 5:
        return now + std::uniform_int_distribution<std::uint64_t>(0, 2 * s_ns)(rng);
      case 6:
        return now + std::uniform_int_distribution<std::uint64_t>(0, 2 * hour_ns)(rng);
      case 7:
        return now + std::uniform_int_distribution<std::uint64_t>(0, 30 * day_ns)(rng);
      case 8:
        return now + std::uniform_int_distribution<std::uint64_t>(0, 3 * wheel_range_ns)(rng);
      default:
        return now + std::uniform_int_distribution<std::uint64_t>(0, 100 * ms_ns)(rng);
    }
  };
  auto random_step = [&]() -> std::uint64_t {  // mostly small; now and then hours, days, a whole wheel range
    const int r = std::uniform_int_distribution<int>(0, 999)(rng);
    if (r < 2) return std::uniform_int_distribution<std::uint64_t>(0, wheel_range_ns)(rng);
    if (r < 12) return std::uniform_int_distribution<std::uint64_t>(0, 40 * day_ns)(rng);
    if (r < 60) return std::uniform_int_distribution<std::uint64_t>(0, hour_ns)(rng);
    if (r < 110) return std::uniform_int_distribution<std::uint64_t>(0, 5 * s_ns)(rng);
    if (r < 150) return 0;
    return std::uniform_int_distribution<std::uint64_t>(0, 4 * tick_ns)(rng);
  };

  std::size_t total_fired = 0;
  for (std::size_t op = 0; op < operations; ++op) {
    timer_wheel& w = *wheel;
    if (now > epoch_limit_ns) {  // large jumps add up under a big GROVE_STRESS_SCALE: start over
      w.clear();
      while (!linked.empty()) forget(linked.back());
      now = start_ns;
      wheel.emplace(now);
      continue;
    }
    const int kind = std::uniform_int_distribution<int>(0, 99)(rng);
    if (kind < 45) {  // insert a free node
      const std::size_t id = std::uniform_int_distribution<std::size_t>(0, count - 1)(rng);
      if (!pool[id]->is_linked()) add(id, random_deadline());
    } else if (kind < 65) {  // remove a random linked node
      if (!linked.empty()) {
        const std::size_t id = linked[std::uniform_int_distribution<std::size_t>(0, linked.size() - 1)(rng)];
        w.remove(pool[id]);
        forget(id);
      }
    } else {  // advance, sometimes to next_expiry, with a callback that sometimes re-inserts or removes
      const std::optional<std::uint64_t> e = w.next_expiry();
      GROVE_EXPECT(e.has_value() == !model.empty());
      if (e) GROVE_EXPECT(*e <= round_up_to_tick(model.begin()->first));
      if (kind < 70 && e) {
        if (*e > w.now_ns())
          GROVE_EXPECT(w.advance(*e - 1, [](timer_node*) { FAIL("fired before next_expiry"); }) == 0);
        now = std::max(now, *e);
      } else if (kind < 72) {
        now -=
            std::min(now, std::uniform_int_distribution<std::uint64_t>(0, s_ns)(rng));  // backwards: ignored
      } else {
        now += random_step();
      }
      const std::uint64_t effective_now = std::max(now, w.now_ns());
      // Due at the start: everything the model has at or before now. Nodes the callback adds are stamped
      // apart: with a deadline <= now they must wait for the next advance.
      ++stamp;
      for (auto it = model.begin(); it != model.end() && it->first <= effective_now; ++it)
        due_stamp[it->second] = stamp;
      std::size_t calls = 0;
      const std::size_t fired = w.advance(now, [&](timer_node* n) {
        const std::size_t id = pool.id(n);
        ++calls;
        GROVE_EXPECT(due_stamp[id] == stamp);  // due at the start, not removed since, not fired twice
        GROVE_EXPECT(added_stamp[id] != stamp);
        GROVE_EXPECT(n->deadline_ns <= effective_now);
        GROVE_EXPECT(!n->is_linked());
        due_stamp[id] = 0;
        forget(id);
        const int action = std::uniform_int_distribution<int>(0, 9)(rng);
        if (action == 0) {  // re-arm
          add(id, random_deadline());
          added_stamp[id] = stamp;
        } else if (action == 1 && !linked.empty()) {  // cancel another, due or not, fired-pending or not
          const std::size_t other =
              linked[std::uniform_int_distribution<std::size_t>(0, linked.size() - 1)(rng)];
          w.remove(pool[other]);
          forget(other);
          due_stamp[other] = 0;
          added_stamp[other] = 0;
        } else if (action == 2) {  // arm a free node
          const std::size_t other = std::uniform_int_distribution<std::size_t>(0, count - 1)(rng);
          if (!pool[other]->is_linked()) {
            add(other, random_deadline());
            added_stamp[other] = stamp;
          }
        }
      });
      GROVE_EXPECT(fired == calls);
      total_fired += fired;
      // Nothing due at the start is left, except what the callback added.
      for (auto it = model.begin(); it != model.end() && it->first <= effective_now; ++it) {
        GROVE_EXPECT(added_stamp[it->second] == stamp);
      }
      GROVE_EXPECT(w.now_ns() == effective_now);
    }
    GROVE_EXPECT(w.size() == model.size());
  }
  CHECK(total_fired > operations / 10);  // the mix really exercises firing
  // Drain: everything left fires, once.
  const std::size_t left = model.size();
  std::size_t drained = 0;
  wheel->advance(UINT64_MAX, [&](timer_node*) { ++drained; });
  CHECK(drained == left);
  CHECK(wheel->empty());
}
