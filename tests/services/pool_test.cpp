// Bounded pools (grove/services/pool.hpp): jobs and leases, the bounded queue, deadlines in the
// queue, isolation between pools, workers that fail, stats.
#include "helpers.hpp"

#include <grove/metrics.hpp>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

using namespace svc_test;

namespace {

struct job_started {
  grove::pid worker;
};

// A job that tells `test` it runs on a worker, then waits for `go`.
auto blocking_job(grove::pid test, int value) {
  return [test, value] {
    grove::send(test, job_started{grove::self()});
    grove::receive([](go) {});
    return value;
  };
}

svc::pool start_pool(std::size_t size, std::size_t max_waiting) {
  auto p = svc::pool::start_link({.size = size, .max_waiting = max_waiting});
  REQUIRE(p.has_value());
  return *p;
}

svc::pool_stats stats_of(const svc::pool& p) {
  auto s = p.stats(patience);
  REQUIRE(s.has_value());
  return *s;
}

}  // namespace

TEST_CASE("a pool runs jobs on its workers and counts them") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto pool = start_pool(3, 5);
  for (int i = 0; i < 10; ++i) CHECK(pool.run(svc::deadline::after(patience), [i] { return i + 1; }).value() == i + 1);
  auto worker = pool.run(svc::deadline::after(patience), [] { return grove::self(); });
  CHECK(worker.value() != me.pid());
  CHECK(pool.run(svc::deadline::after(patience), [](const svc::deadline& d) { return !d.is_never(); }).value());
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).completed == 12; }));
  auto s = stats_of(pool);
  CHECK(s.size == 3);
  CHECK(s.busy == 0);
  CHECK(s.queued == 0);
  CHECK(s.served == 12);
  CHECK(s.rejected == 0);
  CHECK(s.timed_out == 0);
  CHECK(pool.stop().has_value());
  CHECK(pool.run(svc::deadline::after(patience), [] { return 1; }).error() == grove::errc::noproc);
}

TEST_CASE("a full wait queue rejects at once with pool_full") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto pool = start_pool(1, 1);
  auto running = svc::async([pool, test] { return pool.run(svc::deadline::after(patience), blocking_job(test, 1)); });
  const grove::pid worker = receive_one<job_started>().worker;
  auto queued = svc::async([pool] { return pool.run(svc::deadline::after(patience), [] { return 2; }); });
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).queued == 1; }));
  auto start = std::chrono::steady_clock::now();
  auto rejected = pool.run(svc::deadline::after(patience), [] { return 3; });
  CHECK(rejected.error() == svc::errc::pool_full);
  CHECK(seconds_since(start) < 10.0);  // at once, not at the deadline
  CHECK(stats_of(pool).rejected == 1);
  grove::send(worker, go{});
  CHECK(running.await(patience).value() == 1);
  CHECK(queued.await(patience).value() == 2);
}

TEST_CASE("a pool annotates the trace on its own track: each checkout, each refusal, each caller that gave up") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  REQUIRE(!grove::trace::start({.kinds = grove::trace::bit(grove::trace::event_kind::annotation)}));
  auto pool = start_pool(1, 1);
  auto running = svc::async([pool, test] { return pool.run(svc::deadline::after(patience), blocking_job(test, 1)); });
  const grove::pid worker = receive_one<job_started>().worker;
  // Long enough that the pool has queued it before its deadline however slowly the caller runs (else
  // the annotation is the refusal of a caller whose deadline had passed).
  auto queued = svc::async([pool] { return pool.checkout(svc::deadline::after(1s)).has_value(); });
  CHECK(!queued.await(patience).value());  // gave up in the queue
  auto queued_again = svc::async([pool] { return pool.run(svc::deadline::after(patience), [] { return 2; }); });
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).queued == 1; }));
  CHECK(pool.run(svc::deadline::after(patience), [] { return 3; }).error() == svc::errc::pool_full);
  grove::send(worker, go{});
  CHECK(running.await(patience).value() == 1);
  CHECK(queued_again.await(patience).value() == 2);
  std::vector<std::string> texts;
  for (const auto& e : grove::trace::snapshot())
    if (e.kind == grove::trace::event_kind::annotation && e.process == pool.pid()) texts.push_back(e.detail);
  grove::trace::stop();
  const std::vector<std::string> expected = {"pool: checkout (a job)", "pool: a queued caller timed out",
                                             "pool: rejected, full (every worker busy, the queue full)",
                                             "pool: checkout (a job)"};
  CHECK(texts == expected);
}

TEST_CASE("a named pool's counts are on the metrics page while it lives") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto started = svc::pool::start_link({.size = 1, .max_waiting = 1, .name = "inventory"});
  REQUIRE(started.has_value());
  svc::pool pool = *started;
  auto on_page = [](const std::string& family) {
    const std::string page = grove::metrics::prometheus_text();
    const std::string key = family + "{pool=\"inventory\"} ";
    const auto at = page.find(key);
    return at == std::string::npos ? -1.0 : std::stod(page.substr(at + key.size()));
  };
  CHECK(on_page("grove_pool_workers") == 1);
  CHECK(on_page("grove_pool_busy") == 0);
  auto running = svc::async([pool, test] { return pool.run(svc::deadline::after(patience), blocking_job(test, 1)); });
  const grove::pid worker = receive_one<job_started>().worker;
  auto queued = svc::async([pool] { return pool.run(svc::deadline::after(patience), [] { return 2; }); });
  REQUIRE(grove_test::wait_until([&] { return on_page("grove_pool_queued") == 1; }));
  CHECK(on_page("grove_pool_busy") == 1);
  CHECK(pool.run(svc::deadline::after(patience), [] { return 3; }).error() == svc::errc::pool_full);
  REQUIRE(grove_test::wait_until([&] { return on_page("grove_pool_rejected_total") == 1; }));
  grove::send(worker, go{});
  CHECK(running.await(patience).value() == 1);
  CHECK(queued.await(patience).value() == 2);
  REQUIRE(grove_test::wait_until([&] { return on_page("grove_pool_served_total") == 2 && on_page("grove_pool_busy") == 0; }));
  CHECK(on_page("grove_pool_timed_out_total") == 0);
  CHECK(on_page("grove_pool_worker_restarts_total") == 0);
  REQUIRE(pool.stop().has_value());
  CHECK(grove_test::wait_until([&] { return on_page("grove_pool_workers") == -1; }));  // gone with it
}

TEST_CASE("a checkout past its deadline returns deadline_exceeded and counts a timeout") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto pool = start_pool(1, 4);
  auto held = pool.checkout(svc::deadline::after(patience));
  REQUIRE(held.has_value());
  auto start = std::chrono::steady_clock::now();
  auto late = pool.checkout(svc::deadline::after(1s));
  CHECK(late.error() == svc::errc::deadline_exceeded);
  CHECK(seconds_since(start) >= 1.0);
  CHECK(seconds_since(start) < 2.0);
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).timed_out == 1; }));
  CHECK(stats_of(pool).queued == 0);  // the expired waiter left the queue
  held->release();
  auto next = pool.checkout(svc::deadline::after(patience));  // the worker came back
  CHECK(next.has_value());
  auto job = pool.run(svc::deadline::after(1s), [] { return 1; });  // the lease holds the only worker
  CHECK(job.error() == svc::errc::deadline_exceeded);
}

TEST_CASE("a job still running at its caller's deadline keeps its worker, and its late result never reaches the caller") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto pool = start_pool(1, 4);
  auto r = svc::async([pool, test] { return pool.run(svc::deadline::after(1s), blocking_job(test, 7)); });
  const grove::pid worker = receive_one<job_started>().worker;
  CHECK(r.await(patience).error() == svc::errc::deadline_exceeded);
  CHECK(stats_of(pool).busy == 1);  // the job runs on: the slot is really busy
  grove::send(worker, go{});
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).completed == 1; }));
  CHECK(stats_of(pool).busy == 0);
  // Now from this process: the late result of a job goes to a dropped alias.
  auto direct = pool.run(svc::deadline::after(1s), blocking_job(test, 8));
  CHECK(direct.error() == svc::errc::deadline_exceeded);
  grove::send(receive_one<job_started>().worker, go{});
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).completed == 2; }));
  CHECK(mailbox_is_empty());
}

TEST_CASE("separate pools isolate a slow dependency from a fast one") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto slow = start_pool(2, 2);
  auto fast = start_pool(2, 2);
  // The slow dependency hangs: its workers and its queue fill up.
  std::vector<svc::task<int>> stuck;
  for (int i = 0; i < 4; ++i)
    stuck.push_back(svc::async([slow, test, i] { return slow.run(svc::deadline::after(patience), blocking_job(test, i)); }));
  std::vector<grove::pid> workers{receive_one<job_started>().worker, receive_one<job_started>().worker};
  REQUIRE(grove_test::wait_until([&] { return stats_of(slow).queued == 2; }));
  // The slow pool refuses more at once; the fast pool serves as before.
  CHECK(slow.run(svc::deadline::after(patience), [] { return 0; }).error() == svc::errc::pool_full);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) CHECK(fast.run(svc::deadline::after(patience), [i] { return i; }).value() == i);
  CHECK(seconds_since(start) < 10.0);
  CHECK(stats_of(fast).rejected == 0);
  for (int i = 0; i < 4; ++i) {
    if (i >= 2) workers.push_back(receive_one<job_started>().worker);
    grove::send(workers[static_cast<std::size_t>(i)], go{});
  }
  for (auto& t : stuck) CHECK(t.await(patience).has_value());
}

TEST_CASE("a job that throws returns the exception and its worker goes on") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto pool = start_pool(1, 1);
  auto w1 = pool.run(svc::deadline::after(patience), [] { return grove::self(); }).value();
  auto r = pool.run(svc::deadline::after(patience), []() -> int { throw std::out_of_range("no such row"); });
  CHECK(r.error() == svc::errc::exception);
  CHECK(r.failure().reason.text() == "no such row");
  auto w2 = pool.run(svc::deadline::after(patience), [] { return grove::self(); }).value();
  CHECK(w1 == w2);
  CHECK(stats_of(pool).worker_restarts == 0);
}

TEST_CASE("a worker that dies during a job is replaced and its caller gets the exit reason") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto pool = start_pool(1, 1);
  auto w1 = pool.run(svc::deadline::after(patience), [] { return grove::self(); }).value();
  auto r = pool.run(svc::deadline::after(patience), []() -> int { grove::exit(grove::exit_reason("connection reset")); });
  CHECK(r.error() == svc::errc::exited);
  CHECK(r.failure().reason == grove::exit_reason("connection reset"));
  auto w2 = pool.run(svc::deadline::after(patience), [] { return grove::self(); }).value();
  CHECK(w1 != w2);
  CHECK(!grove::is_alive(w1));
  CHECK(stats_of(pool).worker_restarts == 1);
  CHECK(mailbox_is_empty());
}

TEST_CASE("a lease returns its worker when released, and when its holder dies") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto pool = start_pool(1, 2);
  {
    auto l = pool.checkout(svc::deadline::after(patience));
    REQUIRE(l.has_value());
    CHECK(l->is_held());
    CHECK(grove::is_alive(l->worker()));
    CHECK(stats_of(pool).busy == 1);
  }
  CHECK(pool.checkout(svc::deadline::after(patience)).has_value());  // returned by the destructor
  // A lease belongs to the process that checked it out: when that process dies, the pool's monitor
  // takes the worker back, even though the lease object itself was handed on (here, to the test).
  auto holder = grove::spawn_monitor([pool, test] {
    auto l = pool.checkout(svc::deadline::after(patience));
    grove::send(test, std::move(l));
    grove::receive([](go) {});
  });
  auto handed_on = receive_one<svc::outcome<svc::lease>>();
  REQUIRE(handed_on.has_value());
  CHECK(stats_of(pool).busy == 1);
  grove::exit(holder.pid, grove::exit_reason::kill());
  wait_down(holder.monitor);
  REQUIRE(grove_test::wait_until([&] { return stats_of(pool).busy == 0; }));
  auto again = pool.checkout(svc::deadline::after(patience));
  CHECK(again.has_value());
  handed_on->release();  // a stale ticket: ignored by the pool
  CHECK(stats_of(pool).busy == 1);
}

TEST_CASE("a pool stops its workers when its parent exits") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  const grove::pid test = me.pid();
  auto parent = grove::spawn_monitor([test] {
    auto p = svc::pool::start_link({.size = 3, .max_waiting = 0}).value();
    grove::send(test, p.pid());
    grove::receive([](go) {});
  });
  const grove::pid pool_pid = receive_one<grove::pid>();
  svc::pool pool(pool_pid);
  auto l = pool.checkout(svc::deadline::after(patience));
  REQUIRE(l.has_value());
  const grove::pid worker = l->worker();
  l->release();
  auto watcher = grove::monitor(pool_pid);
  grove::send(parent.pid, go{});
  CHECK(wait_down(parent.monitor).is_normal());
  CHECK(wait_down(watcher).is_normal());  // a trapping pool follows its parent's exit, even normal
  CHECK(grove_test::wait_until([&] { return !grove::is_alive(worker); }));
}

TEST_CASE("a pool never runs more jobs at once than it has workers, under many callers") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  struct gauge {
    std::atomic<int> now{0};
    std::atomic<int> peak{0};
  };
  auto g = std::make_shared<gauge>();
  auto pool = start_pool(4, 1000);
  const int callers = 20;
  const int jobs_each = 20 * static_cast<int>(grove_test::stress_scale());
  std::vector<svc::task<int>> tasks;
  for (int c = 0; c < callers; ++c) {
    tasks.push_back(svc::async([pool, g, jobs_each] {
      int ok = 0;
      for (int j = 0; j < jobs_each; ++j) {
        auto r = pool.run(svc::deadline::after(patience), [g] {
          int now = g->now.fetch_add(1) + 1;
          int peak = g->peak.load();
          while (now > peak && !g->peak.compare_exchange_weak(peak, now)) {
          }
          grove::yield();
          g->now.fetch_sub(1);
          return 1;
        });
        ok += r.has_value() ? 1 : 0;
      }
      return ok;
    }));
  }
  int total = 0;
  for (auto& t : tasks) total += t.await(patience * 3).value();
  CHECK(total == callers * jobs_each);
  CHECK(g->peak.load() <= 4);
  auto s = stats_of(pool);
  CHECK(s.served == static_cast<std::uint64_t>(callers * jobs_each));
  CHECK(s.rejected == 0);
}
