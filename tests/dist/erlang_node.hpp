// erlang_node.hpp: a real Erlang node for grove::dist's tests, and a Grove node beside it.
//
//   dist_test::grove_node g;                      // runtime + dist::start as grove_<n>_<pid>@127.0.0.1
//   auto& erl = dist_test::shared_erlang();       // erl -name peer_<pid>@127.0.0.1 (started once)
//   grove::term r = erl.run("spawn_echo", {});    // grove_peer:spawn_echo() there, its result here
//
// The Erlang node runs tests/dist/grove_peer.erl, compiled with erlc into a scratch folder, under
// `erl -name ... -setcookie ... -noshell` with 127.0.0.1 as its host: loopback only. Names carry the
// test process's pid, so test runs in parallel (CTest's -j) never meet in EPMD.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grove/dist/node.hpp>
#include <grove/term.hpp>

#include "support/fixture.hpp"
#include "support/log_capture.hpp"

namespace dist_test {

inline constexpr const char* cookie = "grove_test_cookie";

// An `erl` child process running grove_peer. Killed (SIGKILL) when destroyed.
class erlang_node {
 public:
  // Starts erl named `alive`@127.0.0.1 (ticktime in seconds: Erlang's net_ticktime), running
  // grove_peer:start() and then `also` (an Erlang expression) if given.
  explicit erlang_node(std::string alive, std::string node_cookie = cookie, int ticktime = 60, std::string also = {});
  ~erlang_node();
  erlang_node(const erlang_node&) = delete;
  erlang_node& operator=(const erlang_node&) = delete;

  const std::string& name() const { return name_; }
  // From a Grove process on a started node: waits until the node answers a ping (it is up and has
  // registered `peer`), at most `patience`.
  bool wait_until_up();
  // grove_peer:F(Args...) run in a fresh process there; its result (or {'EXIT', Reason}). Fails the
  // test if no answer comes within patience.
  grove::term run(const std::string& function, std::vector<grove::term> args);
  // Sends to the node's `peer` process.
  void tell(const grove::term& message);
  // Halts the node (erlang:halt/0 there) and waits for the OS process to end.
  void halt();
  void kill_now();              // SIGKILL
  void pause();                 // SIGSTOP: silent, connections open
  void resume();                // SIGCONT
  pid_t os_pid() const { return os_pid_; }

 private:
  std::string name_;
  pid_t os_pid_ = -1;
};

// One Erlang node for the whole test program (started on first use), for scenarios that leave it
// running; a scenario that stops or pauses its node makes its own.
erlang_node& shared_erlang();

// A runtime (grove_test::runtime_fixture) made a node named grove_<n>_<pid>@127.0.0.1, and a scoped
// process to act from. Stops the node, then the runtime, leak check included. What Grove reports
// meanwhile is captured (logs()), not printed.
class grove_node {
 public:
  explicit grove_node(grove::dist::node_options options = {}, grove::runtime_config config = {});
  ~grove_node();
  const std::string& name() const { return name_; }
  grove::scoped_process& me() { return *me_; }
  grove_test::log_capture& logs() { return logs_; }
  // The texts of the distribution reports so far, one a line.
  std::string reports() const;

 private:
  grove_test::log_capture logs_;
  grove_test::runtime_fixture rt_;
  std::optional<grove::scoped_process> me_;
  std::string name_;
};

// A fresh node name with this test program's pid in it: "<prefix>_<n>_<pid>".
std::string unique_alive(const std::string& prefix);

// The atom `name` as a term.
grove::term a(const char* name);

// Receives a term matching `pred` within patience; fails the test (and returns []) otherwise.
grove::term receive_term(const std::function<bool(const grove::term&)>& pred, std::chrono::milliseconds timeout = grove_test::patience);

}  // namespace dist_test
