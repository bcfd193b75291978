// Stack overflow: a process that runs off its execution stack is named before the program aborts.
// (Not under the sanitizers, which report the fault themselves.)
#include "support/fixture.hpp"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace {

#pragma GCC diagnostic ignored "-Winfinite-recursion"  // the point of the test
__attribute__((noinline)) int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return recurse(depth + 1) + frame[0];  // not a tail call: every level keeps its frame
}

}  // namespace

TEST_CASE("a process that overflows its stack is named on stderr, then the program aborts") {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // not doctest's crash handler: the child is meant to abort
    ::dup2(::open("/dev/null", O_WRONLY), 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    grove::runtime rt({.workers = 1, .stack_bytes = 64 * 1024});
    grove::scoped_process me;
    grove::pid culprit = grove::spawn([] {
      grove::receive([](int) {});  // starts once its pid is written out
      recurse(0);
    });
    std::string line = fmt::format("culprit {}\n", culprit);
    (void)!::write(2, line.data(), line.size());
    grove::send(culprit, 1);
    grove::receive([](int) {});
    ::_exit(0);  // not reached
  }
  ::close(out[1]);
  std::string err;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  auto at = err.find("culprit ");
  REQUIRE(at != std::string::npos);
  std::string culprit = err.substr(at + 8, err.find('\n', at) - at - 8);
  CHECK(err.find("grove: process " + culprit + " overflowed its execution stack") != std::string::npos);
}

#endif
