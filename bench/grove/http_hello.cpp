// http_hello: a keep-alive grove::http server answering GET / with "hello, world\n", for load from
// wrk (tools/bench http_hello drives it through bench/harness/load.py, as it does Go's net/http and
// h2o; bench/README.md). Runs until SIGINT or SIGTERM.
//
//   build/release/bench/grove/http_hello --port P [--threads T]
//
// Prints "listening 127.0.0.1:P" once it accepts connections (port 0: a free one).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <grove/grove.hpp>
#include <grove/http/server.hpp>

int main(int argc, char** argv) {
  long port = 8080, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) port = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--threads") == 0) threads = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: http_hello [--port P] [--threads T]\n");
      return 2;
    }
  }
  // A program, not the library: it may take SIGINT/SIGTERM for itself. Blocked before the workers
  // start, so they inherit the mask and main alone waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  grove::runtime rt({.workers = static_cast<unsigned>(threads)});
  grove::http::server srv;
  {
    grove::scoped_process me;
    auto s = grove::http::server::start(
        {.address = grove::net::address::loopback(static_cast<std::uint16_t>(port)), .backlog = 4096, .max_connections = 1'000'000},
        [](const grove::http::request&, const grove::services::deadline&) {
          return grove::http::response{.status = 200, .headers = {}, .body = "hello, world\n"};
        });
    if (!s) {
      std::fprintf(stderr, "http_hello: %s\n", s.error().message().c_str());
      return 1;
    }
    srv = *s;
  }
  std::printf("listening 127.0.0.1:%u\n", static_cast<unsigned>(srv.local_address().port()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  {
    grove::scoped_process me;
    srv.stop(std::chrono::seconds(1));
  }
  return 0;
}
