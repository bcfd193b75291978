// grove::term and the external term format: what OTP writes, both directions against libei (an
// independent implementation of the format, from erlang-dev), and a reader that hostile bytes
// cannot crash (run under AddressSanitizer and UBSan like every test).
#include <doctest/doctest.h>

#include <grove/remote.hpp>
#include <grove/term.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <ei.h>
#include <fmt/format.h>

#include "external_format.hpp"
#include "support/fixture.hpp"

namespace ext = grove::dist::internal;
using grove::atom;
using grove::term;

namespace {

std::string bytes_of(std::initializer_list<int> v) {
  std::string s;
  for (int b : v) s += static_cast<char>(b);
  return s;
}

term a(const char* name) { return term(atom(name)); }

// ---- a seeded generator of terms of every kind ----
class term_generator {
 public:
  explicit term_generator(std::uint64_t seed) : rng_(seed) {}

  term any(int depth = 0) {
    const int pick = static_cast<int>(rng_() % (depth > 3 ? 9 : 14));
    switch (pick) {
      case 0: return term(static_cast<std::int64_t>(rng_() % 256));
      case 1: return term(static_cast<std::int32_t>(rng_()));
      case 2: return term(static_cast<std::int64_t>(rng_()));
      case 3: {  // a big integer of up to 40 bytes
        std::vector<std::uint8_t> m(1 + rng_() % 40);
        for (auto& b : m) b = static_cast<std::uint8_t>(rng_());
        return term::big_integer(rng_() % 2, m);
      }
      case 4: return term(std::ldexp(static_cast<double>(rng_() % 1000000) - 500000, static_cast<int>(rng_() % 60) - 30));
      case 5: return term(atom(pick_atom()));
      case 6: {
        std::string b(rng_() % 40, '\0');
        for (auto& c : b) c = static_cast<char>(rng_());
        return term::binary(b);
      }
      case 7: {
        std::vector<std::uint8_t> b(1 + rng_() % 8);
        for (auto& c : b) c = static_cast<std::uint8_t>(rng_());
        return term::bitstring(b, static_cast<std::uint8_t>(1 + rng_() % 7));
      }
      case 8: return pick_pid();
      case 9: {
        std::vector<term> e(rng_() % 6);
        for (auto& x : e) x = any(depth + 1);
        return term::tuple(std::move(e));
      }
      case 10: {
        std::vector<term> e(rng_() % 6);
        for (auto& x : e) x = any(depth + 1);
        const bool improper = rng_() % 4 == 0 && !e.empty();
        return term::list(std::move(e), improper ? term(atom("tail")) : term());
      }
      case 11: {
        std::vector<std::pair<term, term>> e(rng_() % 5);
        for (auto& [k, v] : e) {
          k = any(depth + 1);
          v = any(depth + 1);
        }
        return term::map(std::move(e));
      }
      case 12: return term::string("héllo wörld");
      default: {
        grove::reference r;
        r.node = grove::remote::node_slot("erl@127.0.0.1");
        r.creation = static_cast<std::uint32_t>(rng_());
        r.length = static_cast<std::uint8_t>(3 + rng_() % 3);
        for (std::uint8_t i = 0; i < r.length; ++i) r.words[i] = static_cast<std::uint32_t>(rng_());
        return term(r);
      }
    }
  }

 private:
  std::string pick_atom() {
    static const char* names[] = {"ok", "error", "undefined", "", "with space", "héllo", "UPPER", "a@b", "true"};
    return names[rng_() % (sizeof names / sizeof *names)];
  }
  term pick_pid() {
    return term(grove::pid::remote(grove::remote::node_slot("erl@127.0.0.1"), static_cast<std::uint32_t>(rng_()),
                                   static_cast<std::uint32_t>(rng_()), static_cast<std::uint32_t>(rng_())));
  }
  std::mt19937_64 rng_;
};

// ---- libei as the oracle: our terms written with ei, ei's reading made into our terms ----

void ei_check(int rc, const char* what) { REQUIRE_MESSAGE(rc == 0, what); }

void ei_write(ei_x_buff& x, const term& t) {
  switch (t.type()) {
    case term::kind::integer: ei_check(ei_x_encode_longlong(&x, t.as_int()), "longlong"); return;
    case term::kind::big_integer: {
      const auto m = t.magnitude();
      erlang_big* big = ei_alloc_big(static_cast<unsigned>(m.size()));
      std::memcpy(big->digits, m.data(), m.size());  // little-endian digits, as on x86-64
      big->is_neg = t.is_negative();
      ei_check(ei_x_encode_big(&x, big), "big");
      ei_free_big(big);
      return;
    }
    case term::kind::floating: ei_check(ei_x_encode_double(&x, t.as_double()), "double"); return;
    case term::kind::atom: {
      const auto n = t.as_atom().name();
      ei_check(ei_x_encode_atom_len_as(&x, n.data(), static_cast<int>(n.size()), ERLANG_UTF8, ERLANG_UTF8), "atom");
      return;
    }
    case term::kind::pid: {
      erlang_pid p{};
      const grove::pid g = t.as_pid();
      std::snprintf(p.node, sizeof p.node, "%s", grove::remote::node_name(g.node()).c_str());
      p.num = g.index();
      p.serial = g.serial();
      p.creation = g.creation();
      ei_check(ei_x_encode_pid(&x, &p), "pid");
      return;
    }
    case term::kind::reference: {
      erlang_ref r{};
      const grove::reference& g = t.as_reference();
      std::snprintf(r.node, sizeof r.node, "%s", grove::remote::node_name(g.node).c_str());
      r.len = g.length;
      for (int i = 0; i < g.length; ++i) r.n[i] = g.words[i];
      r.creation = g.creation;
      ei_check(ei_x_encode_ref(&x, &r), "ref");
      return;
    }
    case term::kind::tuple:
      ei_check(ei_x_encode_tuple_header(&x, static_cast<long>(t.size())), "tuple");
      for (const term& e : t.elements()) ei_write(x, e);
      return;
    case term::kind::map:
      ei_check(ei_x_encode_map_header(&x, static_cast<long>(t.size())), "map");
      for (const auto& [k, v] : t.entries()) {
        ei_write(x, k);
        ei_write(x, v);
      }
      return;
    case term::kind::nil: ei_check(ei_x_encode_empty_list(&x), "nil"); return;
    case term::kind::list:
      ei_check(ei_x_encode_list_header(&x, static_cast<long>(t.size())), "list");
      for (const term& e : t.elements()) ei_write(x, e);
      ei_write(x, t.tail());
      return;
    case term::kind::binary: {
      const auto b = t.as_binary();
      ei_check(ei_x_encode_binary(&x, b.data(), static_cast<int>(b.size())), "binary");
      return;
    }
    case term::kind::bitstring: {
      const auto b = t.as_binary();
      ei_check(ei_x_encode_bitstring(&x, b.data(), 0, (b.size() - 1) * 8 + t.bits_in_last_byte()), "bitstring");
      return;
    }
    default: FAIL("no ei writer for this kind");
  }
}

term ei_read(const char* buf, int& index) {
  int type = 0, size = 0;
  ei_check(ei_get_type(buf, &index, &type, &size), "get_type");
  switch (type) {
    case ERL_SMALL_INTEGER_EXT:
    case ERL_INTEGER_EXT:
    case ERL_SMALL_BIG_EXT:
    case ERL_LARGE_BIG_EXT: {
      long long v = 0;
      int probe = index;
      if (ei_decode_longlong(buf, &probe, &v) == 0) {
        index = probe;
        return term(static_cast<std::int64_t>(v));
      }
      erlang_big* big = ei_alloc_big(static_cast<unsigned>(size));
      ei_check(ei_decode_big(buf, &index, big), "big");
      term t = term::big_integer(big->is_neg, {static_cast<const std::uint8_t*>(big->digits), big->arity});
      ei_free_big(big);
      return t;
    }
    case ERL_FLOAT_EXT:
    case NEW_FLOAT_EXT: {
      double d = 0;
      ei_check(ei_decode_double(buf, &index, &d), "double");
      return term(d);
    }
    case ERL_ATOM_EXT:
    case ERL_SMALL_ATOM_EXT:
    case ERL_ATOM_UTF8_EXT:
    case ERL_SMALL_ATOM_UTF8_EXT: {
      char name[MAXATOMLEN_UTF8];
      ei_check(ei_decode_atom_as(buf, &index, name, sizeof name, ERLANG_UTF8, nullptr, nullptr), "atom");
      return term(atom(name));
    }
    case ERL_PID_EXT:
    case ERL_NEW_PID_EXT: {
      erlang_pid p{};
      ei_check(ei_decode_pid(buf, &index, &p), "pid");
      return term(grove::pid::remote(grove::remote::node_slot(p.node), p.creation, p.num, p.serial));
    }
    case ERL_NEW_REFERENCE_EXT:
    case ERL_NEWER_REFERENCE_EXT: {
      erlang_ref r{};
      ei_check(ei_decode_ref(buf, &index, &r), "ref");
      grove::reference g;
      g.node = grove::remote::node_slot(r.node);
      g.creation = r.creation;
      g.length = static_cast<std::uint8_t>(r.len);
      for (int i = 0; i < r.len; ++i) g.words[i] = r.n[i];
      return term(g);
    }
    case ERL_SMALL_TUPLE_EXT:
    case ERL_LARGE_TUPLE_EXT: {
      int arity = 0;
      ei_check(ei_decode_tuple_header(buf, &index, &arity), "tuple");
      std::vector<term> e;
      for (int i = 0; i < arity; ++i) e.push_back(ei_read(buf, index));
      return term::tuple(std::move(e));
    }
    case ERL_MAP_EXT: {
      int arity = 0;
      ei_check(ei_decode_map_header(buf, &index, &arity), "map");
      std::vector<std::pair<term, term>> e;
      for (int i = 0; i < arity; ++i) {
        term k = ei_read(buf, index);
        term v = ei_read(buf, index);
        e.emplace_back(std::move(k), std::move(v));
      }
      return term::map(std::move(e));
    }
    case ERL_NIL_EXT:
    case ERL_LIST_EXT: {
      int arity = 0;
      ei_check(ei_decode_list_header(buf, &index, &arity), "list");
      if (arity == 0) return term();
      std::vector<term> e;
      for (int i = 0; i < arity; ++i) e.push_back(ei_read(buf, index));
      term tail = ei_read(buf, index);
      return term::list(std::move(e), std::move(tail));
    }
    case ERL_STRING_EXT: {
      std::string s(static_cast<std::size_t>(size) + 1, '\0');
      ei_check(ei_decode_string(buf, &index, s.data()), "string");
      std::vector<term> e;
      for (int i = 0; i < size; ++i) e.emplace_back(static_cast<unsigned char>(s[static_cast<std::size_t>(i)]));
      return term::list(std::move(e));
    }
    case ERL_BINARY_EXT: {
      std::string b(static_cast<std::size_t>(size), '\0');
      long len = 0;
      ei_check(ei_decode_binary(buf, &index, b.data(), &len), "binary");
      return term::binary(b);
    }
    case ERL_BIT_BINARY_EXT: {
      const char* p = nullptr;
      unsigned int offs = 0;
      size_t bits = 0;
      ei_check(ei_decode_bitstring(buf, &index, &p, &offs, &bits), "bitstring");
      REQUIRE(offs == 0);
      const std::size_t n = (bits + 7) / 8;
      const auto last = static_cast<std::uint8_t>(bits % 8 == 0 ? 8 : bits % 8);
      return term::bitstring({reinterpret_cast<const std::uint8_t*>(p), n}, last);
    }
    default: FAIL("ei type " << type); return term();
  }
}

term decode(const std::string& bytes, const ext::codec_context& ctx = {}) {
  REQUIRE(!bytes.empty());
  REQUIRE(static_cast<std::uint8_t>(bytes[0]) == 131);
  std::size_t pos = 1;
  term t = ext::decode_term(bytes, pos, ctx);
  REQUIRE(pos == bytes.size());
  return t;
}

std::string encode(const term& t, const ext::codec_context& ctx = {}) {
  std::string out(1, static_cast<char>(131));
  ext::encode_term(out, t, ctx);
  return out;
}

// The message of the grove::error decoding `bytes` throws ("" if it decodes).
std::string decode_error(const std::string& bytes) {
  try {
    (void)grove::binary_to_term(bytes);
    return "";
  } catch (const grove::error& e) {
    CHECK(e.code() == grove::errc::bad_argument);
    return e.what();
  }
}

}  // namespace

TEST_CASE("term_to_binary writes the bytes OTP writes (term_to_binary(T, [{minor_version, 2}]))") {
  using grove::term_to_binary;
  CHECK(term_to_binary(term::tuple({a("ok"), term::list({1, 2, 3}), term::binary("hi"), -5, 3.5})) ==
        bytes_of({131, 104, 5, 119, 2, 111, 107, 107, 0, 3, 1, 2, 3, 109, 0, 0, 0, 2, 104, 105, 98, 255, 255, 255, 251, 70, 64, 12, 0, 0, 0, 0, 0, 0}));
  CHECK(term_to_binary(term::map({{term::binary("b"), term::list({a("x")}, a("y"))}, {a("a"), 1}})) ==
        bytes_of({131, 116, 0, 0, 0, 2, 119, 1, 97, 97, 1, 109, 0, 0, 0, 1, 98, 108, 0, 0, 0, 1, 119, 1, 120, 119, 1, 121}));
  const std::uint8_t nine_ff[] = {255, 255, 255, 255, 255, 255, 255, 255, 255};
  CHECK(term_to_binary(term::big_integer(false, nine_ff)) == bytes_of({131, 110, 9, 0, 255, 255, 255, 255, 255, 255, 255, 255, 255}));
  CHECK(term_to_binary(term(-300)) == bytes_of({131, 98, 255, 255, 254, 212}));
  CHECK(term_to_binary(term(70000)) == bytes_of({131, 98, 0, 1, 17, 112}));
  CHECK(term_to_binary(term()) == bytes_of({131, 106}));
  CHECK(term_to_binary(term::binary("")) == bytes_of({131, 109, 0, 0, 0, 0}));
  const std::uint8_t bits[] = {1, 2 << 5};
  CHECK(term_to_binary(term::bitstring(bits, 3)) == bytes_of({131, 77, 0, 0, 0, 2, 3, 1, 64}));
  CHECK(term_to_binary(term::tuple({})) == bytes_of({131, 104, 0}));
  CHECK(term_to_binary(term::list({a("a")}, a("b"))) == bytes_of({131, 108, 0, 0, 0, 1, 119, 1, 97, 119, 1, 98}));
  CHECK(term_to_binary(a("héllo")) == bytes_of({131, 119, 6, 104, 195, 169, 108, 108, 111}));
  CHECK(term_to_binary(term(1.0e300)) == bytes_of({131, 70, 126, 55, 228, 60, 136, 0, 117, 156}));
  CHECK(term_to_binary(term::list({256, 1000})) == bytes_of({131, 108, 0, 0, 0, 2, 98, 0, 0, 1, 0, 98, 0, 0, 3, 232, 106}));
  CHECK(term_to_binary(term::list({1, 2, 3, 300})) == bytes_of({131, 108, 0, 0, 0, 4, 97, 1, 97, 2, 97, 3, 98, 0, 0, 1, 44, 106}));
  CHECK(term_to_binary(term(INT64_MIN)) == bytes_of({131, 110, 8, 1, 0, 0, 0, 0, 0, 0, 0, 128}));
  CHECK(term_to_binary(term(std::uint64_t{1} << 63)) == bytes_of({131, 110, 8, 0, 0, 0, 0, 0, 0, 0, 0, 128}));
  CHECK(term_to_binary(term::string("héllo")) == bytes_of({131, 107, 0, 5, 104, 233, 108, 108, 111}));
  std::vector<term> many;
  for (int i = 1; i <= 256; ++i) many.emplace_back(i);
  const std::string large = term_to_binary(term::tuple(many));
  CHECK(large.substr(0, 8) == bytes_of({131, 105, 0, 0, 1, 0, 97, 1}));
}

TEST_CASE("binary_to_term reads OTP's older forms: Latin-1 atoms, PID_EXT, FLOAT_EXT, REFERENCE_EXT") {
  CHECK(grove::binary_to_term(bytes_of({131, 100, 0, 5, 104, 233, 108, 108, 111})) == a("héllo"));  // ATOM_EXT, Latin-1
  CHECK(grove::binary_to_term(bytes_of({131, 115, 2, 111, 107})) == a("ok"));                       // SMALL_ATOM_EXT
  std::string f = bytes_of({131, 99});
  std::string digits = "1.50000000000000000000e+00";
  digits.resize(31, '\0');
  CHECK(grove::binary_to_term(f + digits) == term(1.5));
  const term p = grove::binary_to_term(bytes_of({131, 103, 100, 0, 5, 97, 64, 98, 46, 99, 0, 0, 0, 9, 0, 0, 0, 1, 2}));
  REQUIRE(p.is_pid());
  CHECK(p.as_pid() == grove::pid::remote(grove::remote::node_slot("a@b.c"), 2, 9, 1));
  const term r = grove::binary_to_term(bytes_of({131, 101, 100, 0, 3, 97, 64, 98, 0, 0, 0, 7, 1}));
  REQUIRE(r.is_reference());
  CHECK(r.as_reference().length == 1);
  CHECK(r.as_reference().words[0] == 7);
}

TEST_CASE("what libei writes, Grove reads as the same term; what Grove writes, libei reads as the same term") {
  ei_init();
  term_generator gen(20261203);
  const int n = 400 * static_cast<int>(grove_test::stress_scale());
  for (int i = 0; i < n; ++i) {
    const term t = gen.any();
    // ei → Grove
    ei_x_buff x;
    ei_x_new_with_version(&x);
    ei_write(x, t);
    const std::string from_ei(x.buff, static_cast<std::size_t>(x.index));
    ei_x_free(&x);
    const term read = decode(from_ei);
    CHECK_MESSAGE(read == t, t.to_string() << " read back as " << read.to_string());
    // Grove → ei
    const std::string ours = encode(t);
    int index = 0, version = 0;
    ei_check(ei_decode_version(ours.data(), &index, &version), "version");
    const term by_ei = ei_read(ours.data(), index);
    CHECK(index == static_cast<int>(ours.size()));
    CHECK_MESSAGE(by_ei == t, t.to_string() << " read by ei as " << by_ei.to_string());
  }
}

TEST_CASE("this node's pids, references and ports come back local; another incarnation's stay remote") {
  ext::codec_context ctx;
  ctx.node_name = "grove@127.0.0.1";
  ctx.node_slot = grove::remote::node_slot(ctx.node_name);
  ctx.creation = 1234;
  const grove::pid local = grove::pid::from_parts(77, 3);
  CHECK(decode(encode(term(local), ctx), ctx).as_pid() == local);
  grove::reference r;
  r.length = 3;
  r.words = {1, 2, 3, 0, 0};
  CHECK(decode(encode(term(r), ctx), ctx).as_reference() == r);
  // Read by a later incarnation of the same node: a pid of a dead incarnation, remote.
  ext::codec_context later = ctx;
  later.creation = 1235;
  const grove::pid old = decode(encode(term(local), ctx), later).as_pid();
  CHECK(old.is_remote());
  CHECK(old.node() == ctx.node_slot);
  CHECK(old.creation() == 1234);
  CHECK(old.index() == 77);
  CHECK(old.serial() == 3);
  // A remote pid goes out under its own node's name and creation.
  const grove::pid far = grove::pid::remote(grove::remote::node_slot("erl@127.0.0.1"), 9, 40, 2);
  const std::string bytes = encode(term(far), ctx);
  CHECK(bytes.find("erl@127.0.0.1") != std::string::npos);
  CHECK(decode(bytes, ctx).as_pid() == far);
}

TEST_CASE("Erlang's term order and exact equality") {
  // number < atom < reference < fun < port < pid < tuple < map < nil < list < bitstring
  grove::reference r;
  r.length = 1;
  const term ordered[] = {term(-1),
                          term(1),
                          term(1.5),
                          a("a"),
                          term(r),
                          term::fun_from_encoding(std::vector<std::uint8_t>{113, 119, 1, 109, 119, 1, 102, 97, 0}),
                          term(grove::port{}),
                          term(grove::pid::from_parts(1, 1)),
                          term::tuple({}),
                          term::map({}),
                          term(),
                          term::list({1}),
                          term::binary("")};
  for (std::size_t i = 0; i + 1 < std::size(ordered); ++i)
    CHECK_MESSAGE(ordered[i] < ordered[i + 1], ordered[i].to_string() << " < " << ordered[i + 1].to_string());
  CHECK(term(1) != term(1.0));  // =:=
  CHECK(term(1) < term(1.0));   // equal values: the integer first
  CHECK(term(2) > term(1.5));
  const std::uint8_t big[] = {0, 0, 0, 0, 0, 0, 0, 0, 1};  // 2^64
  CHECK(term(INT64_MAX) < term::big_integer(false, big));
  CHECK(term::big_integer(true, big) < term(INT64_MIN));
  CHECK(term::tuple({1, 2}) < term::tuple({0, 0, 0}));    // by size first
  CHECK(term::list({1, 2}) < term::list({1, 2, 3}));      // a prefix first
  CHECK(term::list({1}, a("t")) < term::list({1, 2}));     // [1|t] < [1,2]: atom < list
  CHECK(term::binary("ab") < term::binary("b"));
  // A map's keys are unique (the last wins) and kept in term order.
  const term m = term::map({{a("b"), 1}, {a("a"), 2}, {a("b"), 3}});
  REQUIRE(m.size() == 2);
  CHECK(m.entries()[0].first == a("a"));
  CHECK(*m.find(a("b")) == term(3));
  CHECK(m.find(term(1)) == nullptr);
  std::map<term, int> by_term{{term(1.0), 1}, {term(1), 2}};
  CHECK(by_term.size() == 2);
}

TEST_CASE("terms print in Erlang's syntax and read their parts back") {
  const grove::pid p = grove::pid::from_parts(5, 1);
  const term t = term::tuple({a("ok"), term::list({1, 2}), term::binary("hi"), term::string("abc"), p, a("Quoted atom"),
                              term::map({{a("k"), 1.0}}), term::list({1}, a("t")), a("case"), term(-2.5e-10)});
  CHECK(t.to_string() == "{ok,[1,2],<<\"hi\">>,\"abc\",<0.5.1>,'Quoted atom',#{k => 1.0},[1|t],'case',-2.5e-10}");
  CHECK(fmt::format("{}", t[0]) == "ok");
  const std::uint8_t big[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};  // 2^80
  CHECK(term::big_integer(true, big).to_string() == "-1208925819614629174706176");
  CHECK(t.is_record("ok", 10));
  CHECK(!t.is_record("error", 10));
  CHECK(t[3].as_string() == "abc");
  CHECK(term::string("héllo").as_string() == "héllo");
  CHECK(t[4].as_pid() == p);
  CHECK(term(true).as_bool());
  CHECK_THROWS_AS(t.as_int(), grove::error);
  CHECK_THROWS_AS(t[10], grove::error);
  CHECK_THROWS_AS(atom(std::string(256, 'x')), grove::error);
  CHECK_THROWS_AS(atom("\xff"), grove::error);
  CHECK(atom(std::string(255, 'x')).name().size() == 255);
  CHECK(term(std::uint64_t{UINT64_MAX}).type() == term::kind::big_integer);
  CHECK(term(std::uint64_t{UINT64_MAX}).to_string() == "18446744073709551615");
  // Copies share: a 1 MiB binary copied a thousand times is still one block.
  const term big_binary = term::binary(std::string(1 << 20, 'x'));
  std::vector<term> copies(1000, big_binary);
  CHECK(copies[999].as_binary().data() == big_binary.as_binary().data());
}

TEST_CASE("malformed input is refused with what is wrong and where, never read past its end") {
  CHECK(decode_error(bytes_of({})).find("no version byte") != std::string::npos);
  CHECK(decode_error(bytes_of({130, 106})).find("no version byte") != std::string::npos);
  CHECK(decode_error(bytes_of({131})).find("1 bytes wanted, 0 left") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 106, 106})).find("1 bytes after the term") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 200})).find("unknown tag 200 at byte 1") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 108, 255, 255, 255, 255, 106})).find("a list longer than") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 105, 255, 255, 255, 255})).find("a tuple longer than") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 116, 0, 0, 1, 0, 106, 106})).find("a map longer than") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 109, 0, 0, 0, 9, 1, 2})).find("9 bytes wanted, 2 left") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 82, 1})).find("atom cache") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 80, 0, 0, 0, 1, 120, 156})).find("compressed") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 119, 1, 0xff})).find("UTF-8") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 70, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0})).find("not finite") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 77, 0, 0, 0, 1, 9, 0})).find("bits in its last") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 90, 0, 6, 119, 1, 97, 0, 0, 0, 0})).find("a reference of 6 words") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 88, 97, 1})).find("a node name of tag 97") != std::string::npos);
  CHECK(decode_error(bytes_of({131, 110, 1, 2, 0})).find("sign 2") != std::string::npos);
  // Nesting: max_term_depth levels read; one more is refused (no stack overflow either way).
  std::string deep(1, static_cast<char>(131));
  for (std::size_t i = 0; i < grove::max_term_depth; ++i) deep += bytes_of({104, 1});
  deep += bytes_of({106});
  CHECK(decode_error(deep) == "");
  std::string deeper(1, static_cast<char>(131));
  for (std::size_t i = 0; i <= grove::max_term_depth; ++i) deeper += bytes_of({104, 1});
  deeper += bytes_of({106});
  CHECK(decode_error(deeper).find("nested deeper than 256") != std::string::npos);
}

namespace {
// {{{...[]...}}} nested `levels` deep, as bytes.
std::string nested(std::size_t levels) {
  std::string deep(1, static_cast<char>(131));
  for (std::size_t i = 0; i < levels; ++i) deep += bytes_of({104, 1});
  return deep + bytes_of({106});
}

struct deepest_read {
  std::size_t depth = 0;        // the deepest nesting binary_to_term accepted on this process's stack
  std::size_t printed = 0;      // the size of that term printed
  bool round_trips = false;     // it compared equal to itself re-encoded and decoded
  std::string refusal;          // why one level more was refused
};

// On a runtime whose processes have `stack_bytes` of stack: the deepest term a process reads, then
// prints, compares and frees on that stack. An overflow would crash the test, not fail a check.
deepest_read deepest_read_on(std::size_t stack_bytes) {
  grove_test::runtime_fixture rt(grove::runtime_config{.stack_bytes = stack_bytes});
  grove::scoped_process me;
  const grove::pid main_pid = me.pid();
  grove::spawn([main_pid] {
    deepest_read r;
    for (std::size_t d = grove::max_term_depth + 1; d > 0; --d) {
      try {
        const term t = grove::binary_to_term(nested(d));
        r.depth = d;
        r.printed = t.to_string().size();
        r.round_trips = t == grove::binary_to_term(grove::term_to_binary(t));
        break;
      } catch (const grove::error& e) {
        if (r.refusal.empty()) r.refusal = e.what();
      }
    }
    grove::send(main_pid, r);
  });
  return grove::receive([](deepest_read r) { return r; }, grove::after(grove_test::patience, [] { return deepest_read{}; }));
}
}  // namespace

TEST_CASE("inside a process, the deepest term binary_to_term reads can be printed, compared and freed; smaller stacks read less deep") {
  // 1 MiB: every level max_term_depth allows, in every build; one more is refused by the limit.
  const deepest_read big = deepest_read_on(1024 * 1024);
  CHECK(big.depth == grove::max_term_depth);
  CHECK(big.printed == 2 * big.depth + 2);  // {{...[]...}}
  CHECK(big.round_trips);
  CHECK_MESSAGE(big.refusal.find("nested deeper than 256") != std::string::npos, big.refusal);
  // The 256 KiB default (all 256 levels at -O2; fewer under the sanitizers, whose frames are larger)
  // and 32 KiB: the limit follows the stack, and what is read can still be used.
  for (std::size_t stack : {std::size_t{256 * 1024}, std::size_t{32 * 1024}}) {
    CAPTURE(stack);
    const deepest_read r = deepest_read_on(stack);
    CHECK(r.depth >= 8);
    CHECK(r.printed == 2 * r.depth + 2);
    CHECK(r.round_trips);
    CHECK(r.refusal.find("nested deeper than") != std::string::npos);
    if (stack == 32 * 1024) CHECK(r.depth < grove::max_term_depth);
  }
}

TEST_CASE("printing a term from outside is bounded: huge integers print their size, and to_string(n) stops at n") {
  std::vector<std::uint8_t> mag(1 << 20, 0xAB);  // a 1 MiB integer: decimal would take minutes
  const term huge = term::big_integer(true, mag);
  CHECK(huge.to_string() == "#Integer<-1048576 bytes>");
  const term big_binary = term::binary(std::string(1 << 20, 'x'));
  const std::string cut = term::tuple({a("ok"), big_binary}).to_string(50);
  CHECK(cut.size() == 53);
  CHECK(cut.substr(50) == "...");
  CHECK(cut.rfind("{ok,<<\"xxx", 0) == 0);
  CHECK(term(42).to_string(50) == "42");
}

TEST_CASE("random bytes and mutated valid terms either read as a term or are refused, never crash") {
  // Sized by GROVE_STRESS_SCALE; bench/ and fuzzers run it longer.
  const int n = 20000 * static_cast<int>(grove_test::stress_scale());
  std::mt19937_64 rng(4369);
  term_generator gen(25);
  int accepted = 0, refused = 0;
  for (int i = 0; i < n; ++i) {
    std::string bytes;
    if (i % 2 == 0) {
      bytes.resize(1 + rng() % 64);
      for (auto& c : bytes) c = static_cast<char>(rng());
      bytes[0] = static_cast<char>(131);
    } else {
      bytes = grove::term_to_binary(gen.any());
      const int mutations = 1 + static_cast<int>(rng() % 4);
      for (int m = 0; m < mutations && bytes.size() > 1; ++m) {
        const std::size_t at = 1 + rng() % (bytes.size() - 1);
        switch (rng() % 4) {
          case 0: bytes[at] = static_cast<char>(rng()); break;                  // flip a byte
          case 1: bytes.resize(at); break;                                     // truncate
          case 2: bytes.insert(at, 1, static_cast<char>(rng())); break;        // insert
          default: bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));  // flip a bit
        }
      }
    }
    try {
      const term t = grove::binary_to_term(bytes);
      (void)t.to_string();
      (void)(t == t);
      ++accepted;
    } catch (const grove::error& e) {
      CHECK(e.code() == grove::errc::bad_argument);
      ++refused;
    }
  }
  CHECK(accepted + refused == n);
  CHECK(accepted > 0);  // mutations that keep a term well-formed exist (a flipped integer byte)
  CHECK(refused > 0);
}
