// links_and_monitors: how failure travels between processes, with Erlang's rules.
//   1. A crash propagates through a link: a worker throws, and its linked parent, which does not
//      trap exits, dies with the same reason.
//   2. A process that traps exits gets the linked crash as an exit_signal message instead, and lives.
//   3. A monitor is one-way: the watcher gets a down message carrying the exception's text.
//   4. Monitoring a pid that is already dead gives a down with reason noproc at once.
//
// Expected output:
//   1. the parent died with its linked child's reason: exception: disk on fire
//   2. the trapping supervisor got an exit_signal: bad_config, and is still alive: yes
//   3. down from the monitored process: exception: division by zero
//   4. monitoring a dead pid: down with noproc
#include <stdexcept>

#include <fmt/format.h>

#include <grove/grove.hpp>

namespace {
struct report {
  std::string text;
};
struct stop {};
}  // namespace

int main() {
  grove::runtime rt;
  grove::scoped_process me;
  const grove::pid main = me.pid();

  // 1. parent --link-- child; the child throws, the parent does not trap exits, so it dies too.
  grove::spawn_monitor([] {
    grove::spawn_link([] { throw std::runtime_error("disk on fire"); });
    grove::receive([](stop) {});  // never arrives: the link's exit signal ends the wait
  });
  grove::receive([&](const grove::down& d) {
    fmt::print("1. the parent died with its linked child's reason: {}\n", d.reason);
  });

  // 2. The same with trap_exit: the exit signal becomes a message.
  const grove::pid supervisor = grove::spawn([main] {
    grove::trap_exit(true);
    grove::spawn_link([] { grove::exit(grove::exit_reason("bad_config")); });
    grove::receive([&](const grove::exit_signal& e) { grove::send(main, report{e.reason.to_string()}); });
    grove::receive([](stop) {});
  });
  grove::receive([&](const report& r) {
    fmt::print("2. the trapping supervisor got an exit_signal: {}, and is still alive: {}\n", r.text,
               grove::is_alive(supervisor) ? "yes" : "no");
  });
  grove::send(supervisor, stop{});

  // 3. A monitor: the watcher is told, and nothing happens to it.
  auto divider = grove::spawn_monitor([] {
    grove::receive([](int d) {
      if (d == 0) throw std::domain_error("division by zero");
    });
  });
  grove::send(divider.pid, 0);
  grove::receive([&](const grove::down& d) { fmt::print("3. down from the monitored process: {}\n", d.reason); });

  // 4. The divider is dead now: a new monitor on it fires at once with noproc.
  grove::monitor(divider.pid);
  grove::receive([](const grove::down& d) { fmt::print("4. monitoring a dead pid: down with {}\n", d.reason); });
  return 0;
}
