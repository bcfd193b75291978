// dist_send: messages between two nodes on this machine, over the Erlang distribution protocol.
//
//   dist_send --sink 1 --id K                      a node grove_sink_K@127.0.0.1 that serves senders
//   dist_send --id K --peer_erlang 0|1 --mode 0|1 --payload B --n N
//                                                  a sender node (grove_sender_K@127.0.0.1) against
//                                                  grove_sink_K or erl_sink_K (bench/peers/erlang/dist_send.erl)
// mode 0 (stream): N messages {m, Payload} to a counter process on the sink, which answers
//   {done, N} after the last: messages_per_second, sent back to back (a sender waits while the
//   connection's queue is past its busy limit, in Grove as in Erlang: --busy_limit_kib, 1024 as
//   OTP's default).
// mode 1 (round trips): N times {self(), Payload} to an echo process and its answer back:
//   round_trips_per_second.
// Payload: 0 is a small term (the integer 42), B > 0 a binary of B bytes. The sink asks nothing;
// the sender asks it for a counter or an echo process with {start, self(), Mode, N} to {sink, Node}.
// bench/harness/dist_send.sh runs every pair (Grove-Grove, Grove-Erlang, Erlang-Erlang) in one loop.
#include <cstdio>
#include <string>

#include <grove/dist/node.hpp>
#include <grove/grove.hpp>

#include "bench_common.hpp"

namespace {

using grove::term;

constexpr const char* cookie = "grove_bench";

term a(const char* name) { return term(grove::atom(name)); }

void counter(grove::pid report, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) grove::receive([](const term&) {});
  grove::send(report, term::tuple({a("done"), n}));
}

void echo() {
  for (;;) {
    const bool go_on = grove::receive([](term t) {
      if (t.is_tuple(2) && t[0].is_pid()) {
        grove::send(t[0].as_pid(), t[1]);
        return true;
      }
      return false;  // stop
    });
    if (!go_on) return;
  }
}

int run_sink(long long id, unsigned threads, long long spin_us) {
  grove::runtime rt({.workers = threads, .max_idle_spin = std::chrono::microseconds(spin_us)});
  grove::scoped_process me;
  grove::dist::start({.name = fmt::format("grove_sink_{}@127.0.0.1", id), .cookie = cookie, .listen_address = "127.0.0.1"});
  grove::register_name("sink", grove::spawn([] {
                         for (;;)
                           grove::receive([](term t) {
                             if (!t.is_record("start", 4)) return;
                             const grove::pid from = t[1].as_pid();
                             const std::int64_t n = t[3].as_int();
                             const grove::pid p = t[2].as_int() == 0 ? grove::spawn([from, n] { counter(from, n); })
                                                                     : grove::spawn([] { echo(); });
                             grove::send(from, term::tuple({a("ready"), term(p)}));
                           });
                       }));
  std::printf("sink up\n");
  std::fflush(stdout);
  grove::receive(grove::after(grove::forever, [] {}));
  return 0;
}

int run_sender(const bench::flags& f) {
  grove::runtime rt({.workers = static_cast<unsigned>(f["threads"]), .max_idle_spin = std::chrono::microseconds(f["spin_us"])});
  grove::scoped_process me;
  const long long id = f["id"];
  grove::dist::start({.name = fmt::format("grove_sender_{}@127.0.0.1", id),
                      .cookie = cookie,
                      .listen_address = "127.0.0.1",
                      .busy_limit_bytes = static_cast<std::size_t>(f["busy_limit_kib"]) * 1024});
  const std::string peer = fmt::format("{}_sink_{}@127.0.0.1", f["peer_erlang"] ? "erl" : "grove", id);
  // The sink may still be starting: ask until it answers, at most 30 s.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!grove::dist::ping(peer)) {
    if (std::chrono::steady_clock::now() > give_up) {
      std::fprintf(stderr, "dist_send: no sink %s\n", peer.c_str());
      return 1;
    }
    grove::sleep_for(std::chrono::milliseconds(100));
  }
  const std::int64_t n = f["n"];
  const long long mode = f["mode"];
  const term payload = f["payload"] > 0 ? term::binary(std::string(static_cast<std::size_t>(f["payload"]), 'x')) : term(42);
  // The measuring side is a process, as the Erlang sender is (a scoped_process is a thread of its
  // own: every message to it would cross threads).
  const grove::pid main_pid = grove::self();
  grove::spawn([&, main_pid] {
    grove::dist::send("sink", peer, term::tuple({a("start"), term(grove::self()), mode, n}));
    const grove::pid worker = grove::receive(
        grove::when([](const term& t) { return t.is_record("ready", 2); }, [](term t) { return t[1].as_pid(); }),
        grove::after(std::chrono::seconds(30), [] { return grove::pid(); }));
    if (worker.is_null()) {
      grove::send(main_pid, -1.0);
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (mode == 0) {
      const term msg = term::tuple({a("m"), payload});
      for (std::int64_t i = 0; i < n; ++i) grove::send(worker, msg);
      const term done = grove::receive([](term t) { return t; });
      if (!done.is_record("done", 2) || done[1].as_int() != n) {
        grove::send(main_pid, -2.0);
        return;
      }
    } else {
      const term msg = term::tuple({term(grove::self()), payload});
      for (std::int64_t i = 0; i < n; ++i) {
        grove::send(worker, msg);
        grove::receive([](const term&) {});
      }
      grove::send(worker, a("stop"));
    }
    grove::send(main_pid, bench::seconds_since(t0));
  });
  const double secs = grove::receive([](double s) { return s; });
  if (secs < 0) {
    std::fprintf(stderr, "dist_send: %s\n", secs == -1.0 ? "the sink did not answer" : "the counter answered wrong");
    return 1;
  }
  bench::result("dist_send", mode == 0 ? "messages_per_second" : "round_trips_per_second", "1/s", static_cast<double>(n) / secs, f);
  grove::dist::stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bench::flags f(argc, argv, {{"sink", 0}, {"id", 0}, {"peer_erlang", 0}, {"mode", 0}, {"payload", 0}, {"n", 200000}, {"spin_us", 200}, {"busy_limit_kib", 1024}});
  if (f["sink"]) return run_sink(f["id"], static_cast<unsigned>(f["threads"]), f["spin_us"]);
  return run_sender(f);
}
