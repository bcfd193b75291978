// A process that cannot keep up with its mail makes its senders wait (runtime/src/overload.cpp):
// the sender waits after its send (wait_reason::muted) until the receiver catches up. Sends still
// never fail or drop, order is kept, and no wait can deadlock: processes that flood each other, a
// receiver that waits in a selective receive for its muted sender, a muted sender that is killed, a
// receiver that dies with senders waiting.
//
// The busy receiver computes in short stretches (spinning on the clock for 1 ms, no runtime call)
// between yields, so that its senders outpace its drains: at each yield it takes in at most one
// batch of its mail (256), and the rest makes it overloaded. Senders flood until the test has seen
// them muted (or a cap, so that a broken overload cannot eat the machine's memory).
#include "support/fixture.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct peer {
  grove::pid other;
};
struct last {
  int count;
};
struct finished {};
struct tick {
  int i;
};

constexpr int flood_cap = 2'000'000;

// Computes for about 1 ms without a runtime call, then yields.
void compute_a_little_then_yield() {
  const auto until = std::chrono::steady_clock::now() + 1ms;
  while (std::chrono::steady_clock::now() < until) {
  }
  grove::yield();
}

bool muted(grove::pid p) {
  auto s = grove::process_summary_of(p);
  return s && s->status == grove::process_status::waiting && s->waiting_on == grove::wait_reason::muted;
}

int flood_size() { return 50'000 * static_cast<int>(grove_test::stress_scale()); }

}  // namespace

TEST_CASE("a flood to a busy process makes its sender wait (muted) until it catches up; nothing lost or reordered") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  std::atomic<bool> seen_muted{false};
  // Takes one message, computes until the sender has been seen muted, then waits for `last` (a
  // selective receive, behind the whole flood: the sender sends it once it is no longer held), then
  // takes the flood in order.
  const grove::pid receiver = grove::spawn([&seen_muted, test] {
    int expected = 0;
    bool in_order = true;
    auto take = [&] { grove::receive([&](int v) { in_order = in_order && v == expected++; }); };
    take();
    while (!seen_muted.load(std::memory_order_acquire)) compute_a_little_then_yield();
    const int n = grove::receive([](last l) { return l.count; });
    while (expected < n) take();
    grove::send(test, std::make_pair(expected == n, in_order));
  });
  const grove::pid sender = grove::spawn([receiver, &seen_muted] {
    int i = 0;
    while (i < flood_cap && !seen_muted.load(std::memory_order_acquire)) grove::send(receiver, i++);
    grove::send(receiver, last{i});
  });
  CHECK(grove_test::wait_until([&] { return muted(sender); }));
  CHECK(std::string(grove::to_string(grove::wait_reason::muted)) == "muted");
  seen_muted.store(true, std::memory_order_release);
  const auto [all, in_order] = grove::receive([](std::pair<bool, bool> r) { return r; },
                                              grove::after(patience, [] { return std::make_pair(false, false); }));
  CHECK(all);
  CHECK(in_order);
}

TEST_CASE("two processes that flood each other both finish, with every message in order") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  const int n = 2 * flood_size();
  auto flooder = [test, n] {
    const grove::pid other = grove::receive([](peer p) { return p.other; });
    for (int i = 0; i < n; ++i) grove::send(other, i);
    int expected = 0;
    bool in_order = true;
    while (expected < n) grove::receive([&](int v) { in_order = in_order && v == expected++; });
    grove::send(test, in_order);
  };
  const grove::pid a = grove::spawn(flooder);
  const grove::pid b = grove::spawn(flooder);
  grove::send(a, peer{b});
  grove::send(b, peer{a});
  for (int i = 0; i < 2; ++i) {
    const int got = grove::receive([](bool ordered) { return ordered ? 1 : 0; }, grove::after(patience, [] { return -1; }));
    CHECK(got == 1);
  }
}

TEST_CASE("a muted sender can be killed; a receiver that dies releases the senders waiting for it") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  std::atomic<bool> stop{false};
  // Never takes a message: computes and yields until it is killed.
  const auto receiver = grove::spawn_monitor([] {
    for (;;) compute_a_little_then_yield();
  });
  auto flood = [r = receiver.pid, test, &stop] {
    for (int i = 0; i < flood_cap && !stop.load(std::memory_order_acquire); ++i) grove::send(r, i);
    grove::send(test, finished{});
  };
  auto down_of = [](const grove::monitor_ref& m) {
    return grove::receive(grove::when([&](const grove::down& d) { return d.ref == m; }, [](grove::down d) { return d; }),
                          grove::after(patience, [] { return grove::down{}; }));
  };
  const auto first = grove::spawn_monitor(flood);
  REQUIRE(grove_test::wait_until([&] { return muted(first.pid); }));
  grove::exit(first.pid, grove::exit_reason::kill());
  CHECK(down_of(first.monitor).reason.is_killed());

  const grove::pid second = grove::spawn(flood);
  REQUIRE(grove_test::wait_until([&] { return muted(second); }));
  grove::exit(receiver.pid, grove::exit_reason::kill());
  CHECK(down_of(receiver.monitor).reason.is_killed());
  // The second sender goes on (what it sends now goes to a dead process: dead letters) and ends.
  stop.store(true, std::memory_order_release);
  CHECK(grove::receive([](finished) { return true; }, grove::after(patience, [] { return false; })));
}

TEST_CASE("sixteen processes flooding one that takes everything: all arrive, each sender's in order, none left waiting") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  constexpr int senders = 16;
  const int n = 20'000 * static_cast<int>(grove_test::stress_scale());
  const grove::pid receiver = grove::spawn([test, n] {
    std::vector<int> next(senders, 0);
    bool in_order = true;
    for (long i = 0; i < long{n} * senders; ++i)
      grove::receive([&](std::pair<int, int> m) { in_order = in_order && m.second == next[static_cast<std::size_t>(m.first)]++; });
    grove::send(test, in_order);
  });
  for (int s = 0; s < senders; ++s)
    grove::spawn([receiver, s, n] {
      for (int i = 0; i < n; ++i) grove::send(receiver, std::make_pair(s, i));
    });
  CHECK(grove::receive([](bool in_order) { return in_order ? 1 : 0; }, grove::after(patience, [] { return -1; })) == 1);
}

TEST_CASE("senders freed by a receiver whose worker then blocks in a system call are run by another worker") {
  // Senders freed by a receiver that caught up are gathered on the receiver's worker (overload.cpp,
  // "Senders gather where their receiver runs"), where only that worker runs them unless it is
  // stuck. Here the receiver frees its muted senders (a drain empties its inbox) and, before they
  // can run, blocks its worker in read(2); the test then tells the senders to stop. The other worker
  // must take them, so that they see it and end while the read lasts; without that they would wait
  // for the read to end. (A sender that the receiver's last drain muted again waits at most 10 ms.)
  grove_test::runtime_fixture rt({.workers = 2});
  grove::scoped_process me;
  const grove::pid test = me.pid();
  constexpr int senders = 4;
  struct pipe_pair {
    int fds[2] = {-1, -1};
    ~pipe_pair() {
      for (int fd : fds)
        if (fd >= 0) ::close(fd);
    }
  };
  auto blocking = std::make_shared<pipe_pair>();  // shared with the receiver, which may outlive a failed test
  REQUIRE(::pipe(blocking->fds) == 0);
  std::vector<grove::pid> sender_pids;
  std::atomic<bool> all_muted{false};  // release/acquire: publishes sender_pids to the receiver
  std::atomic<bool> reading{false}, read_over{false}, stop_sending{false};
  const grove::pid receiver = grove::spawn([&, blocking] {
    grove::receive([](int) {});
    while (!all_muted.load(std::memory_order_acquire)) compute_a_little_then_yield();
    // Take mail, never waiting for it, until a drain empties the inbox and frees the senders.
    while (std::any_of(sender_pids.begin(), sender_pids.end(), muted)) grove::receive([](int) {});
    reading.store(true, std::memory_order_release);  // release: a flag the test reads
    char c;
    (void)!::read(blocking->fds[0], &c, 1);  // holds this worker until the test writes
    read_over.store(true, std::memory_order_release);
  });
  for (int s = 0; s < senders; ++s)
    sender_pids.push_back(grove::spawn([receiver, test, &stop_sending] {
      for (int i = 0; !stop_sending.load(std::memory_order_acquire) && i < flood_cap; ++i) grove::send(receiver, i);
      grove::send(test, finished{});
    }));
  const bool flooded = grove_test::wait_until([&] { return std::all_of(sender_pids.begin(), sender_pids.end(), muted); });
  all_muted.store(true, std::memory_order_release);
  const bool blocked = grove_test::wait_until([&] { return reading.load(std::memory_order_acquire); });
  stop_sending.store(true, std::memory_order_release);
  int finished_count = 0;
  while (finished_count < senders && grove::receive([](finished) { return true; }, grove::after(patience, [] { return false; })))
    ++finished_count;
  const bool still_blocked = !read_over.load(std::memory_order_acquire);
  REQUIRE(::write(blocking->fds[1], "x", 1) == 1);
  REQUIRE(flooded);
  REQUIRE(blocked);
  CHECK(finished_count == senders);
  CHECK(still_blocked);  // they ended while the receiver's worker was held
}

TEST_CASE("a pinned process that keeps yielding does not keep a flood gathered on its worker from running") {
  // A worker serves its pinned processes and the processes gathered on it (overload.cpp) in turns.
  // Here a process pinned to one worker only yields, so that worker's pinned queue is never empty,
  // and the receiver, pinned there too, gathers its senders there: they must still run and finish.
  grove_test::runtime_fixture rt({.workers = 2});
  grove::scoped_process me;
  const grove::pid test = me.pid();
  constexpr int senders = 4;
  const int n = flood_size();
  struct started {
    grove::pid who;
    int worker;
  };
  auto report_start = [test] { grove::send(test, started{grove::self(), grove::process_info(grove::self())->worker}); };
  auto receive_start = [] { return grove::receive([](started s) { return s; }, grove::after(patience, [] { return started{{}, -1}; })); };
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto stop = std::make_shared<std::atomic<bool>>(false);  // shared with the yielder, which may outlive a failed test
    const grove::pid yielder = grove::spawn(grove::spawn_options{.pinned = true}, [test, n, stop, report_start] {
      report_start();
      grove::spawn(grove::spawn_options{.pinned = true}, [test, n, report_start] {
        report_start();
        long taken = 0;
        while (taken < long{n} * senders)
          grove::receive([&](int) {
            const auto until = std::chrono::steady_clock::now() + 2us;  // slower than its senders
            while (std::chrono::steady_clock::now() < until) {
            }
            // Short runs: a worker in one process for 200 µs counts as stuck, and others may then
            // take what is gathered there (the case of the test above, not this one).
            if (++taken % 16 == 0) grove::yield();
          });
        grove::send(test, taken);
      });
      while (!stop->load(std::memory_order_acquire)) grove::yield();
    });
    const started a = receive_start(), b = receive_start();
    REQUIRE(a.worker >= 0);
    REQUIRE(b.worker >= 0);
    const grove::pid receiver = a.who == yielder ? b.who : a.who;
    if (a.worker != b.worker) {  // not the case under test: an idle worker took the receiver first
      stop->store(true, std::memory_order_release);
      grove::exit(receiver, grove::exit_reason::kill());
      continue;
    }
    for (int s = 0; s < senders; ++s)
      grove::spawn([receiver, test, n] {
        for (int i = 0; i < n; ++i) grove::send(receiver, i);
        grove::send(test, finished{});
      });
    int finished_count = 0;
    while (finished_count < senders && grove::receive([](finished) { return true; }, grove::after(patience, [] { return false; })))
      ++finished_count;
    const long taken = grove::receive([](long t) { return t; }, grove::after(patience, [] { return -1L; }));
    const bool yielded_all_along = grove::is_alive(yielder);
    stop->store(true, std::memory_order_release);
    CHECK(finished_count == senders);
    CHECK(taken == long{n} * senders);
    CHECK(yielded_all_along);
    return;
  }
  FAIL("the receiver never started on the yielder's worker in 10 attempts");
}

TEST_CASE("a sender muted behind an inbox that a thread keeps full still gets through (a muted wait is bounded)") {
  // A scoped_process's thread is never muted: here it keeps the receiver's inbox from ever emptying
  // (thousands of messages ahead of it), so the receiver stays overloaded and the process sending
  // to it is muted on every send. Each wait ends after at most longest_mute_ns (10 ms,
  // overload.cpp), so its sends go on getting through while the thread floods; without the bound
  // its first muted send would wait for as long as the thread goes on.
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  constexpr int progress = 20;   // sends the muted process must get through while the thread floods
  constexpr long ahead = 4'000;  // messages the thread keeps in front of the receiver (~8 ms of its work)
  std::atomic<long> taken{0};
  std::atomic<int> ticks_sent{0};
  std::atomic<bool> stop{false};
  const grove::pid receiver = grove::spawn([test, &taken] {
    int expected = 0;
    bool in_order = true;
    bool stopping = false;
    while (!stopping)
      grove::receive(
          [&](int) {
            const auto until = std::chrono::steady_clock::now() + 2us;  // slower than the thread sends
            while (std::chrono::steady_clock::now() < until) {
            }
            taken.fetch_add(1, std::memory_order_relaxed);  // a count: the thread reads it to pace itself
          },
          [&](tick t) { in_order = in_order && t.i == expected++; }, [&](finished) { stopping = true; });
    grove::send(test, std::make_pair(expected, in_order));
  });
  // Sends ticks until told to stop: fast until the receiver is overloaded, then one per muted wait.
  const auto sender = grove::spawn_monitor([receiver, &ticks_sent, &stop] {
    for (int i = 0; !stop.load(std::memory_order_acquire); ++i) {
      grove::send(receiver, tick{i});
      ticks_sent.store(i + 1, std::memory_order_relaxed);  // progress, read by the test
    }
  });
  long sent = 0;
  int ticks_when_muted = -1;  // ticks sent when the test first saw the sender muted
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < give_up) {
    if (sent - taken.load(std::memory_order_relaxed) < ahead) {
      for (long k = 0; k < ahead; ++k) grove::send(receiver, static_cast<int>(k));
      sent += ahead;
    } else {
      std::this_thread::yield();
    }
    if (ticks_when_muted < 0 && muted(sender.pid)) ticks_when_muted = ticks_sent.load(std::memory_order_relaxed);
    if (ticks_when_muted >= 0 && ticks_sent.load(std::memory_order_relaxed) >= ticks_when_muted + progress) break;
  }
  const int ticks_at_end_of_flood = ticks_sent.load(std::memory_order_relaxed);
  stop.store(true, std::memory_order_release);
  const auto down = grove::receive(grove::when([&](const grove::down& d) { return d.ref == sender.monitor; }, [](grove::down d) { return d; }),
                                   grove::after(patience, [] { return grove::down{}; }));
  CHECK(down.reason.is_normal());
  grove::send(receiver, finished{});  // after every tick: the sender has ended
  const auto [count, in_order] = grove::receive([](std::pair<int, bool> r) { return r; },
                                                grove::after(patience, [] { return std::make_pair(-1, false); }));
  REQUIRE(ticks_when_muted >= 0);  // the thread kept the receiver overloaded
  CHECK(ticks_at_end_of_flood >= ticks_when_muted + progress);
  CHECK(count == ticks_sent.load(std::memory_order_relaxed));
  CHECK(in_order);
}

TEST_CASE("an exit signal in the middle of a flood's batch: a trapping receiver gets it in its place, another dies of it") {
  // The sender floods the receiver, sends it an exit signal halfway, and floods on. The receiver
  // computes between yields until the sender has been seen muted, so the signal arrives behind a
  // backlog and is taken in the middle of a drained batch (256 nodes), between messages of the
  // same sender. Erlang's order per sender and receiver holds for signals and messages together.
  const int n = flood_size();
  const int exit_at = n / 2 + 17;  // not on a batch boundary
  SUBCASE("trapping: the exit_signal message comes after exactly the messages sent before it") {
    grove_test::runtime_fixture rt;
    grove::scoped_process me;
    const grove::pid test = me.pid();
    std::atomic<bool> seen_muted{false};
    const grove::pid receiver = grove::spawn([&seen_muted, test] {
      grove::trap_exit(true);
      grove::send(test, finished{});  // trapping from here on
      while (!seen_muted.load(std::memory_order_acquire)) compute_a_little_then_yield();
      int expected = 0;
      bool in_order = true;
      int exit_position = -1;
      std::string reason;
      grove::pid from;
      for (bool done = false; !done;)
        grove::receive([&](int v) { in_order = in_order && v == expected++; },
                       [&](grove::exit_signal e) {
                         exit_position = expected;
                         reason = std::string(e.reason.text());
                         from = e.from;
                       },
                       [&](last l) { done = l.count == expected; });
      grove::send(test, std::make_tuple(in_order, exit_position, reason, from, expected));
    });
    REQUIRE(grove::receive([](finished) { return true; }, grove::after(patience, [] { return false; })));
    const grove::pid sender = grove::spawn([receiver, n, exit_at] {
      for (int i = 0; i < n; ++i) {
        if (i == exit_at) grove::exit(receiver, grove::exit_reason("mid_flood"));
        grove::send(receiver, i);
      }
      grove::send(receiver, last{n});
    });
    CHECK(grove_test::wait_until([&] { return muted(sender) || !grove::is_alive(sender); }));
    seen_muted.store(true, std::memory_order_release);
    using result = std::tuple<bool, int, std::string, grove::pid, int>;
    const auto [in_order, exit_position, reason, from, count] =
        grove::receive([](result r) { return r; }, grove::after(patience, [] { return result{false, -1, "", {}, -1}; }));
    CHECK(in_order);
    CHECK(count == n);
    CHECK(exit_position == exit_at);
    CHECK(reason == "mid_flood");
    CHECK(from == sender);
  }
  SUBCASE("not trapping: it dies with the signal's reason; its sender is not left waiting, and the rest is freed") {
    grove_test::runtime_fixture rt;
    grove::scoped_process me;
    std::atomic<bool> seen_muted{false};
    std::atomic<int> taken{0};
    const auto receiver = grove::spawn_monitor([&seen_muted, &taken] {
      while (!seen_muted.load(std::memory_order_acquire)) compute_a_little_then_yield();
      for (;;) grove::receive([&](int) { taken.fetch_add(1, std::memory_order_relaxed); });  // a count, read after its end
    });
    const auto sender = grove::spawn_monitor([r = receiver.pid, n, exit_at] {
      for (int i = 0; i < n; ++i) {
        if (i == exit_at) grove::exit(r, grove::exit_reason("mid_flood"));
        grove::send(r, i);
      }
    });
    CHECK(grove_test::wait_until([&] { return muted(sender.pid) || !grove::is_alive(sender.pid); }));
    seen_muted.store(true, std::memory_order_release);
    auto down_of = [](const grove::monitor_ref& m) {
      return grove::receive(grove::when([&](const grove::down& d) { return d.ref == m; }, [](grove::down d) { return d; }),
                            grove::after(patience, [] { return grove::down{}; }));
    };
    const grove::down receiver_down = down_of(receiver.monitor);
    CHECK(receiver_down.reason.text() == "mid_flood");
    CHECK(down_of(sender.monitor).reason.is_normal());  // it ended: sends to the dead receiver go on
    CHECK(taken.load(std::memory_order_relaxed) <= exit_at);  // nothing after the signal was taken
  }
}
