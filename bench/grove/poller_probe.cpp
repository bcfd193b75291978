// poller_probe: what epoll costs on this machine, for the poller's design (runtime/src/poller.hpp):
// one epoll instance shared by all workers, or one per worker.
//
//   build/release/bench/grove/poller_probe [pairs=1000] [threads=2]
//   (by hand: g++ -std=c++20 -O2 -DPOLLER_PROBE_URING bench/grove/poller_probe.cpp -o /tmp/pp -pthread -luring)
//
// 1. reap: epoll_wait with timeout 0 and nothing ready, per call: what a busy worker pays to look at
//    the poller at a scheduling point.
// 2. wake: a thread blocked in epoll_wait woken by an eventfd write, then answering through another
//    eventfd: the round trip, per wake (what unparking a worker that sleeps in the poller costs).
// 3. bounce: `pairs` socketpairs each bouncing one byte back and forth, for 2 s, handled by `threads`
//    threads: (a) all threads waiting in one shared epoll (edge-triggered, as Go's netpoller),
//    (b) one epoll per thread, each with its share of the pairs. Readiness events handled per second.
//    (c) where liburing is installed (liburing-dev): the same bounce by completions, one io_uring
//    per thread, a one-byte recv outstanding on every fd and a send queued when it completes, a
//    submit-and-wait per batch; and the completion ring's look that finds nothing (io_uring_peek_cqe),
//    the io_uring counterpart of (1).
#ifdef POLLER_PROBE_URING  // bench/CMakeLists.txt defines it where it finds liburing
#include <liburing.h>
#endif
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

void reap_cost() {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event e{};
  e.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e);
  epoll_event out[64];
  constexpr int n = 1'000'000;
  auto t0 = clk::now();
  for (int i = 0; i < n; ++i) (void)epoll_wait(ep, out, 64, 0);
  std::printf("reap: epoll_wait(timeout 0), nothing ready: %.0f ns per call\n", seconds_since(t0) * 1e9 / n);
  close(ev);
  close(ep);
}

void wake_cost() {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int there = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), back = eventfd(0, EFD_CLOEXEC);
  epoll_event e{};
  e.events = EPOLLIN;
  epoll_ctl(ep, EPOLL_CTL_ADD, there, &e);
  constexpr int n = 100'000;
  std::thread sleeper([&] {
    epoll_event out[8];
    std::uint64_t v;
    for (int i = 0; i < n; ++i) {
      while (epoll_wait(ep, out, 8, -1) < 1) {
      }
      (void)!read(there, &v, sizeof v);
      v = 1;
      (void)!write(back, &v, sizeof v);
    }
  });
  auto t0 = clk::now();
  std::uint64_t v = 1;
  for (int i = 0; i < n; ++i) {
    (void)!write(there, &v, sizeof v);
    (void)!read(back, &v, sizeof v);
    v = 1;
  }
  std::printf("wake: eventfd into a thread blocked in epoll_wait, and back: %.2f us per round trip\n", seconds_since(t0) * 1e6 / n);
  sleeper.join();
  close(there);
  close(back);
  close(ep);
}

// Handles readiness on `fd`: reads the byte and writes it back, so the other end becomes readable.
void bounce(int fd) {
  char c;
  if (read(fd, &c, 1) == 1) (void)!write(fd, &c, 1);
}

// `pairs` connected non-blocking Unix socket pairs: fds[2i] and fds[2i + 1] are the two ends of pair i.
std::vector<int> socket_pairs(int pairs) {
  std::vector<int> fds;
  for (int i = 0; i < pairs; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) std::exit(1);
    fds.push_back(sv[0]);
    fds.push_back(sv[1]);
  }
  return fds;
}

double run_bounce(int pairs, int threads, bool shared) {
  std::vector<int> fds = socket_pairs(pairs);
  std::vector<int> eps(shared ? 1 : threads);
  for (int& ep : eps) ep = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < pairs; ++i) {
    int ep = eps[shared ? 0 : i % threads];
    for (int k = 0; k < 2; ++k) {
      epoll_event e{};
      e.events = EPOLLIN | EPOLLET;
      e.data.fd = fds[2 * i + k];
      epoll_ctl(ep, EPOLL_CTL_ADD, fds[2 * i + k], &e);
    }
    char c = 'x';
    (void)!write(fds[2 * i], &c, 1);  // the token starts at one end
  }
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> handled{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      int ep = eps[shared ? 0 : t];
      epoll_event out[64];
      std::uint64_t mine = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        int n = epoll_wait(ep, out, 64, 10);
        for (int i = 0; i < n; ++i) bounce(out[i].data.fd);
        mine += static_cast<std::uint64_t>(std::max(n, 0));
      }
      handled.fetch_add(mine);
    });
  }
  auto t0 = clk::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  for (auto& t : ts) t.join();
  const double secs = seconds_since(t0);
  for (int fd : fds) close(fd);
  for (int ep : eps) close(ep);
  return static_cast<double>(handled.load()) / secs;
}

#ifdef POLLER_PROBE_URING
void uring_reap_cost() {
  io_uring ring;
  if (io_uring_queue_init(64, &ring, 0) != 0) return;
  constexpr int n = 10'000'000;
  io_uring_cqe* cqe = nullptr;
  int found = 0;
  auto t0 = clk::now();
  for (int i = 0; i < n; ++i) found += io_uring_peek_cqe(&ring, &cqe) == 0;
  std::printf("reap: io_uring_peek_cqe, nothing ready: %.1f ns per call (%d found)\n", seconds_since(t0) * 1e9 / n, found);
  io_uring_queue_exit(&ring);
}

// (c): each thread owns the pairs i with i % threads == t and a ring for them. user_data is
// 2 * fd index + (0 for a recv, 1 for a send).
double run_bounce_uring(int pairs, int threads) {
  std::vector<int> fds = socket_pairs(pairs);
  std::vector<char> byte(fds.size(), 'x');
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> handled{0};
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      io_uring ring;
      if (io_uring_queue_init(4096, &ring, 0) != 0) std::exit(1);
      auto sqe = [&] {
        io_uring_sqe* e = io_uring_get_sqe(&ring);
        while (!e) {
          io_uring_submit(&ring);
          e = io_uring_get_sqe(&ring);
        }
        return e;
      };
      auto queue_recv = [&](std::size_t i) {
        io_uring_sqe* e = sqe();
        io_uring_prep_recv(e, fds[i], &byte[i], 1, 0);
        io_uring_sqe_set_data64(e, 2 * i);
      };
      for (int p = t; p < pairs; p += threads) {
        queue_recv(2 * static_cast<std::size_t>(p));
        queue_recv(2 * static_cast<std::size_t>(p) + 1);
      }
      io_uring_submit(&ring);
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      if (t == 0)
        for (int p = 0; p < pairs; ++p) (void)!write(fds[2 * static_cast<std::size_t>(p)], "x", 1);  // the tokens start
      std::uint64_t mine = 0;
      __kernel_timespec wait{.tv_sec = 0, .tv_nsec = 10'000'000};
      while (!stop.load(std::memory_order_relaxed)) {
        io_uring_cqe* cqe = nullptr;
        (void)io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &wait, nullptr);
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
          ++seen;
          const std::uint64_t d = io_uring_cqe_get_data64(cqe);
          if ((d & 1) == 0 && cqe->res == 1) {
            const std::size_t i = d / 2;
            io_uring_sqe* e = sqe();
            io_uring_prep_send(e, fds[i], &byte[i], 1, 0);
            io_uring_sqe_set_data64(e, 2 * i + 1);
            queue_recv(i);
            ++mine;
          }
        }
        io_uring_cq_advance(&ring, seen);
      }
      handled.fetch_add(mine);
      io_uring_queue_exit(&ring);
    });
  }
  while (ready.load() < threads) {
  }
  auto t0 = clk::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  stop = true;
  for (auto& t : ts) t.join();
  const double secs = seconds_since(t0);
  for (int fd : fds) close(fd);
  return static_cast<double>(handled.load()) / secs;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  reap_cost();
#ifdef POLLER_PROBE_URING
  uring_reap_cost();
#endif
  wake_cost();
  for (int round = 0; round < 3; ++round) {
    const double shared = run_bounce(pairs, threads, true);
    const double per_thread = run_bounce(pairs, threads, false);
    std::printf("bounce, %d pairs, %d threads: one shared epoll %.0f events/s, one per thread %.0f events/s (%.2fx)\n",
                pairs, threads, shared, per_thread, per_thread / shared);
#ifdef POLLER_PROBE_URING
    const double uring = run_bounce_uring(pairs, threads);
    std::printf("bounce, %d pairs, %d threads: one io_uring per thread %.0f completions/s (%.2fx the epoll per thread)\n",
                pairs, threads, uring, uring / per_thread);
#endif
  }
}
