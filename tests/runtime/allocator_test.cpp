// Grove leaves its host's allocator alone (runtime/src/memory.hpp): malloc and operator new stay the
// program's own, and running out of memory is a std::bad_alloc the program can catch, in a process
// or on any thread, while the runtime goes on.
#include "support/fixture.hpp"

#include <dlfcn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using grove_test::patience;

namespace {

struct go {};

// Where the program's malloc comes from.
std::string library_of(void* symbol) {
  Dl_info info{};
  if (::dladdr(symbol, &info) == 0 || !info.dli_fname) return "?";
  return info.dli_fname;
}

char* volatile sink = nullptr;  // the allocations escape: the compiler may not elide them

// Asks for 16 TiB: more than any machine here has, and more than overcommit allows.
bool huge_new_throws() {
  volatile std::size_t bytes = std::size_t{16} << 40;
  try {
    sink = static_cast<char*>(::operator new(bytes));
    ::operator delete(sink);
    return false;
  } catch (const std::bad_alloc&) {
  }
  try {
    sink = new char[bytes];
    delete[] sink;
    return false;
  } catch (const std::bad_alloc&) {
    return true;
  }
}

}  // namespace

TEST_CASE("linking Grove leaves malloc and free to the C library") {
  void* malloc_fn = reinterpret_cast<void*>(&::malloc);
  void* free_fn = reinterpret_cast<void*>(&::free);
  const std::string m = library_of(malloc_fn), f = library_of(free_fn);
  CAPTURE(m);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // the sanitizers bring their own malloc
  CHECK(m.find("libc.so") != std::string::npos);
  CHECK(f.find("libc.so") != std::string::npos);
#endif
  CHECK(m.find("mimalloc") == std::string::npos);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)  // their operator new reports and exits instead of throwing
TEST_CASE("a 16 TiB new fails with std::bad_alloc, in a process and on a foreign thread") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  CHECK(huge_new_throws());
  const grove::pid self = me.pid();
  grove::spawn([self] { grove::send(self, huge_new_throws()); });
  CHECK(grove::receive([](bool threw) { return threw; }, grove::after(patience, [] { return false; })));
}

// And their shadow memory needs terabytes of address space.
TEST_CASE("under an address-space limit, running out of memory in a process is a catchable std::bad_alloc") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child: limit the address space to what it has plus 1 GiB, start a runtime (its stacks and
    // table are reserved now), then exhaust the rest from inside a process.
    rlimit now{};
    ::getrlimit(RLIMIT_AS, &now);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    grove::runtime rt({.workers = 2});
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{1} << 30);
    rlimit r{limit, now.rlim_max};
    if (::setrlimit(RLIMIT_AS, &r) != 0) ::_exit(3);
    grove::scoped_process me;
    const grove::pid self = me.pid();
    grove::spawn([self] {
      std::vector<std::unique_ptr<char[]>> hog;
      bool caught = false;
      try {
        for (;;) {
          hog.emplace_back(new char[64 << 20]);
          std::memset(hog.back().get(), 1, 4096);
        }
      } catch (const std::bad_alloc&) {
        caught = true;
      }
      hog.clear();
      grove::send(self, caught);
    });
    const bool caught = grove::receive([](bool c) { return c; }, grove::after(60s, [] { return false; }));
    if (!caught) ::_exit(4);
    // The runtime goes on: a spawn and a message round trip after the failure.
    grove::spawn([self] { grove::send(self, go{}); });
    if (!grove::receive([](go) { return true; }, grove::after(60s, [] { return false; }))) ::_exit(5);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
#endif
