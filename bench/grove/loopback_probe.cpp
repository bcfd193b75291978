// bench/grove/loopback_probe.cpp: the floor of a round trip over loopback TCP on this machine,
// without any runtime: two processes (fork) bounce a 20-byte message over one connection
// (TCP_NODELAY), in three ways of waiting for the answer:
//   spin:  recv(MSG_DONTWAIT) in a loop;
//   epoll: epoll_wait with no timeout in a loop (edge-triggered), then recv (what a spinning Grove
//          worker does: runtime/src/parking.cpp);
//   block: a blocking recv (the kernel puts the thread to sleep and wakes it).
//
//   build/release/bench/grove/loopback_probe [round_trips=50000]
//
// bench/RESULTS.md ("Distribution") compares dist_send's round trips with these floors.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

enum class waiting { spin, epoll, block };
constexpr std::size_t message_bytes = 20;

bool read_message(int fd, int ep, waiting how, char* buf) {
  for (;;) {
    if (how == waiting::epoll) {
      epoll_event e;
      while (::epoll_wait(ep, &e, 1, 0) == 0) {
      }
    }
    const ssize_t r = ::recv(fd, buf, message_bytes, how == waiting::block ? 0 : MSG_DONTWAIT);
    if (r > 0) return true;
    if (r == 0) return false;
  }
}

int watch(int fd) {
  const int ep = ::epoll_create1(0);
  epoll_event e{};
  e.events = EPOLLIN | EPOLLET;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  return ep;
}

double round_trips_per_second(waiting how, long n) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::perror("loopback_probe: listen");
    std::exit(1);
  }
  const int one = 1;
  if (::fork() == 0) {  // the echo
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::_Exit(1);
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int ep = watch(c);
    char buf[message_bytes];
    while (read_message(c, ep, how, buf)) (void)!::send(c, buf, message_bytes, 0);
    std::_Exit(0);
  }
  const int s = ::accept(listener, nullptr, nullptr);
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const int ep = watch(s);
  char buf[message_bytes] = {};
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    (void)!::send(s, buf, message_bytes, 0);
    read_message(s, ep, how, buf);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(s);
  ::close(ep);
  ::close(listener);
  ::wait(nullptr);
  return static_cast<double>(n) / secs;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 50'000;
  const struct {
    waiting how;
    const char* name;
  } ways[] = {{waiting::spin, "spin on recv"}, {waiting::epoll, "spin on epoll_wait"}, {waiting::block, "blocking recv"}};
  for (int round = 0; round < 2; ++round)
    for (const auto& w : ways) {
      const double r = round_trips_per_second(w.how, n);
      std::printf("%-20s %8.0f round trips/s (%.1f us)\n", w.name, r, 1e6 / r);
    }
  return 0;
}
