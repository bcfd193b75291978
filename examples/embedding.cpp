// embedding: Grove inside an application that has its own threads. Four std::threads each become a
// process for a while (grove::scoped_process), send requests to a pool of eight Grove processes and
// wait for each reply with a timeout, as a thread would call a service. Replies come back to the
// thread's own mailbox; a request that gets no reply in time is counted, not waited for forever.
//
// Expected output:
//   thread 0: 500 requests, 500 replies, 0 timeouts
//   thread 1: 500 requests, 500 replies, 0 timeouts
//   thread 2: 500 requests, 500 replies, 0 timeouts
//   thread 3: 500 requests, 500 replies, 0 timeouts
//   the pool of 8 served 2000 requests; every answer was right: yes
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <grove/grove.hpp>

using namespace std::chrono_literals;

namespace {

struct square_request {
  grove::pid reply_to;
  std::uint64_t id;
  std::uint64_t x;
};
struct square_reply {
  std::uint64_t id;
  std::uint64_t square;
};
struct stop {};

constexpr int thread_count = 4;
constexpr int pool_size = 8;
constexpr int requests_per_thread = 500;

struct thread_summary {
  int replies = 0;
  int timeouts = 0;
  bool all_right = true;
};

}  // namespace

int main() {
  grove::runtime rt;
  std::atomic<int> served{0};

  // The pool: each member squares numbers until told to stop.
  std::vector<grove::pid> pool;
  for (int i = 0; i < pool_size; ++i) {
    pool.push_back(grove::spawn([&served] {
      for (;;) {
        bool more = grove::receive(
            [&](const square_request& r) {
              served.fetch_add(1, std::memory_order_relaxed);  // counted before the reply: the threads' join orders the read
              grove::send(r.reply_to, square_reply{r.id, r.x * r.x});
              return true;
            },
            [](stop) { return false; });
        if (!more) return;
      }
    }));
  }

  // The application's threads: each is a process while its scoped_process lives.
  std::array<thread_summary, thread_count> summaries;
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([t, &pool, &summaries] {
      grove::scoped_process me;
      thread_summary& s = summaries[t];
      for (int k = 0; k < requests_per_thread; ++k) {
        const std::uint64_t id = static_cast<std::uint64_t>(t) * requests_per_thread + k;
        grove::send(pool[id % pool.size()], square_request{me.pid(), id, id + 1});
        // Wait for this request's reply (a guard on its id), at most a second.
        const bool replied = grove::receive(
            grove::when([id](const square_reply& r) { return r.id == id; },
                        [&](const square_reply& r) {
                          s.all_right = s.all_right && r.square == (id + 1) * (id + 1);
                          return true;
                        }),
            grove::after(1s, [] { return false; }));
        if (replied) {
          ++s.replies;
        } else {
          ++s.timeouts;
        }
      }
    });
  }
  for (auto& th : threads) th.join();

  bool all_right = true;
  for (int t = 0; t < thread_count; ++t) {
    const thread_summary& s = summaries[t];
    fmt::print("thread {}: {} requests, {} replies, {} timeouts\n", t, requests_per_thread, s.replies, s.timeouts);
    all_right = all_right && s.all_right && s.replies == requests_per_thread;
  }
  fmt::print("the pool of {} served {} requests; every answer was right: {}\n", pool_size, served.load(),
             all_right ? "yes" : "no");
  for (grove::pid p : pool) grove::send(p, stop{});
  rt.stop();
  return all_right ? 0 : 1;
}
