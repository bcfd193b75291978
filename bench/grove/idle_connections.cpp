// idle_connections: N (10,000) keep-alive connections to a grove::http server, each idle after one
// request: the server's memory per idle connection. The clients are bare sockets of this program
// (an fd each, no user memory), each connected, asked "GET /" and answered in turn; then
// bytes_per_connection = (VmRSS after - VmRSS before) / N, with the server's own count of open
// connections checked to be N. Raises RLIMIT_NOFILE to 2N + 1,000 (needs root past the hard limit).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <grove/grove.hpp>
#include <grove/http/server.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"n", 10'000}});
  const long long n = f["n"];
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  const rlim_t need = static_cast<rlim_t>(2 * n + 1000);
  if (lim.rlim_cur < need) {
    rlimit raised{need, std::max(need, lim.rlim_max)};
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      std::printf("SKIP {\"workload\":\"idle_connections\",\"impl\":\"grove\",\"reason\":\"RLIMIT_NOFILE below %llu\"}\n",
                  static_cast<unsigned long long>(need));
      return 0;
    }
  }
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"]), .process_limit = 2'000'000});
  grove::http::server srv;
  {
    grove::scoped_process me;
    auto s = grove::http::server::start({.backlog = 4096, .max_connections = 10'000'000}, [](const grove::http::request&,
                                                                                             const grove::services::deadline&) {
      return grove::http::response{.status = 200, .headers = {}, .body = "hello, world\n"};
    });
    if (!s) {
      std::fprintf(stderr, "idle_connections: %s\n", s.error().message().c_str());
      return 1;
    }
    srv = *s;
  }
  const long before = bench::vm_rss_kib();
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(srv.local_address().port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const std::string req = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  std::vector<int> fds;
  fds.reserve(static_cast<std::size_t>(n));
  for (long long i = 0; i < n; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::write(c, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
      std::fprintf(stderr, "idle_connections: connection %lld: %s\n", i, std::strerror(errno));
      return 1;
    }
    std::string in;
    char b[512];
    while (in.find("hello, world\n") == std::string::npos) {
      const ssize_t r = ::read(c, b, sizeof b);
      if (r <= 0) {
        std::fprintf(stderr, "idle_connections: no answer on connection %lld\n", i);
        return 1;
      }
      in.append(b, static_cast<std::size_t>(r));
    }
    fds.push_back(c);
  }
  if (srv.stats().connections_open != static_cast<std::size_t>(n)) {
    std::fprintf(stderr, "idle_connections: the server has %zu connections open, not %lld\n", srv.stats().connections_open, n);
    return 1;
  }
  const long after = bench::vm_rss_kib();
  bench::result("idle_connections", "bytes_per_connection", "B", static_cast<double>(after - before) * 1024.0 / static_cast<double>(n), f);
  for (int c : fds) ::close(c);
  grove::scoped_process me;
  srv.stop(std::chrono::seconds(1));
  return 0;
}
