// grove::dist::start and EPMD: a node that finds no EPMD on its port starts one there (as erl
// does) and registers once it listens; told not to, it says why it cannot start. Each case uses a
// port of its own (free when the case begins), so the host's EPMD on 4369 is never touched.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include <grove/dist/node.hpp>
#include <grove/net.hpp>
#include <grove/scoped_process.hpp>

#include "epmd.hpp"
#include "erlang_node.hpp"

extern char** environ;

using grove_test::patience;
namespace internal = grove::dist::internal;

namespace {

// A loopback port nothing listens on now (asked of the kernel with a plain socket: the tests call
// this before any runtime exists).
std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0;
  ::close(fd);
  REQUIRE(bound);
  return ntohs(a.sin_port);
}

// Stops the EPMD on `port` when the case ends, passed or not (`epmd -port P -kill`, which an EPMD
// obeys once no names are registered with it).
struct epmd_on_port {
  std::uint16_t port;
  ~epmd_on_port() {
    const std::string p = std::to_string(port);
    const char* argv[] = {"epmd", "-port", p.c_str(), "-kill", nullptr};
    ::pid_t child = 0;
    if (::posix_spawnp(&child, "epmd", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0) return;
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
};

}  // namespace

TEST_CASE("a node finding no EPMD on its port starts one there and registers as soon as it listens") {
  const std::uint16_t port = free_port();
  epmd_on_port cleanup{port};
  grove::dist::node_options options;
  options.epmd_port = port;
  dist_test::grove_node node(options);
  CHECK(grove::dist::is_alive());
  // That EPMD, not another, knows the node and the port it listens on.
  const std::string alive = node.name().substr(0, node.name().find('@'));
  auto listening = internal::port_of(grove::net::address::loopback(port), alive, patience);
  REQUIRE_MESSAGE(listening, listening.error().message());
  CHECK(*listening != 0);
}

TEST_CASE("a node told not to start EPMD, finding none, fails to start with the reason and stays a plain runtime") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::dist::node_options options;
  options.name = dist_test::unique_alive("grove") + "@127.0.0.1";
  options.cookie = dist_test::cookie;
  options.listen_address = "127.0.0.1";
  options.epmd_port = free_port();
  options.start_epmd = false;
  bool refused = false;
  try {
    grove::dist::start(options);
  } catch (const std::system_error& e) {
    refused = e.code() == std::errc::connection_refused;
    CHECK(std::string(e.what()).find("registering with EPMD") != std::string::npos);
  }
  CHECK(refused);
  CHECK_FALSE(grove::dist::is_alive());
  CHECK(grove::dist::node_name() == "nonode@nohost");
}
