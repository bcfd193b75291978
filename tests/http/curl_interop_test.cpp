// grove::http::server driven by a real client: curl (Debian's, installed by tools/setup), as a
// user's shell or a load balancer's health check would. The raw-socket tests beside this one write
// what the RFC says; this one finds what a real peer does that they did not think of (curl 7.88
// sends `Expect: 100-continue` with uploads over 1 MiB and waited a second for a 100 that never
// came; a refused upload was seen by curl as a reset instead of a 413).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "http/helpers.hpp"

extern char** environ;

using namespace http_test;

namespace {

struct curl_result {
  int exit_code = -1;  // curl's exit status; -1 if it could not be started or was killed
  std::string out;     // what curl wrote to stdout (the response bodies, then -w's output)
  std::string err;     // stderr (with -v: the exchange, "> " sent and "< " received)
};

// A folder of its own for this test binary's files, removed at exit.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    path = std::filesystem::temp_directory_path() / ("grove-curl-tests-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

const std::filesystem::path& scratch() {
  static scratch_dir d;
  return d.path;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path file_of(const std::string& name, const std::string& content) {
  auto p = scratch() / name;
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

// Runs curl with `args` to its end, off the workers (run_blocking: it takes as long as curl does).
// curl's own --max-time bounds it.
curl_result run_curl(std::vector<std::string> args) {
  static std::atomic<int> serial{0};
  const int n = serial++;
  const auto out_path = scratch() / ("out-" + std::to_string(n));
  const auto err_path = scratch() / ("err-" + std::to_string(n));
  args.insert(args.begin(), {"curl", "--silent", "--show-error", "--max-time", "20"});
  return grove::run_blocking([&] {
    curl_result r;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t child = -1;
    const int rc = posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      r.err = "curl could not be started (tools/setup installs it): " + std::string(std::strerror(rc));
      return r;
    }
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
  });
}

// Echoes the request: its method, its body's size and the body.
http::response echo(const http::request& req, const svc::deadline&) {
  return http::response{.status = 200, .headers = {}, .body = req.method + " " + std::to_string(req.body.size()) + " " + req.body};
}

http::server start(http::server_options o = {}) {
  auto s = http::server::start_link(std::move(o), echo);
  REQUIRE_MESSAGE(s, "start: " << s.error().message());
  return std::move(*s);
}

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

}  // namespace

TEST_CASE("curl: two requests on one keep-alive connection, and an HTTP/1.0 request") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start();
  auto r = run_curl({url_of(srv, "/a"), url_of(srv, "/b")});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.out == "GET 0 GET 0 ");
  CHECK(srv.stats().connections_accepted == 1);  // curl reused the connection for the second
  CHECK(srv.stats().requests == 2);

  auto old = run_curl({"--http1.0", "--verbose", url_of(srv, "/c")});
  REQUIRE_MESSAGE(old.exit_code == 0, old.err);
  CHECK(old.out == "GET 0 ");
  CHECK(old.err.find("< HTTP/1.1 200") != std::string::npos);
  CHECK(srv.stats().connections_accepted == 2);
  CHECK(srv.stop(5s));
}

TEST_CASE("curl: an upload over 1 MiB (curl sends Expect: 100-continue) gets its 100 and is echoed whole") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.max_body_bytes = 4 * 1024 * 1024});
  const std::string body = pattern(3 * 1024 * 1024 + 5);
  const auto file = file_of("upload", body);
  // --expect100-timeout 60: were the 100 not sent, curl would wait past its --max-time and fail,
  // where with its default (1 s) it would send the body anyway and hide the fault.
  auto r = run_curl({"--verbose", "--expect100-timeout", "60", "--data-binary", "@" + file.string(), url_of(srv, "/up")});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("> Expect: 100-continue") != std::string::npos);
  CHECK(r.err.find("< HTTP/1.1 100 Continue") != std::string::npos);
  CHECK(r.out == "POST " + std::to_string(body.size()) + " " + body);
  CHECK(srv.stop(5s));
}

TEST_CASE("curl: a chunked upload is echoed whole") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.max_body_bytes = 4 * 1024 * 1024});
  const std::string body = pattern(300 * 1024 + 7);
  const auto file = file_of("chunked", body);
  auto r = run_curl({"--verbose", "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + file.string(), url_of(srv, "/up")});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(r.err.find("> Transfer-Encoding: chunked") != std::string::npos);
  CHECK(r.out == "POST " + std::to_string(body.size()) + " " + body);
  CHECK(srv.stop(5s));
}

TEST_CASE("curl: an upload over max_body_bytes gets 413, with Expect (body never sent) and without (body sent whole)") {
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  auto srv = start({.max_body_bytes = 64 * 1024});
  const auto file = file_of("too-large", pattern(8 * 1024 * 1024));

  // With Expect: the 413 comes instead of the 100, and curl does not send the body.
  auto with = run_curl({"--verbose", "--expect100-timeout", "60", "--output", "/dev/null", "--write-out", "%{http_code}",
                        "--data-binary", "@" + file.string(), url_of(srv, "/up")});
  REQUIRE_MESSAGE(with.exit_code == 0, with.err);
  CHECK(with.out == "413");
  CHECK(with.err.find("< HTTP/1.1 100") == std::string::npos);

  // Without: curl writes the body while the server has already answered (curl reads as it writes,
  // so it sees the 413 even where a close would reset; client_test has the client that does not).
  auto without = run_curl({"-H", "Expect:", "--output", "/dev/null", "--write-out", "%{http_code}", "--data-binary",
                           "@" + file.string(), url_of(srv, "/up")});
  CHECK_MESSAGE(without.exit_code == 0, without.err);
  CHECK(without.out == "413");
  CHECK(srv.stats().too_large == 2);

  // And the server goes on serving.
  auto after = run_curl({url_of(srv, "/after")});
  REQUIRE_MESSAGE(after.exit_code == 0, after.err);
  CHECK(after.out == "GET 0 ");
  CHECK(srv.stop(5s));
}
