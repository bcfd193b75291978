// erlang_node.cpp: see erlang_node.hpp.
#include "erlang_node.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include <grove/dist/node.hpp>

extern char** environ;

namespace dist_test {

namespace {

// Runs a command to its end; its exit status (-1 if it could not start).
int run_command(const std::vector<std::string>& argv, const std::string& log_path = {}) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  pid_t child = -1;
  const int rc = posix_spawnp(&child, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    path = std::filesystem::temp_directory_path() / fmt::format("grove-dist-tests-{}", getpid());
    std::filesystem::create_directories(path);
    const int rc = run_command({"erlc", "-o", path.string(), std::string(GROVE_TEST_DIST_DIR) + "/grove_peer.erl"},
                               (path / "erlc.log").string());
    if (rc != 0) std::fprintf(stderr, "erlc grove_peer.erl failed (%d); see %s\n", rc, (path / "erlc.log").c_str());
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

const scratch_dir& scratch() {
  static scratch_dir d;
  return d;
}

std::atomic<int> next_name{0};

}  // namespace

std::string unique_alive(const std::string& prefix) { return fmt::format("{}_{}_{}", prefix, next_name++, getpid()); }

grove::term a(const char* name) { return grove::term(grove::atom(name)); }

grove::term receive_term(const std::function<bool(const grove::term&)>& pred, std::chrono::milliseconds timeout) {
  return grove::receive(grove::when([&](const grove::term& t) { return pred(t); }, [](grove::term t) { return t; }),
                        grove::after(timeout, [] {
                          FAIL("no matching term arrived");
                          return grove::term();
                        }));
}

erlang_node::erlang_node(std::string alive, std::string node_cookie, int ticktime, std::string also) : name_(alive + "@127.0.0.1") {
  const scratch_dir& dir = scratch();
  const std::string log = (dir.path / (alive + ".log")).string();
  std::vector<std::string> argv = {"erl", "-name", name_, "-setcookie", node_cookie, "-noshell", "-noinput",
                                   "-pa", dir.path.string(), "-kernel", "net_ticktime", std::to_string(ticktime),
                                   "-eval", also.empty() ? "grove_peer:start()" : "grove_peer:start(), " + also};
  std::vector<char*> args;
  for (auto& s : argv) args.push_back(s.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const int rc = posix_spawnp(&os_pid_, "erl", &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE_MESSAGE(rc == 0, "could not start erl (tools/setup installs erlang-base)");
}

erlang_node::~erlang_node() { kill_now(); }

bool erlang_node::wait_until_up() {
  return grove_test::wait_until([&] {
    if (!grove::dist::ping(name_)) return false;
    // The node is up; its `peer` process is registered once -eval has run.
    const grove::term token = grove::term::tuple({a("up"), grove::term(grove::self())});
    grove::dist::send("peer", name_, grove::term::tuple({a("echo"), grove::term(grove::self()), token}));
    return grove::receive(grove::when([&](const grove::term& t) { return t == token; }, [](grove::term) { return true; }),
                          grove::after(std::chrono::milliseconds(300), [] { return false; }));
  });
}

grove::term erlang_node::run(const std::string& function, std::vector<grove::term> args) {
  static std::atomic<std::int64_t> next_ref{1};
  const grove::term ref(next_ref++);
  tell(grove::term::tuple({a("run"), grove::term(grove::self()), ref, grove::term(grove::atom(function)), grove::term::list(std::move(args))}));
  const grove::term answer = receive_term([&](const grove::term& t) { return t.is_tuple(2) && t[0] == ref; });
  return answer.is_tuple(2) ? answer[1] : grove::term();
}

void erlang_node::tell(const grove::term& message) { grove::dist::send("peer", name_, message); }

void erlang_node::halt() {
  tell(a("halt"));
  if (os_pid_ > 0) {
    int status = 0;
    while (waitpid(os_pid_, &status, 0) < 0 && errno == EINTR) {
    }
    os_pid_ = -1;
  }
}

void erlang_node::kill_now() {
  if (os_pid_ <= 0) return;
  ::kill(os_pid_, SIGCONT);
  ::kill(os_pid_, SIGKILL);
  int status = 0;
  while (waitpid(os_pid_, &status, 0) < 0 && errno == EINTR) {
  }
  os_pid_ = -1;
}

void erlang_node::pause() { ::kill(os_pid_, SIGSTOP); }
void erlang_node::resume() { ::kill(os_pid_, SIGCONT); }

erlang_node& shared_erlang() {
  static erlang_node node(unique_alive("peer"));
  return node;
}

grove_node::grove_node(grove::dist::node_options options, grove::runtime_config config) : rt_(std::move(config)) {
  me_.emplace();
  name_ = unique_alive("grove") + "@127.0.0.1";
  options.name = name_;
  if (options.cookie.empty()) options.cookie = cookie;
  options.listen_address = "127.0.0.1";
  grove::dist::start(options);
}

std::string grove_node::reports() const {
  std::string out;
  for (const auto& e : logs_.of(grove::log_kind::distribution)) out += e.text + "\n";
  return out;
}

grove_node::~grove_node() {
  grove::dist::stop();
  me_.reset();
}

}  // namespace dist_test
