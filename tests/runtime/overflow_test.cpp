// Stack overflow: a process that runs off its execution stack, by deep recursion or by one frame
// larger than its stack, ends in Grove's named report and the program aborts; it never writes over
// the stack below it (another process's). (Not under the sanitizers, which report the fault themselves.)
#include "support/fixture.hpp"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

namespace grove_test {
int big_frame_unprotected(std::size_t touched);  // big_frame_unprotected.cpp, built without stack-clash probes
}

namespace {

struct go {};

#pragma GCC diagnostic ignored "-Winfinite-recursion"  // the point of the test
__attribute__((noinline)) int recurse(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return recurse(depth + 1) + frame[0];  // not a tail call: every level keeps its frame
}

// The same frame as big_frame_unprotected, but built like this file: with stack-clash probes.
__attribute__((noinline)) int big_frame(std::size_t touched) {
  volatile char buffer[300 * 1024];
  for (std::size_t i = 0; i < touched; ++i) buffer[i] = static_cast<char>(i);
  return buffer[touched / 2];
}

struct outcome {
  int status = 0;
  std::string err;
  std::string culprit;
};

// Runs `overflow` in a process of a fresh runtime in a child program (256 KiB stacks, one worker, a
// neighbour process parked on the slot below), and collects how the child ended and what it wrote.
outcome run_in_child(std::size_t stack_bytes, std::function<void()> overflow) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // not doctest's crash handler: the child is meant to abort
    ::dup2(::open("/dev/null", O_WRONLY), 1);
    ::dup2(out[1], 2);
    ::close(out[0]);
    grove::runtime rt({.workers = 1, .stack_bytes = stack_bytes});
    grove::scoped_process me;
    const grove::pid self = me.pid();
    // A neighbour that parks with a canary on its stack; if it ever wakes to a corrupted canary, it
    // says so (it never should: the overflow aborts first).
    grove::pid neighbour = grove::spawn([self] {
      volatile char canary[4096];
      std::memset(const_cast<char*>(canary), 0x5a, sizeof canary);
      grove::send(self, go{});
      grove::receive([](go) {});
      for (char c : canary)
        if (c != 0x5a) ::_exit(42);
    });
    grove::receive([](go) {});
    grove::pid culprit = grove::spawn([overflow] {
      grove::receive([](go) {});  // starts once its pid is written out
      overflow();
    });
    std::string line = fmt::format("culprit {}\n", culprit);
    (void)!::write(2, line.data(), line.size());
    grove::send(culprit, go{});
    grove::receive([](int) {});
    (void)neighbour;
    ::_exit(0);  // not reached
  }
  ::close(out[1]);
  outcome o;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) o.err.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  ::waitpid(child, &o.status, 0);
  auto at = o.err.find("culprit ");
  if (at != std::string::npos) o.culprit = o.err.substr(at + 8, o.err.find('\n', at) - at - 8);
  return o;
}

void check_named_overflow(const outcome& o) {
  CAPTURE(o.err);
  CHECK(WIFSIGNALED(o.status));
  CHECK(WTERMSIG(o.status) == SIGABRT);
  REQUIRE_FALSE(o.culprit.empty());
  CHECK(o.err.find("grove: process " + o.culprit + " overflowed its execution stack of ") != std::string::npos);
}

}  // namespace

TEST_CASE("a process that overflows its stack by deep recursion is named on stderr, then the program aborts") {
  check_named_overflow(run_in_child(64 * 1024, [] { recurse(0); }));
}

TEST_CASE("a frame larger than the whole stack that writes only its first 40 KB ends in the named report") {
  // 300 KB on a 256 KiB stack: its first bytes lie 44 KB below the stack, past a one-page guard.
  // Stack-clash probes touch every page on the way down, so the first probe below the stack faults.
  check_named_overflow(run_in_child(256 * 1024, [] { big_frame(40 * 1024); }));
}

TEST_CASE("the same frame in code built without stack-clash probes still faults in the 64 KiB guard") {
  check_named_overflow(run_in_child(256 * 1024, [] { grove_test::big_frame_unprotected(40 * 1024); }));
}

#endif
