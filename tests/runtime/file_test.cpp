// grove::file (grove/file.hpp): files read and written from processes on the blocking threads.
// Whole-file and fd calls, the errors users meet (ENOENT, EISDIR, EFBIG, EBADF), partial reads at an
// offset, fds counted and released (a killed owner included), and the point of it all: a file call
// that blocks (a FIFO nobody has opened for writing yet blocks open(2)) holds no worker, so on one
// worker another process's timer still fires; and a kill meanwhile takes effect when the call returns.
#include "support/fixture.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <grove/file.hpp>

using namespace std::chrono_literals;
using grove_test::patience;
namespace fs = std::filesystem;

namespace {

// A fresh directory, removed with everything in it at the end of the test.
struct scratch_dir {
  fs::path path;
  scratch_dir() {
    std::string t = (fs::temp_directory_path() / "grove_file_test.XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct text {
  std::string value;
};
struct code {
  std::error_code ec;
};

}  // namespace

TEST_CASE("read_all and write_all: round trip, append, sync, and the errors users meet") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  scratch_dir dir;
  const grove::pid self = me.pid();
  grove::spawn([&, self] {
    const fs::path f = dir.path / "state";
    std::string out;
    auto check = [&](bool ok, const char* what) { out += ok ? "" : std::string(what) + ";"; };
    check(!grove::file::write_all(f, "first\n", {.sync = true}), "write");
    check(!grove::file::write_all(f, "second\n", {.append = true}), "append");
    auto r = grove::file::read_all(f);
    check(r && *r == "first\nsecond\n", "read back");
    check(!grove::file::write_all(f, "x"), "truncate");
    r = grove::file::read_all(f);
    check(r && *r == "x", "truncated");
    r = grove::file::read_all(dir.path / "missing");
    check(!r && r.error() == std::errc::no_such_file_or_directory, "ENOENT");
    r = grove::file::read_all(dir.path);
    check(!r && r.error() == std::errc::is_a_directory, "EISDIR");
    check(!grove::file::write_all(f, std::string(100'000, 'y')), "big");
    r = grove::file::read_all(f, 99'999);
    check(!r && r.error() == std::errc::file_too_large, "EFBIG");
    r = grove::file::read_all(f, 100'000);
    check(r && r->size() == 100'000 && r->find_first_not_of('y') == std::string::npos, "at the limit");
    r = grove::file::read_all("/proc/self/status");  // st_size 0: read to the end all the same
    check(r && r->find("VmRSS") != std::string::npos, "/proc");
    auto ec = grove::file::write_all(dir.path / "no" / "such" / "dir", "z");
    check(ec == std::errc::no_such_file_or_directory, "write ENOENT");
    grove::send(self, text{out});
  });
  CHECK(grove::receive([](text t) { return t.value; }, grove::after(patience, [] { return std::string("no answer"); })) == "");
}

TEST_CASE("a file's reads, writes, offsets, size and close; a closed file says EBADF; fds are counted") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  scratch_dir dir;
  const std::size_t fds_before = grove::resources_in_use().fds;
  const grove::pid self = me.pid();
  grove::spawn([&, self] {
    std::string out;
    auto check = [&](bool ok, const char* what) { out += ok ? "" : std::string(what) + ";"; };
    const fs::path p = dir.path / "data";
    {
      auto w = grove::file::open(p, grove::file::write_truncate);
      check(w.has_value(), "open for writing");
      if (!w) return grove::send(self, text{out});
      check(grove::resources_in_use().fds == fds_before + 1, "counted");
      check(!w->write("hello, "), "write");
      check(!w->write("world"), "write 2");
      check(!w->write_at(0, "J"), "write_at");
      check(!w->sync_data() && !w->sync(), "sync");
      auto n = w->size();
      check(n && *n == 12, "size");
      check(!w->close(), "close");
      check(grove::resources_in_use().fds == fds_before, "released by close");
      check(w->write("more") == std::errc::bad_file_descriptor, "EBADF after close");
      check(w->close() == std::errc::bad_file_descriptor, "close twice");
    }
    auto r = grove::file::open(p);
    check(r.has_value(), "open for reading");
    if (!r) return grove::send(self, text{out});
    char buf[64];
    auto n = r->read_at(7, buf, 3);
    check(n && *n == 3 && std::string(buf, 3) == "wor", "read_at");
    n = r->read(buf, sizeof buf);  // read_at did not move the position
    check(n && *n == 12 && std::string(buf, 12) == "Jello, world", "read");
    n = r->read(buf, sizeof buf);
    check(n && *n == 0, "end of file");
    n = r->read_at(1'000'000, buf, sizeof buf);
    check(n && *n == 0, "past the end");
    auto a = grove::file::open(p, grove::file::append);
    check(a && !a->write("!"), "append");
    auto all = grove::file::read_all(p);
    check(all && *all == "Jello, world!", "appended");
    auto bad = grove::file::open(dir.path / "missing");
    check(!bad && bad.error() == std::errc::no_such_file_or_directory, "ENOENT");
    grove::file moved = std::move(*r);
    check(!*r && moved, "moved");
    grove::send(self, text{out});
  });
  CHECK(grove::receive([](text t) { return t.value; }, grove::after(patience, [] { return std::string("no answer"); })) == "");
  CHECK(grove_test::wait_until([&] { return grove::resources_in_use().fds == fds_before; }));
}

TEST_CASE("a file call that blocks holds no worker, and a kill meanwhile takes effect when it returns") {
  // One worker: if the blocked open held it, the timer below could never fire.
  grove_test::runtime_fixture rt({.workers = 1});
  grove::scoped_process me;
  scratch_dir dir;
  const fs::path fifo = dir.path / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::size_t fds_before = grove::resources_in_use().fds;
  const grove::pid self = me.pid();
  std::atomic<bool> returned{false};
  const grove::pid reader = grove::spawn([&, self] {
    auto r = grove::file::read_all(fifo);  // open(2) blocks until a writer opens the FIFO
    returned = true;
    grove::send(self, text{r ? *r : r.error().message()});
  });
  // The reader is parked in its blocking call (it has not returned); the only worker is free.
  grove::spawn([self] {
    grove::sleep_for(20ms);  // a timer on the only worker
    grove::send(self, code{});
  });
  CHECK(grove::receive([](code) { return true; }, grove::after(patience, [] { return false; })));
  CHECK_FALSE(returned.load());
  int w = -1;
  auto release = [&](const char* bytes) {
    w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // does not block: the reader has it open for reading
    REQUIRE(w >= 0);
    REQUIRE(::write(w, bytes, std::char_traits<char>::length(bytes)) >= 0);
    ::close(w);
  };
  release("through the pipe");
  CHECK(grove::receive([](text t) { return t.value; }, grove::after(patience, [] { return std::string("no answer"); })) ==
        "through the pipe");

  // Killed while blocked: it stays alive until the call returns, then dies killed, fd closed.
  returned = false;
  const grove::pid victim = grove::spawn([&, self] {
    auto f = grove::file::open(fifo);  // blocks
    returned = true;
    grove::send(self, text{"not killed"});
  });
  (void)reader;
  auto m = grove::monitor(victim);
  // In its blocking call: what it publishes says so, and it cannot answer process_info itself.
  REQUIRE(grove_test::wait_until([&] {
    auto s = grove::process_summary_of(victim);
    return s && s->waiting_on == grove::wait_reason::blocking_call;
  }));
  auto info = grove::process_info(victim, 100ms);
  REQUIRE(info);
  CHECK_FALSE(info->answered);
  grove::exit(victim, grove::exit_reason::kill());
  CHECK(grove::receive([](const grove::down&) { return true; }, grove::after(200ms, [] { return false; })) == false);
  CHECK(grove::is_alive(victim));
  release("x");
  auto d = grove::receive([](const grove::down& d) { return d; }, grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.ref == m);
  CHECK(d.reason == grove::exit_reason::killed());  // as Erlang reports a kill
  CHECK_FALSE(returned.load());  // the call returned, but the process ended before its next line
  CHECK(grove_test::wait_until([&] { return grove::resources_in_use().fds == fds_before; }));
}
