// restart_intensity: OTP's "at most I restarts in any period P", as a pure value (no runtime, no
// clock: the tests pass the time), checked against a naive model that keeps every restart.
#include <deque>
#include <random>

#include "helpers.hpp"

using sup_test::sup::restart_intensity;
using clock_type = restart_intensity::clock;
using namespace std::chrono_literals;

namespace {
clock_type::time_point at(std::chrono::nanoseconds t) { return clock_type::time_point(t); }
}  // namespace

TEST_CASE("restart intensity allows exactly intensity restarts within one period") {
  restart_intensity w(3, 5s);
  CHECK(w.add(at(1s)));
  CHECK(w.add(at(2s)));
  CHECK(w.add(at(3s)));
  CHECK(w.count(at(3s)) == 3);
  CHECK_FALSE(w.add(at(4s)));  // the fourth within 5 s
  CHECK(w.count(at(4s)) == 4);
}

TEST_CASE("restarts older than the period no longer count") {
  restart_intensity w(1, 5s);
  CHECK(w.add(at(10s)));
  CHECK_FALSE(w.add(at(10s + 4999ms)));  // still inside the window
  restart_intensity v(1, 5s);
  CHECK(v.add(at(10s)));
  CHECK(v.add(at(15s)));  // exactly one period later: the first has left the window
  CHECK(v.count(at(15s)) == 1);
  CHECK(v.count(at(20s)) == 0);
}

TEST_CASE("intensity zero gives up at the first restart") {
  restart_intensity w(0, 1s);
  CHECK_FALSE(w.add(at(1s)));
}

TEST_CASE("the window keeps at most intensity plus one restarts however many are added") {
  restart_intensity w(2, 1000s);
  for (int i = 0; i < 1000; ++i) w.add(at(std::chrono::milliseconds(i)));
  CHECK(w.count(at(1s)) == 3);
}

TEST_CASE("restart intensity agrees with a model that keeps every restart") {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    const int intensity = static_cast<int>(rng() % 20);
    const auto period = std::chrono::milliseconds(1 + rng() % 500);
    restart_intensity w(intensity, period);
    std::deque<std::chrono::nanoseconds> model;
    std::chrono::nanoseconds now{0};
    for (int i = 0; i < 2000; ++i) {
      now += std::chrono::microseconds(rng() % 50'000);
      while (!model.empty() && now - model.front() >= period) model.pop_front();
      model.push_back(now);
      const bool expect_ok = model.size() <= static_cast<std::size_t>(intensity);
      const bool ok = w.add(at(now));
      REQUIRE(ok == expect_ok);
      if (!ok) {  // a supervisor would give up here; start a fresh one, as its parent would
        w = restart_intensity(intensity, period);
        model.clear();
      }
    }
  }
}
