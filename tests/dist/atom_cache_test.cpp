// Frames whose atoms go through the peer's atom cache (control.hpp, "Atoms sent through the cache"):
// what one side's headers set, the other side's cache reads back, frame after frame, with entries
// replaced, frames naming more atoms than a header can, and atoms too long for one length byte.
// tests/dist/interop_test.cpp checks the same against a real Erlang node.
#include <doctest/doctest.h>

#include <grove/remote.hpp>
#include <grove/term.hpp>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "control.hpp"

namespace internal = grove::dist::internal;
using grove::atom;
using grove::term;

namespace {

term a(const std::string& name) { return term(atom(name)); }

// Both ends of one connection: the sender's record of the peer's cache, the peer's cache itself.
struct link_ends {
  internal::codec_context sender{"sender@127.0.0.1", 0, 1};
  internal::codec_context receiver{"receiver@127.0.0.1", 0, 2};
  internal::sent_atom_cache sent;
  internal::atom_cache cache;

  link_ends() {
    sender.node_slot = grove::remote::node_slot(sender.node_name);
    receiver.node_slot = grove::remote::node_slot(receiver.node_name);
  }

  // A frame as it goes on the wire (length, header, body), checked whole.
  std::string wire(std::initializer_list<term> control, const term* payload) {
    internal::frame_atoms refs;
    std::string body;
    internal::append_frame_body(body, control, payload, sender, refs, 1 << 24);
    std::string out;
    internal::append_frame_head(out, refs, body.size(), sent, sender);
    out += body;
    const auto* u = reinterpret_cast<const unsigned char*>(out.data());
    const std::size_t n = std::size_t{u[0]} << 24 | std::size_t{u[1]} << 16 | std::size_t{u[2]} << 8 | u[3];
    REQUIRE(n == out.size() - 4);
    return out;
  }

  internal::frame read(const std::string& w) { return internal::read_frame(std::string_view(w).substr(4), receiver, &cache); }

  // How many new entries (text) a frame's header sets.
  static std::size_t new_entries(const std::string& w) {
    const auto* u = reinterpret_cast<const unsigned char*>(w.data());
    REQUIRE(u[4] == 131);
    REQUIRE(u[5] == 68);
    const std::size_t n = u[6];
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < n; ++i) fresh += (u[7 + i / 2] >> ((i % 2) * 4)) & 0x8 ? 1 : 0;
    return fresh;
  }
};

}  // namespace

TEST_CASE("a frame's atoms and node names are set in the peer's cache once, then sent by index alone") {
  link_ends e;
  const term from(grove::pid::from_parts(7, 1));  // the sender's own: named by its node name
  const term to(grove::pid::remote(e.receiver.node_slot, 2, 9, 0));
  const term message = term::tuple({a("order"), a("placed"), term::list({a("order"), a("x"), 42}), term::binary("b")});
  const std::string first = e.wire({6, from, to}, &message);
  // order, placed, x, and the two node names: five entries, each once although `order` is there twice.
  CHECK(link_ends::new_entries(first) == 5);
  internal::frame f = e.read(first);
  CHECK(f.control == term::tuple({6, term(grove::pid::remote(e.sender.node_slot, 1, 7, 1)), term(grove::pid::from_parts(9, 0))}));
  CHECK(f.payload == message);
  const std::string second = e.wire({6, from, to}, &message);
  CHECK(link_ends::new_entries(second) == 0);
  CHECK(second.size() + std::string("orderplacedx").size() + e.sender.node_name.size() + e.receiver.node_name.size() <= first.size());
  f = e.read(second);
  CHECK(f.payload == message);
}

TEST_CASE("thousands of distinct atoms through 2,048 entries: replaced entries are set again, never misread") {
  link_ends e;
  const int n = 6000;  // about three times the cache
  std::vector<term> atoms;
  for (int i = 0; i < n; ++i) atoms.push_back(a(fmt::format("atom_cache_test_{}", i)));
  std::size_t fresh = 0;
  // Each frame: ten new atoms, and ten from far back (their entries likely replaced since).
  for (int i = 0; i + 10 <= n; i += 10) {
    std::vector<term> elements;
    for (int k = 0; k < 10; ++k) elements.push_back(atoms[static_cast<std::size_t>(i + k)]);
    for (int k = 0; k < 10 && i >= 3000; ++k) elements.push_back(atoms[static_cast<std::size_t>((i * 7 + k * 131) % i)]);
    const term message = term::list(elements);
    const std::string w = e.wire({2, a(""), term(grove::pid::from_parts(3, 0))}, &message);
    fresh += link_ends::new_entries(w);
    const internal::frame f = e.read(w);
    REQUIRE(f.payload == message);
  }
  CHECK(fresh >= static_cast<std::size_t>(n));  // every atom at least once
}

TEST_CASE("a frame with more atoms than a header names sends the rest as text; long atoms take two length bytes") {
  link_ends e;
  std::vector<term> many;
  for (int i = 0; i < 400; ++i) many.push_back(a(fmt::format("many_{}", i)));
  std::string long_name;
  for (int i = 0; i < 255; ++i) long_name += "\xC3\xA9";  // 255 characters, 510 bytes
  many.push_back(a(long_name));
  many.push_back(a(""));
  const term message = term::tuple(many);
  for (int round = 0; round < 2; ++round) {
    const std::string w = e.wire({2, a(""), term(grove::pid::from_parts(3, 0))}, &message);
    CHECK(static_cast<unsigned char>(w[6]) == 255);  // the header is full; the rest went as text
    const internal::frame f = e.read(w);
    CHECK(f.payload == message);
  }
  // The long atom among the first 255 of a frame: the header's LongAtoms flag, read back.
  const term long_first = term::tuple({a(long_name), a("short"), term::list({a(long_name)})});
  link_ends other;
  const std::string w = other.wire({2, a(""), term(grove::pid::from_parts(3, 0))}, &long_first);
  CHECK(link_ends::new_entries(w) == 4);  // '', the sender's node name, the long one, short
  CHECK(other.read(w).payload == long_first);
}

TEST_CASE("a pid of a third node names that node through the cache; a frame past max_frame_bytes is refused whole") {
  link_ends e;
  const term third(grove::pid::remote(grove::remote::node_slot("third@127.0.0.1"), 5, 11, 2));
  const term message = term::list({third, third, a("third")});
  for (int round = 0; round < 2; ++round) {
    const std::string w = e.wire({2, a(""), term(grove::pid::from_parts(3, 0))}, &message);
    CHECK(e.read(w).payload == message);
  }
  internal::frame_atoms refs;
  std::string body = "kept";
  const term big = term::binary(std::string(2000, 'x'));
  CHECK_THROWS_AS(internal::append_frame_body(body, {2, a(""), term(grove::pid::from_parts(3, 0))}, &big, e.sender, refs, 1000),
                  grove::error);
  CHECK(body == "kept");
}
