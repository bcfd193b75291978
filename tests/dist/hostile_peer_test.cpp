// grove::dist facing peers that misbehave: garbage in the handshake, malformed and oversized frames
// after it (hand-made here, and seeded mutations of valid ones), a peer that goes silent, both nodes
// connecting at once. The connection at fault goes down with a logged reason; the node and its
// processes go on.
#include <doctest/doctest.h>

#include <random>

#include <grove/dist/messages.hpp>
#include <grove/dist/node.hpp>
#include <grove/net.hpp>
#include <grove/remote.hpp>

#include "control.hpp"
#include "epmd.hpp"
#include "erlang_node.hpp"
#include "handshake.hpp"

using namespace std::chrono_literals;
using dist_test::a;
using dist_test::receive_term;
using grove::term;
using grove_test::patience;
namespace internal = grove::dist::internal;

namespace {

term tuple(std::initializer_list<term> e) { return term::tuple(e); }

// The port the Grove node `name` listens on, from EPMD.
std::uint16_t port_of(const std::string& name) {
  auto p = internal::port_of(grove::net::address::loopback(4369), name.substr(0, name.find('@')), patience);
  REQUIRE(p);
  return *p;
}

// A connection to the node that has done the handshake as node `as` (with the right cookie),
// offering `flags`.
grove::net::stream handshaken(const std::string& node, const std::string& as,
                              std::uint64_t flags = internal::dflag::offered | internal::dflag::published) {
  auto s = grove::net::stream::connect(grove::net::address::loopback(port_of(node)), patience);
  REQUIRE(s);
  internal::identity me{as, flags, 1, dist_test::cookie};
  std::string why;
  REQUIRE(internal::send_name_and_receive_status(*s, me, patience, why) == "ok");
  internal::peer them;
  REQUIRE_MESSAGE(internal::complete_as_initiator(*s, me, node, them, patience, why), why);
  return std::move(*s);
}

// The next frame the node sends on `s` (its bytes after the length), ticks skipped.
std::string next_frame_bytes(grove::net::stream& s) {
  for (;;) {
    unsigned char len[4];
    REQUIRE(!s.read_exact(len, 4, patience));
    const std::size_t n = std::size_t{len[0]} << 24 | std::size_t{len[1]} << 16 | std::size_t{len[2]} << 8 | len[3];
    if (n == 0) continue;  // a tick
    std::string got(n, '\0');
    REQUIRE(!s.read_exact(got.data(), n, patience));
    return got;
  }
}

// Whether the node closes `s` (reads end-of-file or an error) within patience.
bool closed_by_peer(grove::net::stream& s) {
  char buf[4096];
  for (;;) {
    auto n = s.read_some(buf, sizeof buf, patience);
    if (!n) return n.error() != grove::errc::timeout;
    if (*n == 0) return true;
    // Ticks and anything else it still sends: keep reading until it closes.
  }
}

std::string framed(std::string body) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>(body.size() >> (24 - 8 * i));
  return out + body;
}

}  // namespace

TEST_CASE("a peer that sends garbage instead of a handshake is refused, and the node goes on") {
  dist_test::grove_node g;
  auto& erl = dist_test::shared_erlang();
  REQUIRE(erl.wait_until_up());
  const std::uint16_t port = port_of(g.name());
  std::mt19937_64 rng(7);
  const std::vector<std::string> openings = {
      std::string("GET / HTTP/1.1\r\n\r\n"),
      std::string("\xff\xff", 2) + std::string(100, 'x'),  // a 65,535-byte message that never comes
      std::string("\x00\x05N\x00\x00\x00\x00", 7),           // a name message cut short
      std::string("\x00\x03n\x00\x05", 5),                   // an old name message of no name
  };
  for (std::size_t i = 0; i < openings.size() + 20; ++i) {
    std::string bytes = i < openings.size() ? openings[i] : std::string(1 + rng() % 64, '\0');
    if (i >= openings.size())
      for (auto& c : bytes) c = static_cast<char>(rng());
    auto s = grove::net::stream::connect(grove::net::address::loopback(port), patience);
    REQUIRE(s);
    (void)s->write_all(bytes, patience);
    (void)s->shutdown_write();  // what did not complete a message now never will
    CHECK(closed_by_peer(*s));
  }
  CHECK(g.reports().find("refused a connection") != std::string::npos);
  // The node still works.
  const term echo = erl.run("spawn_echo", {});
  grove::send(echo.as_pid(), tuple({term(grove::self()), a("still_here")}));
  CHECK(receive_term([](const term& t) { return t.is_record("echoed", 2); })[1] == a("still_here"));
}

TEST_CASE("a peer past the handshake that sends malformed or oversized frames loses its connection, nothing else") {
  grove::dist::node_options o;
  o.max_frame_bytes = 1 << 20;
  dist_test::grove_node g(o);
  // It traps exits: a mutated frame may well be a valid LINK, whose noconnection at the close is
  // what OTP sends, not harm.
  grove::pid bystander = grove::spawn([] {
    grove::trap_exit(true);
    for (;;) grove::receive([](grove::pid from) { grove::send(from, a("alive")); }, [](grove::exit_signal) {});
  });
  grove::register_name("target", bystander);
  const internal::codec_context peer_ctx{"hostile@127.0.0.1", grove::remote::node_slot("hostile@127.0.0.1"), 1};
  const auto control_frame = [&](const term& control, const term* payload) {
    return internal::make_frame(control, payload, peer_ctx, 1 << 30);
  };
  const term far = term(grove::pid::remote(grove::remote::node_slot("hostile@127.0.0.1"), 1, 5, 0));
  // The bystander as the hostile peer names it: a pid of our node (its name, its creation).
  const term target(grove::pid::remote(grove::remote::node_slot(g.name()), grove::dist::creation(), bystander.index(), bystander.serial()));
  struct hostile_case {
    const char* what;
    std::string bytes;
    const char* reported;
  };
  const term msg = a("hi");
  term deep = a("bottom");
  for (int i = 0; i < 300; ++i) deep = tuple({deep});
  const term third(grove::pid::remote(grove::remote::node_slot("third@127.0.0.1"), 1, 7, 0));
  const std::vector<hostile_case> cases = {
      {"a frame that is neither pass-through nor a distribution header", framed("\x44\x01\x02"), "pass-through, 112"},
      {"a header that names an atom cache entry never set", framed(std::string("\x83\x44\x01\x00\x05", 5)), "never set"},
      {"a header cut short", framed(std::string("\x83\x44\x03\x88", 4)), "cut short"},
      {"a fragmented message", framed(std::string("\x83\x45\x00", 3)), "fragments were not agreed"},
      {"a control message that is no term", framed(std::string("\x70\x83\xff", 3)), "unknown tag 255"},
      {"an unknown control message", control_frame(tuple({99, far}), nullptr), "unknown control message 99"},
      {"a LINK of the wrong arity", control_frame(tuple({1, far}), nullptr), "arity"},
      {"a SEND without its message", control_frame(tuple({22, far, target}), nullptr), "without its payload"},
      {"a send to a pid of another node", control_frame(tuple({22, far, far}), &msg), "of another node"},
      {"trailing bytes after the terms", control_frame(tuple({22, far, target}), &msg) + std::string(1, '\0'), "bytes after a frame's terms"},
      {"a frame longer than max_frame_bytes", std::string("\x40\x00\x00\x00", 4), "past max_frame_bytes"},
      {"a message nested deeper than the node reads", control_frame(tuple({22, far, target}), &deep), "nested deeper than"},
      {"a LINK from a process of a third node", control_frame(tuple({1, third, target}), nullptr), "not of hostile@127.0.0.1"},
      {"an EXIT from a process of a third node", control_frame(tuple({24, third, target}), &msg), "not of hostile@127.0.0.1"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    grove::net::stream s = handshaken(g.name(), "hostile@127.0.0.1");
    std::string bytes = c.bytes;
    if (std::string(c.what) == "trailing bytes after the terms") {
      // One more byte inside the frame: fix the length to cover it.
      const std::size_t n = bytes.size() - 4;
      for (int i = 0; i < 4; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(n >> (24 - 8 * i));
    }
    REQUIRE(!s.write_all(bytes, patience));
    CHECK(closed_by_peer(s));
    // The report follows the close (down() shuts the socket first).
    if (*c.reported) CHECK_MESSAGE(grove_test::wait_until([&] { return g.reports().find(c.reported) != std::string::npos; }), g.reports());
  }
  // Seeded mutations of valid frames: each is read as a frame or closes its connection.
  std::mt19937_64 rng(1812);
  const std::vector<std::string> valid = {
      control_frame(tuple({22, far, target}), &msg),
      control_frame(tuple({6, far, term(grove::atom("")), a("target")}), &msg),
      control_frame(tuple({19, far, target, term(grove::reference{0, 0, 3, {1, 2, 3, 0, 0}})}), nullptr),
      control_frame(tuple({24, far, target}), &msg),
  };
  const int rounds = 60 * static_cast<int>(grove_test::stress_scale());
  for (int i = 0; i < rounds; ++i) {
    grove::net::stream s = handshaken(g.name(), "hostile@127.0.0.1");
    std::string bytes = valid[rng() % valid.size()];
    for (int m = 0; m < 3; ++m) bytes[4 + rng() % (bytes.size() - 4)] = static_cast<char>(rng());
    REQUIRE(!s.write_all(bytes + bytes, patience));
    (void)s.shutdown_write();
    CHECK(closed_by_peer(s));
  }
  // The bystander and the node are unharmed.
  grove::send(bystander, grove::self());
  CHECK(grove::receive([](term t) { return t; }, grove::after(patience, [] { return term(); })) == a("alive"));
  auto& erl = dist_test::shared_erlang();
  REQUIRE(erl.wait_until_up());
  CHECK(grove::dist::ping(erl.name()));
  grove::exit(bystander, grove::exit_reason::kill());
}

TEST_CASE("a peer that did not agree to distribution headers gets pass-through frames, what was queued before included") {
  dist_test::grove_node g;
  grove::net::stream s = handshaken(g.name(), "plain@127.0.0.1", internal::dflag::required | internal::dflag::published);
  const internal::codec_context peer_ctx{"plain@127.0.0.1", grove::remote::node_slot("plain@127.0.0.1"), 1};
  grove::pid local = grove::spawn([] { grove::receive([](term) {}); });
  const term far(grove::pid::remote(grove::remote::node_slot("plain@127.0.0.1"), 1, 9, 0));
  const term target(grove::pid::remote(grove::remote::node_slot(g.name()), grove::dist::creation(), local.index(), local.serial()));
  // An UNLINK_ID is answered with an UNLINK_ID_ACK: it must come back pass-through (112).
  REQUIRE(!s.write_all(internal::make_frame(tuple({35, 77, far, target}), nullptr, peer_ctx, 1 << 20), patience));
  const std::string got = next_frame_bytes(s);
  REQUIRE(!got.empty());
  CHECK(static_cast<unsigned char>(got[0]) == 112);
  const internal::frame f = internal::read_frame(got, peer_ctx);
  // {36, Id, From, To}: from the local process, to the peer's (which its own context reads as local).
  CHECK(f.control == tuple({36, 77, target, term(grove::pid::from_parts(9, 0))}));
  grove::exit(local, grove::exit_reason::kill());
}

TEST_CASE("signals to pids of an earlier incarnation of this node are answered as OTP does, and the connection stays") {
  dist_test::grove_node g;
  grove::net::stream s = handshaken(g.name(), "plain@127.0.0.1", internal::dflag::required | internal::dflag::published);
  const internal::codec_context peer_ctx{"plain@127.0.0.1", grove::remote::node_slot("plain@127.0.0.1"), 1};
  const term far(grove::pid::remote(grove::remote::node_slot("plain@127.0.0.1"), 1, 9, 0));
  // A pid of this node's name from another creation: a process of a node that has since restarted.
  const term old(grove::pid::remote(grove::remote::node_slot(g.name()), grove::dist::creation() + 1, 5, 1));
  const auto next_frame = [&]() { return internal::read_frame(next_frame_bytes(s), peer_ctx); };
  const auto send = [&](const term& control, const term* payload) {
    REQUIRE(!s.write_all(internal::make_frame(control, payload, peer_ctx, 1 << 20), patience));
  };
  const term msg = a("lost");
  send(tuple({22, far, old}), &msg);  // dropped
  send(tuple({1, far, old}), nullptr);  // a LINK: EXIT noproc back
  internal::frame f = next_frame();
  CHECK(f.control[0] == term(24));
  CHECK(f.has_payload);
  CHECK(f.payload == a("noproc"));
  const term ref(grove::reference{0, 0, 3, {4, 5, 6, 0, 0}});
  send(tuple({19, far, old, ref}), nullptr);  // a MONITOR_P: MONITOR_P_EXIT noproc back
  f = next_frame();
  CHECK(f.control[0] == term(28));
  CHECK(f.payload == a("noproc"));
  CHECK(g.reports().find("plain@127.0.0.1: down") == std::string::npos);  // the connection stays
}

TEST_CASE("a peer that goes silent is down after net_ticktime: noconnection across") {
  grove::dist::node_options o;
  o.net_ticktime = 2s;
  dist_test::grove_node g(o);
  dist_test::erlang_node erl(dist_test::unique_alive("silent"));
  REQUIRE(erl.wait_until_up());
  const term sleeper = erl.run("sleeper", {});
  const grove::monitor_ref m = grove::monitor(sleeper.as_pid());
  erl.pause();  // SIGSTOP: its socket stays open, nothing comes through it
  const grove::down d = grove::receive(grove::when([&](const grove::down& x) { return x.ref == m; }, [](grove::down x) { return x; }),
                                       grove::after(patience, [] { return grove::down{}; }));
  CHECK(d.reason.text() == "noconnection");
  CHECK(grove_test::wait_until([&] { return g.reports().find("no data from the peer for net_ticktime") != std::string::npos; }));
  erl.resume();
}

TEST_CASE("both nodes connecting at once settle on one connection that works, every time") {
  dist_test::grove_node g;
  auto& erl = dist_test::shared_erlang();
  REQUIRE(erl.wait_until_up());
  for (int round = 0; round < 6; ++round) {
    CAPTURE(round);
    // Erlang is told to ping us at a moment 300 ms from now; we drop the connection and connect to
    // it at the same moment. Whichever attempt wins (OTP's rule: the greater name), one connection
    // comes up and both sides use it.
    const auto at = std::chrono::system_clock::now() + 300ms;
    const auto at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
    CHECK(erl.run("ping_at", {term(grove::atom(g.name())), term(at_ms), term(grove::self())}) == a("ok"));
    REQUIRE(grove::dist::disconnect(erl.name()));
    grove::receive(grove::after(std::chrono::duration_cast<std::chrono::milliseconds>(at - std::chrono::system_clock::now()), [] {}));
    CHECK(grove::dist::connect(erl.name()));
    CHECK_MESSAGE(receive_term([](const term& t) { return t.is_record("pinged", 2); })[1] == a("pong"), g.reports());
    const auto up = grove::dist::nodes();
    CHECK(std::count(up.begin(), up.end(), erl.name()) == 1);
    CHECK(erl.run("ping", {term(grove::atom(g.name()))}) == a("pong"));
  }
}

namespace {
struct order {
  std::int64_t id;
  std::string item;
};
struct unregistered_thing {
  int x;
};
}  // namespace

TEST_CASE("a registered C++ type crosses as its term and arrives as itself; a type with no term form is reported") {
  dist_test::grove_node g;
  auto& erl = dist_test::shared_erlang();
  REQUIRE(erl.wait_until_up());
  static bool registered = false;
  if (!registered) {
    grove::dist::register_message<order>(
        "order", [](const order& o) { return tuple({a("order"), o.id, term::binary(o.item)}); },
        [](const term& t) -> std::optional<order> {
          if (!t.is_record("order", 3) || !t[1].is_integer() || !t[2].is_binary()) return std::nullopt;
          return order{t[1].as_int(), std::string(t[2].as_binary())};
        });
    registered = true;
  }
  CHECK_THROWS_AS(grove::dist::register_message<order>("order", [](const order&) { return term(); },
                                                       [](const term&) { return std::optional<order>(); }),
                  grove::error);
  const term echo = erl.run("spawn_echo", {});
  // Erlang sends an order tuple to us: it arrives as an `order`; a malformed one as a term.
  CHECK(erl.run("send_to", {term(grove::self()), tuple({a("order"), 7, term::binary("tea")})}) == a("ok"));
  const order o = grove::receive([](order x) { return x; }, grove::after(patience, [] { return order{}; }));
  CHECK(o.id == 7);
  CHECK(o.item == "tea");
  CHECK(erl.run("send_to", {term(grove::self()), tuple({a("order"), a("not_a_number"), 1})}) == a("ok"));
  CHECK(receive_term([](const term& t) { return t.is_record("order", 3); })[1] == a("not_a_number"));
  // Grove sends an order: it is {order, 8, <<"milk">>} there.
  const term collector = erl.run("collector", {});
  grove::send(collector.as_pid(), order{8, "milk"});
  CHECK(grove_test::wait_until([&] { return erl.run("collected", {collector}) == term::list({tuple({a("order"), 8, term::binary("milk")})}); }));
  // A type nobody registered: dropped, and said so.
  grove::send(echo.as_pid(), unregistered_thing{1});
  CHECK(grove_test::wait_until([&] { return g.reports().find("has no term form") != std::string::npos; }));
  grove::send(echo.as_pid(), a("stop"));
}

TEST_CASE("a message past max_frame_bytes is refused with a report; the connection goes on") {
  grove::dist::node_options o;
  o.max_frame_bytes = 1 << 20;
  dist_test::grove_node g(o);
  auto& erl = dist_test::shared_erlang();
  REQUIRE(erl.wait_until_up());
  const term echo = erl.run("spawn_echo", {});
  grove::send(echo.as_pid(), tuple({term(grove::self()), term::binary(std::string(2 << 20, 'x'))}));
  grove::send(echo.as_pid(), tuple({term(grove::self()), a("small")}));
  CHECK(receive_term([](const term& t) { return t.is_record("echoed", 2); })[1] == a("small"));
  CHECK(g.reports().find("past max_frame_bytes") != std::string::npos);
  grove::send(echo.as_pid(), a("stop"));
}
