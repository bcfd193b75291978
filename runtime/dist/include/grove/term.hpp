// grove/term.hpp: Erlang terms as a C++ value type, and their external format.
//
//   grove::term req = grove::term::tuple({grove::atom("get"), grove::term(grove::self()), 42});
//   if (req.is_record("get", 3) && req[2].is_integer()) ...
//   std::string bytes = grove::term_to_binary(req);          // Erlang's term_to_binary/1
//   grove::term back = grove::binary_to_term(bytes);          // throws grove::error on bad input
//   fmt::print("{}\n", back);                                 // {get,<0.12.1>,42}
//
// A term is what crosses nodes (grove/dist/node.hpp): a message from an Erlang process arrives as
// one, and an exit reason, a gen_server request or a reply is one on the wire. Every type of the
// external term format has a place: integers of any size, floats, atoms, binaries and bitstrings,
// lists (proper and improper; an Erlang string is a list of code points), tuples, maps, pids
// (grove::pid, local or remote), references, ports, and funs (kept as their encoding: Grove cannot
// call them, but passes them on unchanged).
//
// A term is immutable and cheap to copy: scalars, atoms and pids live in the term itself (24 bytes),
// anything larger in one shared block with an atomic reference count, so a term sent to another
// process shares its data instead of copying it (as Erlang's reference-counted binaries do, but for
// every compound term). Thread-safe as a value: copies may be used from any threads at once.
//
// Equality is Erlang's exact equality (=:=): 1 and 1.0 differ. Ordering is Erlang's term order
// (number < atom < reference < fun < port < pid < tuple < map < nil < list < bitstring), with
// numbers compared by value and an integer before an equal float; std::map<term, ...> works.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include <grove/errc.hpp>
#include <grove/pid.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

namespace dist::internal {
struct term_access;  // the external-format reader builds compound terms and atoms in place
}

// An atom: a name in the process-wide atom table (as Erlang's, never freed, and bounded: past
// max_atoms a new name throws grove::error(errc::process_limit), as Erlang's system_limit). Names are
// UTF-8, at most 255 characters. Comparing atoms compares table indices; ordering compares names.
class atom {
 public:
  static constexpr std::size_t max_atoms = 1'048'576;  // Erlang's default atom table size
  static constexpr std::size_t max_characters = 255;

  atom() noexcept = default;  // the empty atom ''
  // Interns `name`. Throws grove::error(errc::bad_argument) for a name of more than 255 characters or
  // invalid UTF-8, errc::process_limit when the table is full.
  explicit atom(std::string_view name);
  // The atom if it exists already, without adding it (the empty atom if not): for lookups of names
  // that arrive from outside.
  static bool exists(std::string_view name, atom& out) noexcept;

  std::string_view name() const noexcept;
  std::uint32_t index() const noexcept { return index_; }
  static std::size_t count() noexcept;  // atoms in the table

  friend bool operator==(atom a, atom b) noexcept { return a.index_ == b.index_; }
  GROVE_API friend std::strong_ordering operator<=>(atom a, atom b) noexcept;

 private:
  friend struct dist::internal::term_access;
  std::uint32_t index_ = 0;
};

// A reference (make_ref(), a monitor's or an alias's): its node, the node's creation and one to
// five 32-bit words (NEWER_REFERENCE_EXT). node 0 is this node.
struct reference {
  std::uint32_t node = 0;       // a slot of the node table (grove/remote.hpp); 0: this node
  std::uint32_t creation = 0;
  std::uint8_t length = 0;      // words used, 1 to 5
  std::array<std::uint32_t, 5> words{};  // unused words are 0
  friend bool operator==(const reference&, const reference&) noexcept = default;
};

// A port of another node (Grove has no ports of its own): passed on, compared, printed.
struct port {
  std::uint32_t node = 0;
  std::uint32_t creation = 0;
  std::uint64_t id = 0;
  friend bool operator==(const port&, const port&) noexcept = default;
};

namespace detail {
struct term_block;
}

class term {
 public:
  // In Erlang's term order.
  enum class kind : std::uint8_t {
    integer,      // fits in int64
    big_integer,  // any other integer
    floating,
    atom,
    reference,
    fun,
    port,
    pid,
    tuple,
    map,
    nil,          // [] (the empty list)
    list,         // a non-empty list, proper or improper
    binary,       // whole bytes
    bitstring,    // a binary whose last byte is partly used
  };

  term() noexcept : kind_(kind::nil) {}  // []
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<I, char>, int> = 0>
  term(I value) {  // NOLINT: integers are terms
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(std::int64_t)) {
      if (value > static_cast<std::uint64_t>(INT64_MAX)) {
        set_unsigned_big(static_cast<std::uint64_t>(value));
        return;
      }
    }
    kind_ = kind::integer;
    i_ = static_cast<std::int64_t>(value);
  }
  term(double value) noexcept : kind_(kind::floating) { f_ = value; }  // NOLINT
  term(bool value);                                                    // NOLINT: the atoms true and false
  term(grove::atom a) noexcept : kind_(kind::atom) { atom_ = a; }      // NOLINT
  term(grove::pid p) noexcept : kind_(kind::pid) { pid_ = p; }         // NOLINT
  term(const grove::port& p) noexcept : kind_(kind::port) { port_ = p; }  // NOLINT
  term(const grove::reference& r);                                     // NOLINT
  term(const char*) = delete;  // say which: term::binary("..."), grove::atom("..."), term::string("...")

  term(const term& o) noexcept;
  term(term&& o) noexcept;
  term& operator=(const term& o) noexcept;
  term& operator=(term&& o) noexcept;
  ~term();

  // ---- Making compound terms ----
  static term tuple(std::initializer_list<term> elements);
  static term tuple(std::vector<term> elements);
  // A proper list, or an improper one ending in `tail` (which must not be nil for improper lists to
  // exist: list({}, tail) is tail itself).
  static term list(std::initializer_list<term> elements);
  static term list(std::vector<term> elements, term tail = term());
  // Keys are unique (a later equal key replaces an earlier one).
  static term map(std::initializer_list<std::pair<term, term>> entries);
  static term map(std::vector<std::pair<term, term>> entries);
  static term binary(std::string_view bytes);
  static term binary(std::span<const std::uint8_t> bytes);
  // The first bits of `bytes`: (size - 1) * 8 + bits_in_last bits (1 to 8; 8 is a binary).
  static term bitstring(std::span<const std::uint8_t> bytes, std::uint8_t bits_in_last);
  // An Erlang string: the list of the code points of UTF-8 `text` ("" is nil). Throws
  // grove::error(errc::bad_argument) for invalid UTF-8.
  static term string(std::string_view text);
  // An integer of any size: sign and magnitude, little-endian bytes. Normalised: one that fits in
  // int64 is kind::integer.
  static term big_integer(bool negative, std::span<const std::uint8_t> magnitude_le);
  // A fun, from its external encoding (NEW_FUN_EXT or EXPORT_EXT, tag included), as it arrived.
  static term fun_from_encoding(std::span<const std::uint8_t> encoding);

  // ---- Reading ----
  kind type() const noexcept { return kind_; }
  bool is_integer() const noexcept { return kind_ == kind::integer || kind_ == kind::big_integer; }
  bool is_float() const noexcept { return kind_ == kind::floating; }
  bool is_number() const noexcept { return is_integer() || is_float(); }
  bool is_atom() const noexcept { return kind_ == kind::atom; }
  bool is_atom(std::string_view name) const noexcept;
  bool is_pid() const noexcept { return kind_ == kind::pid; }
  bool is_reference() const noexcept { return kind_ == kind::reference; }
  bool is_tuple() const noexcept { return kind_ == kind::tuple; }
  bool is_tuple(std::size_t arity) const noexcept { return kind_ == kind::tuple && size() == arity; }
  // A tuple of `arity` whose first element is the atom `tag` (Erlang's record shape, {tag, ...}).
  bool is_record(std::string_view tag, std::size_t arity) const noexcept;
  bool is_map() const noexcept { return kind_ == kind::map; }
  bool is_nil() const noexcept { return kind_ == kind::nil; }
  bool is_list() const noexcept { return kind_ == kind::nil || kind_ == kind::list; }  // proper or not
  bool is_proper_list() const noexcept;
  bool is_binary() const noexcept { return kind_ == kind::binary; }
  bool is_bitstring() const noexcept { return kind_ == kind::binary || kind_ == kind::bitstring; }
  bool is_boolean() const noexcept;

  // Each throws grove::error(errc::bad_argument) for a term of another kind (as_int also for an
  // integer outside int64).
  std::int64_t as_int() const;
  double as_double() const;  // a float, or an integer converted
  grove::atom as_atom() const;
  bool as_bool() const;
  grove::pid as_pid() const;
  const grove::reference& as_reference() const;
  const grove::port& as_port() const;
  std::string_view as_binary() const;  // a binary's bytes (a bitstring's: whole bytes, last one partial)
  std::uint8_t bits_in_last_byte() const noexcept;  // 8 for a binary, 1-8 for a bitstring
  // A string (a proper list of code points, or nil) as UTF-8; throws bad_argument otherwise.
  std::string as_string() const;
  // A big integer's sign and little-endian magnitude (for kind::integer too, computed).
  bool is_negative() const noexcept;
  std::vector<std::uint8_t> magnitude() const;
  // A fun's encoding, as fun_from_encoding took it.
  std::span<const std::uint8_t> fun_encoding() const;

  // Tuple arity, list length (the proper part), map size, binary bytes; 0 for others.
  std::size_t size() const noexcept;
  // A tuple's or a list's elements (a list's proper part); empty for others.
  std::span<const term> elements() const noexcept;
  const term& operator[](std::size_t i) const;  // throws bad_argument out of range or not a tuple/list
  const term& tail() const noexcept;             // an improper list's tail; nil otherwise
  // A map's entries, sorted by key in term order.
  std::span<const std::pair<term, term>> entries() const noexcept;
  const term* find(const term& key) const noexcept;  // a map's value for key, or nullptr

  GROVE_API friend bool operator==(const term& a, const term& b) noexcept;
  GROVE_API friend std::strong_ordering operator<=>(const term& a, const term& b) noexcept;

  // Erlang's syntax: {ok,[1,2]}, <<"bytes">>, #{a => 1}, <0.5.1>, #Ref<0.1.2.3>, 'quoted atom'. An
  // integer of more than 1,024 bytes prints as #Integer<N bytes> (decimal would take quadratic time).
  std::string to_string() const;
  // The same, cut after max_chars characters (then "..." follows): for reports of terms from outside.
  std::string to_string(std::size_t max_chars) const;

 private:
  friend struct detail::term_block;
  friend struct dist::internal::term_access;
  void release() noexcept;
  void set_unsigned_big(std::uint64_t v);
  explicit term(kind k, detail::term_block* b) noexcept : kind_(k) { block_ = b; }
  const detail::term_block* block() const noexcept { return block_; }

  kind kind_;
  union {
    std::int64_t i_;
    double f_;
    grove::atom atom_;
    grove::pid pid_;
    grove::port port_;
    detail::term_block* block_;  // the compound kinds, big integers and references: counted
  };
};

// The external term format (Erlang's term_to_binary/binary_to_term, version byte 131 first). A
// local pid, or a reference of this node, is written with this node's name and creation
// (grove/remote.hpp: nonode@nohost and 0 outside a cluster); one read with them comes back local.
std::string term_to_binary(const term& t);
// Throws grove::error(errc::bad_argument) with what is wrong and where for anything but one whole,
// well-formed term: truncated or trailing bytes, an unknown tag, a length past the end, invalid
// UTF-8 in an atom, nesting deeper than max_term_depth (or the runtime's stacks allow), a
// compressed term, the atom table full.
term binary_to_term(std::string_view bytes);
// Nesting past this is refused by binary_to_term and by a node reading a peer's frames: reading,
// comparing, printing and freeing a term each recurse once a level, and a process's stack is
// runtime_config::stack_bytes (256 KiB by default). A runtime with smaller stacks reads less deep
// terms (what its stack allows, at least 8 levels).
inline constexpr std::size_t max_term_depth = 256;

}  // namespace grove

template <>
struct fmt::formatter<grove::term> : fmt::formatter<fmt::string_view> {
  template <class Ctx>
  auto format(const grove::term& t, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<fmt::string_view>::format(t.to_string(), ctx);
  }
};
template <>
struct fmt::formatter<grove::atom> : fmt::formatter<fmt::string_view> {
  template <class Ctx>
  auto format(grove::atom a, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<fmt::string_view>::format(grove::term(a).to_string(), ctx);
  }
};

GROVE_PUBLIC_END
