// Two Grove nodes: this test program and examples/erlang_interop run as an agent node
// (`erlang_interop --agent NAME COOKIE`), driven through the agent's documented protocol. The same
// protocol, the same semantics as with an Erlang node. Built when the examples are
// (GROVE_INTEROP_EXAMPLE is the agent's path).
#ifdef GROVE_INTEROP_EXAMPLE
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <grove/dist/gen_server.hpp>
#include <grove/dist/messages.hpp>
#include <grove/dist/node.hpp>
#include <grove/remote.hpp>
#include <grove/supervisor.hpp>

#include "erlang_node.hpp"

extern char** environ;

using namespace std::chrono_literals;
using dist_test::a;
using dist_test::receive_term;
using grove::term;
using grove_test::patience;

namespace {

term tuple(std::initializer_list<term> e) { return term::tuple(e); }

// The agent node, in a process of its own; killed when destroyed.
class grove_agent_node {
 public:
  grove_agent_node() : name_(dist_test::unique_alive("agent") + "@127.0.0.1") {
    std::vector<std::string> args = {GROVE_INTEROP_EXAMPLE, "--agent", name_, dist_test::cookie};
    std::vector<char*> argp;
    for (auto& s : args) argp.push_back(s.data());
    argp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    REQUIRE(posix_spawn(&pid_, GROVE_INTEROP_EXAMPLE, &actions, nullptr, argp.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~grove_agent_node() { kill_now(); }
  const std::string& name() const { return name_; }
  bool wait_until_up() { return grove_test::wait_until([&] { return grove::dist::ping(name_); }); }
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  // A new worker there, asked by the calling process.
  grove::pid spawn_worker() {
    grove::dist::send("grove_agent", name_, tuple({a("spawn_worker"), term(grove::self())}));
    const term w = receive_term([](const term& t) { return t.is_record("worker", 2); });
    REQUIRE(w.is_record("worker", 2));
    return w[1].as_pid();
  }

 private:
  std::string name_;
  pid_t pid_ = -1;
};

grove::down wait_down(const grove::monitor_ref& m) {
  return grove::receive(grove::when([&](const grove::down& d) { return d.ref == m; }, [](grove::down d) { return d; }),
                        grove::after(patience, [] {
                          FAIL("no down");
                          return grove::down{};
                        }));
}

}  // namespace

TEST_CASE("Grove to Grove: echo by registered name, links and exits with term reasons, monitors both ways") {
  dist_test::grove_node g;
  grove_agent_node peer;
  REQUIRE(peer.wait_until_up());
  // {grove_agent, Node} ! {echo, self(), Term}
  const term hello = tuple({a("hello"), term::binary("from a grove node"), term(3.25)});
  grove::dist::send("grove_agent", peer.name(), tuple({a("echo"), term(grove::self()), hello}));
  CHECK(receive_term([](const term& t) { return t.is_record("hello", 3); }) == hello);
  // A link across: the remote worker exits with a term reason; a trapping local process receives it.
  const grove::pid w = peer.spawn_worker();
  CHECK(w.is_remote());
  CHECK(grove::remote::node_name(w.node()) == peer.name());
  grove::trap_exit(true);
  grove::link(w);
  const grove::monitor_ref m = grove::monitor(w);
  const term reason = tuple({a("custom"), 42});
  grove::send(w, tuple({a("exit"), reason}));
  const grove::exit_signal e = grove::receive([](grove::exit_signal x) { return x; }, grove::after(patience, [] { return grove::exit_signal{}; }));
  CHECK(e.from == w);
  CHECK(grove::dist::to_term(e.reason) == reason);
  CHECK(grove::dist::to_term(wait_down(m).reason) == reason);
  grove::trap_exit(false);
  // The remote side monitors one of ours and forwards the down; and traps our exit through a link.
  const grove::pid w2 = peer.spawn_worker();
  grove::pid local = grove::spawn([] {
    grove::receive([](term) {});
    grove::exit(grove::exit_reason("local_done"));
  });
  grove::send(w2, tuple({a("monitor"), term(local)}));
  grove::send(w2, tuple({a("trap_exit"), a("true")}));
  grove::send(w2, tuple({a("link"), term(local)}));
  CHECK(receive_term([](const term& t) { return t.is_atom("ok"); }) == a("ok"));
  grove::send(local, a("go"));
  const term down = receive_term([](const term& t) { return t.is_record("DOWN", 5); });
  CHECK(down[3] == term(local));
  CHECK(down[4] == a("local_done"));
  const term exit = receive_term([](const term& t) { return t.is_record("EXIT", 3); });
  CHECK(exit[1] == term(local));
  CHECK(exit[2] == a("local_done"));
}

TEST_CASE("Grove to Grove: the other node dies: noconnection to links and monitors across") {
  dist_test::grove_node g;
  grove_agent_node peer;
  REQUIRE(peer.wait_until_up());
  const grove::pid w = peer.spawn_worker();
  grove::pid linked = grove::spawn([w] {
    grove::link(w);
    grove::receive([](term) {});
  });
  const grove::monitor_ref lm = grove::monitor(linked);
  const grove::monitor_ref m = grove::monitor(w);
  // The worker links back and says ok: the link is there from both sides, whichever came first.
  grove::send(w, tuple({a("link"), term(linked)}));
  CHECK(receive_term([](const term& t) { return t.is_atom("ok"); }) == a("ok"));
  peer.kill_now();
  CHECK(wait_down(m).reason.text() == "noconnection");
  CHECK(wait_down(lm).reason.text() == "noconnection");  // not trapping: died of it
}

// OTP lets a supervisor have a child on another node when its start function returns that child
// linked (as a remote spawn_link does): restarts come through the link, and shutdown is an exit
// signal across. The child here is the agent's worker, asked for from inside the start function.
TEST_CASE("Grove to Grove: a supervisor restarts a child on the other node and stops it with shutdown") {
  namespace sup = grove::supervisor;
  dist_test::grove_node g;
  grove_agent_node peer;
  REQUIRE(peer.wait_until_up());
  const std::string node = peer.name();
  sup::child_spec remote_child{.id = "remote_worker", .start = [node]() -> sup::start_return {
                                 grove::dist::send("grove_agent", node, tuple({a("spawn_worker"), term(grove::self())}));
                                 const grove::pid w = grove::receive(
                                     grove::when([](const term& t) { return t.is_record("worker", 2) && t[1].is_pid(); },
                                                 [](const term& t) { return t[1].as_pid(); }),
                                     grove::after(patience, [] { return grove::pid(); }));
                                 if (w.is_null()) return grove::exit_reason("no_worker_from_the_agent");
                                 grove::link(w);
                                 return w;
                               }};
  const grove::pid s = sup::start_link({.strategy = sup::strategy::one_for_one, .intensity = 3}, {remote_child});
  const auto child = [&] {
    auto c = sup::which_children(s);
    return c && c->size() == 1 ? (*c)[0].pid : grove::pid();
  };
  const grove::pid first = child();
  REQUIRE(first.is_remote());
  CHECK(grove::remote::node_name(first.node()) == node);
  // It crashes there: the exit comes through the link and the supervisor starts another there.
  const grove::monitor_ref m1 = grove::monitor(first);
  grove::send(first, tuple({a("exit"), a("crash")}));
  CHECK(grove::dist::to_term(wait_down(m1).reason) == a("crash"));
  grove::pid second;
  REQUIRE(grove_test::wait_until([&] {
    second = child();
    return !second.is_null() && second != first;
  }));
  CHECK(second.is_remote());
  CHECK(grove::remote::node_name(second.node()) == node);
  // Stopping the supervisor stops the remote child with shutdown (not a kill after the 5 s timeout).
  const grove::monitor_ref m2 = grove::monitor(second);
  CHECK_FALSE(sup::stop(s));
  CHECK(grove::dist::to_term(wait_down(m2).reason) == a("shutdown"));
}
#endif  // GROVE_INTEROP_EXAMPLE
