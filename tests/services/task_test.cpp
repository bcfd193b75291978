// Tasks (grove/services/task.hpp): async/await, exceptions at await, tasks that die with their
// owner, partial results under one deadline (gather), bounded streams.
#include "helpers.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>

using namespace svc_test;

namespace {

struct started {
  grove::pid task;
  int index = 0;
};

// Blocks the calling task until the test sends it `go`.
void wait_for_go() {
  grove::receive([](go) {});
}

}  // namespace

TEST_CASE("await returns a task's value, and a void task's completion") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto a = svc::async([] { return 6 * 7; });
  auto b = svc::async([] { return std::string("text"); });
  auto c = svc::async([] {});
  CHECK(a.await().value() == 42);
  CHECK(svc::await(b, patience).value() == "text");
  CHECK(c.await(svc::deadline::after(patience)).has_value());
  CHECK(a.await().error() == grove::errc::bad_argument);  // a result is taken once
  CHECK(!a.is_pending());
}

TEST_CASE("an exception in a task surfaces at its await and the other tasks' values stay available") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto ok1 = svc::async([] { return 1; });
  auto bad = svc::async([]() -> int { throw std::invalid_argument("negative size"); });
  auto ok2 = svc::async([] { return 2; });
  auto r = bad.await(patience);
  REQUIRE(!r.has_value());
  CHECK(r.error() == svc::errc::exception);
  CHECK(r.failure().reason.text() == "negative size");
  CHECK_THROWS_AS(r.value(), svc::error);
  CHECK(ok1.await(patience).value() == 1);
  CHECK(ok2.await(patience).value() == 2);
  CHECK(mailbox_is_empty());  // nothing else came: no exit signal, no stray result
}

TEST_CASE("an await that times out leaves the task running, and a later await gets its value") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto t = svc::async([] {
    wait_for_go();
    return 5;
  });
  auto start = std::chrono::steady_clock::now();
  auto r = t.await(1s);
  CHECK(r.error() == grove::errc::timeout);
  CHECK(seconds_since(start) >= 1.0);
  CHECK(seconds_since(start) < 2.0);
  CHECK(t.is_pending());
  CHECK(grove::is_alive(t.pid()));
  grove::send(t.pid(), go{});
  CHECK(t.await(patience).value() == 5);
}

TEST_CASE("a task whose owner dies is stopped, whatever the owner's reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  SUBCASE("the owner crashes") {
    auto owner = grove::spawn([test] {
      auto t = svc::async([] { wait_for_go(); });
      grove::send(test, t.pid());
      wait_for_go();
      throw std::runtime_error("owner failed");
    });
    const grove::pid task = receive_one<grove::pid>();
    auto watcher = grove::monitor(task);
    grove::send(owner, go{});
    auto reason = wait_down(watcher);  // killed by the handle as the owner unwinds (or by the link)
    CHECK((reason.is_killed() || reason.text() == "owner failed"));
  }
  SUBCASE("the owner returns normally without awaiting") {
    auto owner = grove::spawn([test] {
      auto t = svc::async([] { wait_for_go(); });
      grove::send(test, t.pid());
      wait_for_go();
    });  // the handle's destructor stops the task
    const grove::pid task = receive_one<grove::pid>();
    auto watcher = grove::monitor(task);
    grove::send(owner, go{});
    CHECK(wait_down(watcher).is_killed());
  }
  SUBCASE("the owner ends without destroying the handle: the lifeline stops the task") {
    auto owner = grove::spawn([test] {
      auto t = svc::async([] { wait_for_go(); });
      grove::send(test, t.pid());
      grove::send(test, std::move(t));  // the handle leaves the owner, which then returns
    });
    const grove::pid task = receive_one<grove::pid>();
    auto handle = receive_one<svc::task<void>>();
    CHECK(grove_test::wait_until([task] { return !grove::is_alive(task); }));  // it waits for a go that never comes
    CHECK(grove_test::wait_until([owner] { return !grove::is_alive(owner); }));
  }
  SUBCASE("the owner is killed") {
    auto owner = grove::spawn([test] {
      auto t = svc::async([] { wait_for_go(); });
      grove::send(test, t.pid());
      wait_for_go();
    });
    const grove::pid task = receive_one<grove::pid>();
    auto watcher = grove::monitor(task);
    grove::exit(owner, grove::exit_reason::kill());
    CHECK(wait_down(watcher).is_killed());
  }
}

TEST_CASE("a task that exits or is killed surfaces at its await, and its owner lives on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;  // does not trap exits: an exit signal through a link would end it
  auto exits = svc::async([]() -> int { grove::exit(grove::exit_reason("disk full")); });
  auto killed = svc::async([] {
    wait_for_go();
    return 1;
  });
  auto survivor = svc::async([] { return 2; });
  grove::exit(killed.pid(), grove::exit_reason::kill());
  auto r1 = exits.await(patience);
  CHECK(r1.error() == svc::errc::exited);
  CHECK(r1.failure().reason == grove::exit_reason("disk full"));
  auto r2 = killed.await(patience);
  CHECK(r2.error() == svc::errc::exited);
  CHECK(r2.failure().reason.is_killed());
  CHECK(survivor.await(patience).value() == 2);
  CHECK(mailbox_is_empty());
}

TEST_CASE("a cancelled task is stopped, its owner survives, and its result never arrives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto t = svc::async([] {
    wait_for_go();
    return 1;
  });
  auto watcher = grove::monitor(t.pid());
  t.cancel();
  CHECK(wait_down(watcher).is_killed());
  CHECK(!t.is_pending());
  auto done = svc::async([] { return 2; });
  CHECK(done.await(patience).value() == 2);
  done.cancel();  // a finished task: nothing to do
  auto finished_unawaited = svc::async([] { return 3; });
  const grove::pid p = finished_unawaited.pid();
  REQUIRE(grove_test::wait_until([p] { return !grove::is_alive(p); }));
  grove::receive([](go) {}, grove::after(0ms));  // takes in what arrived: the result is in our mailbox now
  finished_unawaited.cancel();                   // ...and cancel removes it
  CHECK(mailbox_is_empty());
}

TEST_CASE("gather returns each function's value or its error under one deadline") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto start = std::chrono::steady_clock::now();
  auto [value, thrown, exited, late, time_left] = svc::gather(
      svc::deadline::after(1s), [] { return 1; }, []() -> int { throw std::runtime_error("backend said no"); },
      []() -> int { grove::exit(grove::exit_reason("lost connection")); },
      [] {
        wait_for_go();  // never comes
        return 4;
      },
      [](const svc::deadline& d) { return d.remaining() > std::chrono::nanoseconds(0); });
  const double took = seconds_since(start);
  CHECK(value.value() == 1);
  CHECK(thrown.error() == svc::errc::exception);
  CHECK(thrown.failure().reason.text() == "backend said no");
  CHECK(exited.error() == svc::errc::exited);
  CHECK(exited.failure().reason == grove::exit_reason("lost connection"));
  CHECK(late.error() == svc::errc::deadline_exceeded);
  CHECK(time_left.value());  // the deadline travelled into the function
  CHECK(took >= 1.0);
  CHECK(took < 2.0);
  CHECK(mailbox_is_empty());
}

TEST_CASE("gather over a vector returns as soon as every call has finished") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  std::vector<std::function<int()>> calls;
  for (int i = 0; i < 10; ++i) calls.push_back([i] { return i * i; });
  auto start = std::chrono::steady_clock::now();
  auto results = svc::gather(svc::deadline::after(patience), calls);
  CHECK(seconds_since(start) < 10.0);
  REQUIRE(results.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(results[static_cast<std::size_t>(i)].value() == i * i);
}

TEST_CASE("async_stream runs at most max_concurrency tasks at once and returns every result in input order") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct gauge {
    std::atomic<int> now{0};
    std::atomic<int> peak{0};
  };
  auto g = std::make_shared<gauge>();
  const int n = 40 * static_cast<int>(grove_test::stress_scale());
  std::vector<int> inputs;
  for (int i = 0; i < n; ++i) inputs.push_back(i);
  auto stream = svc::async_stream(
      inputs,
      [g](int i) {
        int now = g->now.fetch_add(1) + 1;
        int peak = g->peak.load();
        while (now > peak && !g->peak.compare_exchange_weak(peak, now)) {
        }
        grove::yield();  // let others start while we are counted
        g->now.fetch_sub(1);
        return i * 2;
      },
      {.max_concurrency = 3, .ordered = true});
  int expected = 0;
  while (auto item = stream.next()) {
    CHECK(item->index == static_cast<std::size_t>(expected));
    CHECK(item->result.value() == expected * 2);
    ++expected;
  }
  CHECK(expected == n);
  CHECK(g->peak.load() <= 3);
  CHECK(g->peak.load() >= 1);
}

TEST_CASE("async_stream returns results as they complete when unordered") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto stream = svc::async_stream(
      std::vector<int>{0, 1, 2, 3},
      [test](int i) {
        if (i == 0) {
          grove::send(test, started{grove::self(), i});
          wait_for_go();  // the first input finishes last
        }
        return i;
      },
      {.max_concurrency = 4, .ordered = false});
  std::vector<std::size_t> order;
  for (int k = 0; k < 3; ++k) {
    auto item = stream.next();
    REQUIRE(item.has_value());
    order.push_back(item->index);
  }
  CHECK(std::find(order.begin(), order.end(), 0u) == order.end());
  auto first = receive_one<started>();
  grove::send(first.task, go{});
  auto last = stream.next();
  REQUIRE(last.has_value());
  CHECK(last->index == 0);
  CHECK(!stream.next().has_value());
}

TEST_CASE("a stream past its deadline reports the unfinished items as deadline_exceeded") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto stream = svc::async_stream(
      std::vector<int>{0, 1, 2, 3, 4},
      [](int i) {
        if (i >= 2) wait_for_go();  // never comes
        return i;
      },
      {.max_concurrency = 3, .deadline = svc::deadline::after(1s)});
  auto all = stream.collect();
  REQUIRE(all.size() == 5);
  CHECK(all[0].result.value() == 0);
  CHECK(all[1].result.value() == 1);
  for (std::size_t i = 2; i < 5; ++i) CHECK(all[i].result.error() == svc::errc::deadline_exceeded);
  CHECK(mailbox_is_empty());
}

TEST_CASE("a task launched outside a process reports not_in_process at its await") {
  grove_test::runtime_fixture rt;
  std::error_code code;
  std::thread t([&] {
    auto task = svc::async([] { return 1; });
    code = task.await(1s).error();
  });
  t.join();
  CHECK(code == grove::errc::not_in_process);
}
