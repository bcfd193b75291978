// erlang_interop: a Grove node in an Erlang cluster (grove::dist). A Grove node
// grove_demo@127.0.0.1 runs an agent process, registered as grove_agent, that anyone can drive from
// an Erlang shell (erl -name me@127.0.0.1 -setcookie grove_demo):
//
//   {grove_agent, 'grove_demo@127.0.0.1'} ! {echo, self(), Term}   % Term comes back to self()
//   {grove_agent, 'grove_demo@127.0.0.1'} ! {spawn_worker, self()} % {worker, Pid} comes back
//
// A worker obeys, and answers "the one who asked" (the process that had it spawned):
//   {exit, Reason}       exits with Reason (any term: it is the exit reason Erlang sees)
//   {link, Pid}          links to Pid, replies ok
//   {unlink, Pid}        unlinks, replies ok
//   {monitor, Pid}       monitors Pid; forwards each {'DOWN', Ref, process, Pid, Reason} it gets
//   {trap_exit, Bool}    sets trap_exit; forwards each {'EXIT', Pid, Reason} it then gets
//   {send, To, Term}     To ! Term (a pid, or {Name, Node})
// and prints what it sees, marked [grove].
//
// Run with no arguments, it is a demo: it starts erl (demo_erl@127.0.0.1), which pings the Grove
// node, has the agent echo a term, links an Erlang process to a Grove worker and kills the worker,
// has a Grove worker monitor an Erlang process that exits, links a trapping Grove worker to the
// Erlang shell process and then halts its node; the Grove side prints noconnection arriving.
// `erlang_interop --agent NAME@HOST COOKIE` runs the agent node alone until killed (the Grove-to-
// Grove tests drive it). Without erl on the PATH the demo says so and exits 0.
//
// Expected output (pids and refs vary; lines marked [erlang] come from the Erlang node; a Grove pid
// prints as <0.I.S> here and <N.I.S> there, as Erlang prints pids of other nodes):
//   [grove] node grove_demo@127.0.0.1 is up; grove_agent waits
//   [erlang] ping grove_demo@127.0.0.1: pong
//   [erlang] the agent echoed {hello,from_erlang}
//   [erlang] the agent spawned <8577.7.1>; linked to it, killing it
//   [erlang] got {'EXIT',<8577.7.1>,killed}
//   [grove] worker <0.4.2> monitors <2.90.0>
//   [grove] worker <0.4.2> got {'DOWN',#Ref<0.1.0.2>,process,<2.90.0>,out_of_coffee}
//   [erlang] the Grove worker forwarded {'DOWN',#Ref<8577.1.0.2>,process,<0.90.0>,out_of_coffee}
//   [grove] worker <0.7.2> traps exits, links to <2.9.0>
//   [erlang] halting this node
//   [grove] worker <0.7.2> got {'EXIT',<2.9.0>,noconnection}
//   [grove] noconnection arrived: the Erlang node is gone, and the Grove node knows it
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <grove/dist/messages.hpp>
#include <grove/dist/node.hpp>
#include <grove/grove.hpp>

extern char** environ;

namespace {

using grove::term;

term a(const char* name) { return term(grove::atom(name)); }

// Prints one line and, if there is an observer, tells it. The demo stops printing once it has seen
// what it came for (the runtime's stop then ends the workers with shutdown, which is no news).
struct observed {
  std::string text;
};
std::atomic<bool> printing{true};

void say(grove::pid observer, std::string text) {
  if (printing.load()) {
    fmt::print("[grove] {}\n", text);
    std::fflush(stdout);
  }
  if (!observer.is_null()) grove::send(observer, observed{std::move(text)});
}

// A worker: obeys the commands in the file comment; `asker` is the one who had it spawned.
void worker(grove::pid asker, grove::pid observer) {
  const grove::pid me = grove::self();
  for (;;) {
    grove::receive(
        [&](term t) {
          if (t.is_record("exit", 2)) {
            say(observer, fmt::format("worker {} exits with {}", me, t[1]));
            grove::exit(grove::dist::to_exit_reason(t[1]));
          } else if (t.is_record("link", 2) && t[1].is_pid()) {
            grove::link(t[1].as_pid());
            say(observer, fmt::format("worker {} traps exits, links to {}", me, t[1]));
            grove::send(asker, a("ok"));
          } else if (t.is_record("unlink", 2) && t[1].is_pid()) {
            grove::unlink(t[1].as_pid());
            grove::send(asker, a("ok"));
          } else if (t.is_record("monitor", 2) && t[1].is_pid()) {
            grove::monitor(t[1].as_pid());
            say(observer, fmt::format("worker {} monitors {}", me, t[1]));
          } else if (t.is_record("trap_exit", 2) && t[1].is_boolean()) {
            grove::trap_exit(t[1].as_bool());
          } else if (t.is_record("send", 3)) {
            const term& to = t[1];
            if (to.is_pid()) {
              grove::send(to.as_pid(), t[2]);
            } else if (to.is_tuple(2) && to[0].is_atom() && to[1].is_atom()) {
              grove::dist::send(to[0].as_atom().name(), to[1].as_atom().name(), t[2]);
            }
          }
        },
        [&](grove::down d) {
          const term msg = grove::dist::to_term(d);
          say(observer, fmt::format("worker {} got {}", me, msg));
          grove::send(asker, msg);
        },
        [&](grove::exit_signal e) {
          const term msg = grove::dist::to_term(e);
          say(observer, fmt::format("worker {} got {}", me, msg));
          grove::send(asker, msg);
        });
  }
}

// The agent: echo and spawn_worker, for anyone.
void agent(grove::pid observer) {
  for (;;) {
    grove::receive([&](term t) {
      if (t.is_record("echo", 3) && t[1].is_pid()) {
        grove::send(t[1].as_pid(), t[2]);
      } else if (t.is_record("spawn_worker", 2) && t[1].is_pid()) {
        const grove::pid asker = t[1].as_pid();
        const grove::pid w = grove::spawn([asker, observer] { worker(asker, observer); });
        grove::send(asker, term::tuple({a("worker"), term(w)}));
      }
    });
  }
}

// The Erlang half of the demo, run by `erl -eval`.
std::string erlang_script(const std::string& grove) {
  return fmt::format(R"(
G = '{0}',
io:format("[erlang] ping ~s: ~p~n", [G, net_adm:ping(G)]),
{{grove_agent, G}} ! {{echo, self(), {{hello, from_erlang}}}},
receive Echo -> io:format("[erlang] the agent echoed ~p~n", [Echo]) after 5000 -> io:format("[erlang] no echo~n") end,
process_flag(trap_exit, true),
Spawn = fun() -> {{grove_agent, G}} ! {{spawn_worker, self()}}, receive {{worker, P}} -> P after 5000 -> exit(no_worker) end end,
W1 = Spawn(),
io:format("[erlang] the agent spawned ~p; linked to it, killing it~n", [W1]),
link(W1),
exit(W1, kill),
receive {{'EXIT', W1, R1}} -> io:format("[erlang] got ~p~n", [{{'EXIT', W1, R1}}]) after 5000 -> ok end,
W2 = Spawn(),
Victim = spawn(fun() -> receive stop -> exit(out_of_coffee) end end),
W2 ! {{monitor, Victim}},
W2 ! {{send, self(), monitoring}},  %% behind the monitor, which reaches Victim's queue first
receive monitoring -> ok after 5000 -> ok end,
Victim ! stop,
receive {{'DOWN', _, process, Victim, _}} = D -> io:format("[erlang] the Grove worker forwarded ~w~n", [D]) after 5000 -> ok end,
W3 = Spawn(),
W3 ! {{trap_exit, true}},
W3 ! {{link, self()}},
receive ok -> ok after 5000 -> ok end,
io:format("[erlang] halting this node~n"),
erlang:halt().
)",
                     grove);
}

bool on_path(const char* program) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string p(path);
  for (std::size_t start = 0; start <= p.size();) {
    const std::size_t end = p.find(':', start);
    const std::string dir = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return false;
}

// Grove's own reports: warnings and errors (a refused peer, a lost connection), not the info lines.
void quiet_logger() {
  grove::set_logger([](const grove::log_event& e) {
    if (e.level != grove::log_level::info) fmt::print(stderr, "[grove log] {}\n", e.text);
  });
}

int run_agent(const std::string& name, const std::string& cookie) {
  quiet_logger();
  grove::runtime rt;
  grove::scoped_process me;
  grove::dist::start({.name = name, .cookie = cookie, .listen_address = "127.0.0.1"});
  grove::register_name("grove_agent", grove::spawn([] { agent(grove::pid()); }));
  fmt::print("agent {} up\n", name);
  std::fflush(stdout);
  grove::receive(grove::after(grove::forever, [] {}));  // until killed
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "--agent") return run_agent(argv[2], argv[3]);
  if (!on_path("erl")) {
    fmt::print("erl is not on the PATH: nothing to talk to (tools/setup installs erlang-base)\n");
    return 0;
  }
  const std::string grove_name = "grove_demo@127.0.0.1", cookie = "grove_demo";
  quiet_logger();
  grove::runtime rt;
  grove::scoped_process me;
  grove::dist::start({.name = grove_name, .cookie = cookie, .listen_address = "127.0.0.1"});
  const grove::pid observer = me.pid();
  grove::register_name("grove_agent", grove::spawn([observer] { agent(observer); }));
  say(grove::pid(), fmt::format("node {} is up; grove_agent waits", grove_name));

  const std::string script = erlang_script(grove_name);
  std::vector<std::string> args = {"erl", "-name", "demo_erl@127.0.0.1", "-setcookie", cookie, "-noshell", "-noinput", "-eval", script};
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);
  pid_t erl = -1;
  if (posix_spawnp(&erl, "erl", nullptr, nullptr, argp.data(), environ) != 0) {
    fmt::print("could not start erl\n");
    grove::dist::stop();
    return 1;
  }
  // Wait for the worker that traps exits to see the Erlang node go.
  const bool seen = grove::receive(
      grove::when([](const observed& o) { return o.text.find("noconnection") != std::string::npos; }, [](observed) { return true; }),
      grove::after(std::chrono::seconds(60), [] { return false; }));
  int status = 0;
  if (!seen) ::kill(erl, SIGKILL);
  while (waitpid(erl, &status, 0) < 0 && errno == EINTR) {
  }
  say(grove::pid(), seen ? "noconnection arrived: the Erlang node is gone, and the Grove node knows it"
                         : "the Erlang side did not finish in 60 s");
  printing.store(false);
  grove::dist::stop();
  return seen ? 0 : 1;
}
