// term.cpp: the atom table and grove::term's operations (grove/term.hpp); the external format is in
// external_format.cpp.
//
// ## The atom table
// Process-wide, as Erlang's: names never leave it, so an atom is a 32-bit index and comparing two is
// one compare. Interning takes a shared lock for the lookup and, for a new name, the exclusive lock.
// Reading an atom's name takes no lock: names live in fixed chunks of 4,096 entries whose addresses
// never change (256 chunks make max_atoms), and an index reaches a reader only after the name it
// indexes was written (through the lock that interned it, or through whatever carried the atom to
// the reader: a message, a join), so the entry's plain read is ordered after its write. The chunk
// pointers themselves are atomics (acquire/release) so a reader that took its index from another
// thread never reads a chunk pointer mid-store.
//
// ## Terms
// A term is a kind byte and 16 bytes: an integer, a float, an atom, a pid or a port in place, or a
// pointer to an immutable counted block (term_block.hpp). Copies share blocks; the last owner frees
// one, and its elements with it.
#include <grove/term.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "term_block.hpp"
#include "utf8.hpp"

namespace grove {

using namespace grove::detail;
using namespace grove::dist::internal;

// ---------------------------------------------------------------------------------------------
// The atom table

namespace {

constexpr std::size_t chunk_bits = 12;
constexpr std::size_t chunk_size = std::size_t{1} << chunk_bits;
constexpr std::size_t chunk_count = atom::max_atoms / chunk_size;

struct atom_table {
  struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::shared_mutex lock;
  std::deque<std::string> storage;  // guarded by lock (appended only: addresses stay)
  std::unordered_map<std::string_view, std::uint32_t, string_hash, std::equal_to<>> index;  // guarded by lock
  std::array<std::atomic<std::string_view*>, chunk_count> chunks{};  // see the file comment
  std::uint32_t next = 0;  // guarded by lock

  atom_table() { add(""); }  // atom 0 is ''

  // Under the exclusive lock.
  std::uint32_t add(std::string_view name) {
    const std::uint32_t i = next;
    std::string_view* chunk = chunks[i >> chunk_bits].load(std::memory_order_relaxed);  // the lock orders writers
    if (!chunk) {
      chunk = new std::string_view[chunk_size];
      chunks[i >> chunk_bits].store(chunk, std::memory_order_release);  // see the file comment
    }
    const std::string& stored = storage.emplace_back(name);
    chunk[i & (chunk_size - 1)] = stored;
    index.emplace(stored, i);
    ++next;
    return i;
  }
};

atom_table& atoms() {
  static atom_table* t = new atom_table();  // never destroyed: atoms outlive every static that holds one
  return *t;
}

}  // namespace

atom::atom(std::string_view name) {
  atom_table& t = atoms();
  {
    std::shared_lock<std::shared_mutex> g(t.lock);
    if (auto it = t.index.find(name); it != t.index.end()) {
      index_ = it->second;
      return;
    }
  }
  const std::int64_t chars = code_points(name);
  if (chars < 0) throw error(errc::bad_argument, "grove::atom: not valid UTF-8");
  if (static_cast<std::size_t>(chars) > max_characters)
    throw error(errc::bad_argument, fmt::format("grove::atom: {} characters (at most {})", chars, max_characters));
  std::unique_lock<std::shared_mutex> g(t.lock);
  if (auto it = t.index.find(name); it != t.index.end()) {
    index_ = it->second;
    return;
  }
  if (t.next >= max_atoms) throw error(errc::process_limit, "grove::atom: the atom table is full");
  index_ = t.add(name);
}

bool atom::exists(std::string_view name, atom& out) noexcept {
  atom_table& t = atoms();
  std::shared_lock<std::shared_mutex> g(t.lock);
  auto it = t.index.find(name);
  if (it == t.index.end()) return false;
  out.index_ = it->second;
  return true;
}

std::string_view atom::name() const noexcept {
  const std::string_view* chunk = atoms().chunks[index_ >> chunk_bits].load(std::memory_order_acquire);
  return chunk[index_ & (chunk_size - 1)];
}

std::size_t atom::count() noexcept {
  atom_table& t = atoms();
  std::shared_lock<std::shared_mutex> g(t.lock);
  return t.next;
}

std::strong_ordering operator<=>(atom a, atom b) noexcept {
  if (a.index_ == b.index_) return std::strong_ordering::equal;
  const int c = a.name().compare(b.name());
  return c < 0 ? std::strong_ordering::less : c > 0 ? std::strong_ordering::greater : std::strong_ordering::equal;
}

// ---------------------------------------------------------------------------------------------
// Ownership

namespace {

bool is_counted(term::kind k) noexcept {
  switch (k) {
    case term::kind::big_integer:
    case term::kind::reference:
    case term::kind::fun:
    case term::kind::tuple:
    case term::kind::map:
    case term::kind::list:
    case term::kind::binary:
    case term::kind::bitstring:
      return true;
    default:
      return false;
  }
}

const atom& true_atom() {
  static const atom a("true");
  return a;
}
const atom& false_atom() {
  static const atom a("false");
  return a;
}

[[noreturn]] void wrong_kind(const char* what, const term& t) {
  throw error(errc::bad_argument, fmt::format("grove::term: {} of {}", what, t.to_string(200)));
}

}  // namespace

term::term(const term& o) noexcept : kind_(o.kind_) {
  std::memcpy(static_cast<void*>(&i_), static_cast<const void*>(&o.i_), sizeof(pid));
  if (is_counted(kind_)) block_->refs.fetch_add(1, std::memory_order_relaxed);  // term_block.hpp
}

term::term(term&& o) noexcept : kind_(o.kind_) {
  std::memcpy(static_cast<void*>(&i_), static_cast<const void*>(&o.i_), sizeof(pid));
  o.kind_ = kind::nil;
}

term& term::operator=(const term& o) noexcept {
  if (this != &o) {
    term copy(o);
    *this = std::move(copy);
  }
  return *this;
}

term& term::operator=(term&& o) noexcept {
  if (this != &o) {
    release();
    kind_ = o.kind_;
    std::memcpy(static_cast<void*>(&i_), static_cast<const void*>(&o.i_), sizeof(pid));
    o.kind_ = kind::nil;
  }
  return *this;
}

term::~term() { release(); }

void term::release() noexcept {
  if (!is_counted(kind_)) return;
  // acq_rel: the last owner sees every other owner's reads finished before it frees (term_block.hpp)
  if (block_->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) {
    kind_ = kind::nil;
    return;
  }
  switch (kind_) {
    case kind::tuple:
    case kind::list: {
      auto* b = static_cast<sequence_block*>(block_);
      for (std::uint32_t i = 0; i < b->count; ++i) b->items()[i].~term();
      free_block(b);
      break;
    }
    case kind::map: {
      auto* b = static_cast<map_block*>(block_);
      for (std::uint32_t i = 0; i < b->count; ++i) std::destroy_at(b->items() + i);
      free_block(b);
      break;
    }
    case kind::reference: free_block(static_cast<reference_block*>(block_)); break;
    default: free_block(static_cast<bytes_block*>(block_)); break;
  }
  kind_ = kind::nil;
}

// ---------------------------------------------------------------------------------------------
// Making terms

term::term(bool value) : kind_(kind::atom) { atom_ = value ? true_atom() : false_atom(); }

term::term(const grove::reference& r) : kind_(kind::reference) {
  auto* b = allocate_block<reference_block>(0);
  b->value = r;
  block_ = b;
}

namespace {

bytes_block* make_bytes(const void* data, std::size_t n) {
  if (n > UINT32_MAX) throw error(errc::bad_argument, "grove::term: more than 4 GiB of bytes");
  auto* b = allocate_block<bytes_block>(n);
  b->count = static_cast<std::uint32_t>(n);
  if (n) std::memcpy(b->data(), data, n);
  return b;
}

sequence_block* make_sequence(std::size_t n) {
  if (n > UINT32_MAX) throw error(errc::bad_argument, "grove::term: more than 2^32 elements");
  return allocate_block<sequence_block>(n * sizeof(term));
}

}  // namespace

term term::tuple(std::initializer_list<term> elements) { return tuple(std::vector<term>(elements)); }

term term::tuple(std::vector<term> elements) {
  sequence_block* b = make_sequence(elements.size());
  for (term& e : elements) ::new (b->items() + b->count++) term(std::move(e));
  return term(kind::tuple, b);
}

term term::list(std::initializer_list<term> elements) { return list(std::vector<term>(elements)); }

term term::list(std::vector<term> elements, term tail) {
  // Flatten a list tail, so a list's tail is never a list (comparison and encoding rely on it).
  if (tail.kind_ == kind::list) {
    const auto* t = static_cast<const sequence_block*>(tail.block_);
    for (std::uint32_t i = 0; i < t->count; ++i) elements.push_back(t->items()[i]);
    term next = t->tail;
    tail = std::move(next);
  }
  if (elements.empty()) return tail;
  sequence_block* b = make_sequence(elements.size());
  for (term& e : elements) ::new (b->items() + b->count++) term(std::move(e));
  b->tail = std::move(tail);
  return term(kind::list, b);
}

term term::map(std::initializer_list<std::pair<term, term>> entries) {
  return map(std::vector<std::pair<term, term>>(entries));
}

term term::map(std::vector<std::pair<term, term>> entries) {
  // Sorted by key; of equal keys the last one given wins (stable sort keeps their order).
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<term, term>> unique;
  unique.reserve(entries.size());
  for (auto& e : entries) {
    if (!unique.empty() && unique.back().first == e.first) {
      unique.back().second = std::move(e.second);
    } else {
      unique.push_back(std::move(e));
    }
  }
  if (unique.size() > UINT32_MAX) throw error(errc::bad_argument, "grove::term: more than 2^32 map entries");
  auto* b = allocate_block<map_block>(unique.size() * sizeof(map_block::entry));
  for (auto& e : unique) ::new (b->items() + b->count++) map_block::entry(std::move(e));
  return term(kind::map, b);
}

term term::binary(std::string_view bytes) { return term(kind::binary, make_bytes(bytes.data(), bytes.size())); }
term term::binary(std::span<const std::uint8_t> bytes) { return term(kind::binary, make_bytes(bytes.data(), bytes.size())); }

term term::bitstring(std::span<const std::uint8_t> bytes, std::uint8_t bits_in_last) {
  if (bits_in_last < 1 || bits_in_last > 8 || bytes.empty())
    throw error(errc::bad_argument, "grove::term::bitstring: 1 to 8 bits in a last byte");
  bytes_block* b = make_bytes(bytes.data(), bytes.size());
  b->bits_in_last = bits_in_last;
  if (bits_in_last == 8) return term(kind::binary, b);
  b->data()[b->count - 1] &= static_cast<std::uint8_t>(0xFF << (8 - bits_in_last));  // unused bits are 0
  return term(kind::bitstring, b);
}

term term::string(std::string_view text) {
  std::vector<term> chars;
  chars.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::int32_t cp = next_code_point(text, i);
    if (cp < 0) throw error(errc::bad_argument, "grove::term::string: not valid UTF-8");
    chars.emplace_back(cp);
  }
  return list(std::move(chars));
}

term term::big_integer(bool negative, std::span<const std::uint8_t> magnitude_le) {
  std::size_t n = magnitude_le.size();
  while (n > 0 && magnitude_le[n - 1] == 0) --n;  // normalised: no high zero bytes
  if (n <= 8) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{magnitude_le[i]} << (8 * i);
    if (!negative && v <= static_cast<std::uint64_t>(INT64_MAX)) return term(static_cast<std::int64_t>(v));
    if (negative && v <= std::uint64_t{1} << 63) return term(static_cast<std::int64_t>(0 - v));
  }
  bytes_block* b = make_bytes(magnitude_le.data(), n);
  b->negative = negative;
  return term(kind::big_integer, b);
}

void term::set_unsigned_big(std::uint64_t v) {
  std::uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<std::uint8_t>(v >> (8 * i));
  term t = big_integer(false, le);
  *this = std::move(t);
}

term term::fun_from_encoding(std::span<const std::uint8_t> encoding) {
  if (encoding.empty()) throw error(errc::bad_argument, "grove::term: an empty fun encoding");
  return term(kind::fun, make_bytes(encoding.data(), encoding.size()));
}

// ---------------------------------------------------------------------------------------------
// Reading

bool term::is_atom(std::string_view name) const noexcept { return kind_ == kind::atom && atom_.name() == name; }

bool term::is_record(std::string_view tag, std::size_t arity) const noexcept {
  return is_tuple(arity) && arity > 0 && elements()[0].is_atom(tag);
}

bool term::is_proper_list() const noexcept {
  return kind_ == kind::nil || (kind_ == kind::list && static_cast<const sequence_block*>(block_)->tail.is_nil());
}

bool term::is_boolean() const noexcept {
  return kind_ == kind::atom && (atom_ == true_atom() || atom_ == false_atom());
}

std::int64_t term::as_int() const {
  if (kind_ != kind::integer) wrong_kind("as_int", *this);
  return i_;
}

double term::as_double() const {
  if (kind_ == kind::floating) return f_;
  if (kind_ == kind::integer) return static_cast<double>(i_);
  if (kind_ == kind::big_integer) {
    const auto* b = static_cast<const bytes_block*>(block_);
    double v = 0;
    for (std::uint32_t i = b->count; i-- > 0;) v = v * 256.0 + b->data()[i];
    return b->negative ? -v : v;
  }
  wrong_kind("as_double", *this);
}

atom term::as_atom() const {
  if (kind_ != kind::atom) wrong_kind("as_atom", *this);
  return atom_;
}

bool term::as_bool() const {
  if (!is_boolean()) wrong_kind("as_bool", *this);
  return atom_ == true_atom();
}

pid term::as_pid() const {
  if (kind_ != kind::pid) wrong_kind("as_pid", *this);
  return pid_;
}

const grove::reference& term::as_reference() const {
  if (kind_ != kind::reference) wrong_kind("as_reference", *this);
  return static_cast<const reference_block*>(block_)->value;
}

const grove::port& term::as_port() const {
  if (kind_ != kind::port) wrong_kind("as_port", *this);
  return port_;
}

std::string_view term::as_binary() const {
  if (kind_ != kind::binary && kind_ != kind::bitstring) wrong_kind("as_binary", *this);
  const auto* b = static_cast<const bytes_block*>(block_);
  return {reinterpret_cast<const char*>(b->data()), b->count};
}

std::uint8_t term::bits_in_last_byte() const noexcept {
  return kind_ == kind::bitstring ? static_cast<const bytes_block*>(block_)->bits_in_last : 8;
}

std::string term::as_string() const {
  if (kind_ == kind::nil) return {};
  if (!is_proper_list()) wrong_kind("as_string", *this);
  std::string out;
  for (const term& e : elements()) {
    if (e.kind_ != kind::integer || !is_code_point(e.i_)) wrong_kind("as_string", *this);
    append_code_point(out, static_cast<std::uint32_t>(e.i_));
  }
  return out;
}

bool term::is_negative() const noexcept {
  if (kind_ == kind::integer) return i_ < 0;
  if (kind_ == kind::big_integer) return static_cast<const bytes_block*>(block_)->negative;
  return false;
}

std::vector<std::uint8_t> term::magnitude() const {
  if (kind_ == kind::big_integer) {
    const auto* b = static_cast<const bytes_block*>(block_);
    return {b->data(), b->data() + b->count};
  }
  if (kind_ != kind::integer) wrong_kind("magnitude", *this);
  std::uint64_t v = i_ < 0 ? 0 - static_cast<std::uint64_t>(i_) : static_cast<std::uint64_t>(i_);
  std::vector<std::uint8_t> out;
  for (; v; v >>= 8) out.push_back(static_cast<std::uint8_t>(v));
  return out;
}

std::span<const std::uint8_t> term::fun_encoding() const {
  if (kind_ != kind::fun) wrong_kind("fun_encoding", *this);
  const auto* b = static_cast<const bytes_block*>(block_);
  return {b->data(), b->count};
}

std::size_t term::size() const noexcept {
  switch (kind_) {
    case kind::tuple:
    case kind::list: return static_cast<const sequence_block*>(block_)->count;
    case kind::map: return static_cast<const map_block*>(block_)->count;
    case kind::binary:
    case kind::bitstring: return static_cast<const bytes_block*>(block_)->count;
    default: return 0;
  }
}

std::span<const term> term::elements() const noexcept {
  if (kind_ != kind::tuple && kind_ != kind::list) return {};
  const auto* b = static_cast<const sequence_block*>(block_);
  return {b->items(), b->count};
}

const term& term::operator[](std::size_t i) const {
  const auto e = elements();
  if (i >= e.size()) wrong_kind(fmt::format("element {}", i).c_str(), *this);
  return e[i];
}

const term& term::tail() const noexcept {
  static const term nil;
  return kind_ == kind::list ? static_cast<const sequence_block*>(block_)->tail : nil;
}

std::span<const std::pair<term, term>> term::entries() const noexcept {
  if (kind_ != kind::map) return {};
  const auto* b = static_cast<const map_block*>(block_);
  return {b->items(), b->count};
}

const term* term::find(const term& key) const noexcept {
  const auto e = entries();
  auto it = std::lower_bound(e.begin(), e.end(), key, [](const auto& entry, const term& k) { return entry.first < k; });
  return it != e.end() && it->first == key ? &it->second : nullptr;
}

// ---------------------------------------------------------------------------------------------
// Equality and order

namespace {

int rank(term::kind k) noexcept {
  switch (k) {
    case term::kind::integer:
    case term::kind::big_integer:
    case term::kind::floating: return 0;
    case term::kind::atom: return 1;
    case term::kind::reference: return 2;
    case term::kind::fun: return 3;
    case term::kind::port: return 4;
    case term::kind::pid: return 5;
    case term::kind::tuple: return 6;
    case term::kind::map: return 7;
    case term::kind::nil: return 8;
    case term::kind::list: return 9;
    case term::kind::binary:
    case term::kind::bitstring: return 10;
  }
  return 11;
}

template <class T>
std::strong_ordering order(const T& a, const T& b) noexcept {
  return a < b ? std::strong_ordering::less : b < a ? std::strong_ordering::greater : std::strong_ordering::equal;
}

// Magnitudes, little-endian without high zero bytes.
std::strong_ordering compare_magnitude(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) noexcept {
  if (a.size() != b.size()) return order(a.size(), b.size());
  for (std::size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return order(a[i], b[i]);
  return std::strong_ordering::equal;
}

std::strong_ordering compare_integers(const term& a, const term& b) {
  if (a.type() == term::kind::integer && b.type() == term::kind::integer) return order(a.as_int(), b.as_int());
  const bool na = a.is_negative(), nb = b.is_negative();
  if (na != nb) return na ? std::strong_ordering::less : std::strong_ordering::greater;
  const std::strong_ordering m = compare_magnitude(a.magnitude(), b.magnitude());
  return na ? 0 <=> m : m;
}

// An integer against a float, by value; equal values put the integer first.
std::strong_ordering compare_integer_float(const term& i, double f) {
  if (std::isnan(f)) return std::strong_ordering::less;
  if (i.type() == term::kind::integer) {
    const std::int64_t v = i.as_int();
    // Exact for |v| < 2^53; beyond, compare in long double, which holds int64 exactly on x86-64.
    const long double lv = static_cast<long double>(v), lf = static_cast<long double>(f);
    if (lv != lf) return lv < lf ? std::strong_ordering::less : std::strong_ordering::greater;
    return std::strong_ordering::less;
  }
  const double d = i.as_double();  // a big integer: beyond int64, doubles are integral there
  if (d != f) return d < f ? std::strong_ordering::less : std::strong_ordering::greater;
  return std::strong_ordering::less;
}

std::strong_ordering compare_numbers(const term& a, const term& b) {
  const bool fa = a.is_float(), fb = b.is_float();
  if (!fa && !fb) return compare_integers(a, b);
  if (fa && fb) return std::strong_order(a.as_double(), b.as_double());
  if (fb) return compare_integer_float(a, b.as_double());
  return 0 <=> compare_integer_float(b, a.as_double());
}

std::strong_ordering compare_bytes(std::string_view a, std::uint8_t bits_a, std::string_view b, std::uint8_t bits_b) {
  const int c = a.compare(b);
  if (c != 0) {
    // A prefix compares smaller; else the first differing byte decides.
    return c < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
  }
  return order(bits_a, bits_b);
}

}  // namespace

std::strong_ordering operator<=>(const term& a, const term& b) noexcept {
  const int ra = rank(a.kind_), rb = rank(b.kind_);
  if (ra != rb) return order(ra, rb);
  switch (a.kind_) {
    case term::kind::integer:
    case term::kind::big_integer:
    case term::kind::floating:
      if (a.kind_ == term::kind::integer && b.kind_ == term::kind::integer) return order(a.i_, b.i_);
      try {
        return compare_numbers(a, b);
      } catch (...) {
        return std::strong_ordering::equal;  // out of memory comparing big integers
      }
    case term::kind::atom: return a.atom_ <=> b.atom_;
    case term::kind::reference: {
      const grove::reference& x = a.as_reference();
      const grove::reference& y = b.as_reference();
      if (x.node != y.node) return order(x.node, y.node);
      if (x.creation != y.creation) return order(x.creation, y.creation);
      if (x.length != y.length) return order(x.length, y.length);
      for (std::size_t i = x.length; i-- > 0;)
        if (x.words[i] != y.words[i]) return order(x.words[i], y.words[i]);
      return std::strong_ordering::equal;
    }
    case term::kind::fun: {
      const auto x = a.fun_encoding(), y = b.fun_encoding();
      return compare_bytes({reinterpret_cast<const char*>(x.data()), x.size()}, 8,
                           {reinterpret_cast<const char*>(y.data()), y.size()}, 8);
    }
    case term::kind::port: {
      const grove::port &x = a.port_, &y = b.port_;
      if (x.node != y.node) return order(x.node, y.node);
      if (x.creation != y.creation) return order(x.creation, y.creation);
      return order(x.id, y.id);
    }
    case term::kind::pid: return a.pid_ <=> b.pid_;
    case term::kind::tuple: {
      const auto x = a.elements(), y = b.elements();
      if (x.size() != y.size()) return order(x.size(), y.size());
      for (std::size_t i = 0; i < x.size(); ++i)
        if (auto c = x[i] <=> y[i]; c != 0) return c;
      return std::strong_ordering::equal;
    }
    case term::kind::map: {
      const auto x = a.entries(), y = b.entries();
      if (x.size() != y.size()) return order(x.size(), y.size());
      for (std::size_t i = 0; i < x.size(); ++i)
        if (auto c = x[i].first <=> y[i].first; c != 0) return c;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (auto c = x[i].second <=> y[i].second; c != 0) return c;
      return std::strong_ordering::equal;
    }
    case term::kind::nil: return std::strong_ordering::equal;
    case term::kind::list: {
      const auto x = a.elements(), y = b.elements();
      const std::size_t n = std::min(x.size(), y.size());
      for (std::size_t i = 0; i < n; ++i)
        if (auto c = x[i] <=> y[i]; c != 0) return c;
      // One list is a prefix of the other: the shorter one's tail (never a list) against the rest of
      // the longer one (a list), or the two tails.
      if (x.size() == y.size()) return a.tail() <=> b.tail();
      if (x.size() < y.size()) return order(rank(a.tail().kind_), rank(term::kind::list));
      return order(rank(term::kind::list), rank(b.tail().kind_));
    }
    case term::kind::binary:
    case term::kind::bitstring:
      return compare_bytes(a.as_binary(), a.bits_in_last_byte(), b.as_binary(), b.bits_in_last_byte());
  }
  return std::strong_ordering::equal;
}

bool operator==(const term& a, const term& b) noexcept {
  if (a.kind_ != b.kind_) return false;
  if (a.kind_ == term::kind::integer) return a.i_ == b.i_;
  if (a.kind_ == term::kind::atom) return a.atom_ == b.atom_;
  if (a.kind_ == term::kind::pid) return a.pid_ == b.pid_;
  if (is_counted(a.kind_) && a.block_ == b.block_) return true;  // the same block
  return (a <=> b) == 0;
}

// ---------------------------------------------------------------------------------------------
// Printing, in Erlang's syntax

namespace {

bool is_reserved(std::string_view s) {
  static constexpr std::string_view words[] = {"after", "and",  "andalso", "band", "begin", "bnot",  "bor",  "bsl",
                                               "bsr",   "bxor", "case",    "catch", "cond", "div",   "else", "end",
                                               "fun",   "if",   "let",     "maybe", "not",  "of",    "or",   "orelse",
                                               "receive", "rem", "try",    "when",  "xor"};
  return std::find(std::begin(words), std::end(words), s) != std::end(words);
}

void append_atom(std::string& out, std::string_view name) {
  bool plain = !name.empty() && name[0] >= 'a' && name[0] <= 'z' && !is_reserved(name);
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '@')) plain = false;
  if (plain) {
    out += name;
    return;
  }
  out += '\'';
  for (char c : name) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out += '\'';
}

bool is_printable(std::span<const term> chars) {
  if (chars.empty()) return false;
  for (const term& c : chars) {
    if (c.type() != term::kind::integer) return false;
    const std::int64_t v = c.as_int();
    if (v < 32 || v > 126) return false;
  }
  return true;
}

constexpr std::size_t max_decimal_bytes = 1024;

std::string big_to_decimal(bool negative, std::vector<std::uint8_t> mag) {
  // Repeated division by 10^9 of a base-256 little-endian number.
  std::string digits;
  while (!mag.empty()) {
    std::uint64_t rem = 0;
    for (std::size_t i = mag.size(); i-- > 0;) {
      const std::uint64_t cur = (rem << 8) | mag[i];
      mag[i] = static_cast<std::uint8_t>(cur / 1'000'000'000);
      rem = cur % 1'000'000'000;
    }
    while (!mag.empty() && mag.back() == 0) mag.pop_back();
    const std::string chunk = std::to_string(rem);
    digits.insert(0, mag.empty() ? chunk : std::string(9 - chunk.size(), '0') + chunk);
  }
  return (negative ? "-" : "") + (digits.empty() ? std::string("0") : digits);
}

std::string format_float(double d) {
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".en") == std::string::npos) return s + ".0";  // 1 -> 1.0 (inf/nan untouched)
  if (auto e = s.find('e'); e != std::string::npos) {
    if (s.find('.') == std::string::npos) s.insert(e, ".0");
    e = s.find('e');
    if (s[e + 1] == '+') s.erase(e + 1, 1);
  }
  return s;
}

// Scalars and binaries: their formatting buffers live in this frame, not in append_term's, whose
// frame is paid once per level of nesting (a 256-deep term printed on a 32 KiB stack under ASan).
[[gnu::noinline]] void append_leaf(std::string& out, const term& t, std::size_t limit) {
  switch (t.type()) {
    case term::kind::integer: out += std::to_string(t.as_int()); return;
    case term::kind::big_integer: {
      // Decimal conversion is quadratic in the size: beyond max_decimal_bytes (2,466 digits) the
      // size is printed instead, so printing a peer's term never takes long.
      std::vector<std::uint8_t> m = t.magnitude();
      if (m.size() > max_decimal_bytes) {
        out += fmt::format("#Integer<{}{} bytes>", t.is_negative() ? "-" : "", m.size());
      } else {
        out += big_to_decimal(t.is_negative(), std::move(m));
      }
      return;
    }
    case term::kind::floating: out += format_float(t.as_double()); return;
    case term::kind::atom: append_atom(out, t.as_atom().name()); return;
    case term::kind::reference: {
      const grove::reference& r = t.as_reference();
      out += fmt::format("#Ref<{}", r.node);
      for (std::size_t i = r.length; i-- > 0;) out += fmt::format(".{}", r.words[i]);
      out += '>';
      return;
    }
    case term::kind::fun: out += fmt::format("#Fun<{} bytes>", t.fun_encoding().size()); return;
    case term::kind::port: out += fmt::format("#Port<{}.{}>", t.as_port().node, t.as_port().id); return;
    case term::kind::pid: out += fmt::format("{}", t.as_pid()); return;
    case term::kind::binary:
    case term::kind::bitstring: {
      const std::string_view bytes = t.as_binary();
      const std::uint8_t bits = t.bits_in_last_byte();
      bool printable = bits == 8 && !bytes.empty();
      for (char c : bytes)
        if (c < 32 || c > 126) printable = false;
      out += "<<";
      if (printable) {
        out += '"';
        for (char c : bytes) {
          if (out.size() >= limit) return;  // a bounded print stops here
          if (c == '"' || c == '\\') out += '\\';
          out += c;
        }
        out += '"';
      } else {
        for (std::size_t i = 0; i < bytes.size(); ++i) {
          if (out.size() >= limit) return;
          if (i) out += ',';
          auto b = static_cast<unsigned char>(bytes[i]);
          if (i + 1 == bytes.size() && bits != 8) {
            out += fmt::format("{}:{}", b >> (8 - bits), bits);
          } else {
            out += std::to_string(b);
          }
        }
      }
      out += ">>";
      return;
    }
    default: return;
  }
}

void append_term(std::string& out, const term& t, std::size_t limit) {
  if (out.size() >= limit) return;
  switch (t.type()) {
    case term::kind::tuple: {
      out += '{';
      bool first = true;
      for (const term& e : t.elements()) {
        if (!first) out += ',';
        first = false;
        append_term(out, e, limit);
      }
      out += '}';
      return;
    }
    case term::kind::map: {
      out += "#{";
      bool first = true;
      for (const auto& [k, v] : t.entries()) {
        if (!first) out += ',';
        first = false;
        append_term(out, k, limit);
        out += " => ";
        append_term(out, v, limit);
      }
      out += '}';
      return;
    }
    case term::kind::nil: out += "[]"; return;
    case term::kind::list: {
      if (t.is_proper_list() && is_printable(t.elements())) {
        out += '"';
        for (const term& c : t.elements()) {
          if (out.size() >= limit) return;
          const char ch = static_cast<char>(c.as_int());
          if (ch == '"' || ch == '\\') out += '\\';
          out += ch;
        }
        out += '"';
        return;
      }
      out += '[';
      bool first = true;
      for (const term& e : t.elements()) {
        if (!first) out += ',';
        first = false;
        append_term(out, e, limit);
      }
      if (!t.tail().is_nil()) {
        out += '|';
        append_term(out, t.tail(), limit);
      }
      out += ']';
      return;
    }
    default: append_leaf(out, t, limit); return;
  }
}

}  // namespace

std::string term::to_string() const {
  std::string out;
  append_term(out, *this, SIZE_MAX);
  return out;
}

std::string term::to_string(std::size_t max_chars) const {
  std::string out;
  append_term(out, *this, max_chars);
  if (out.size() > max_chars) {
    out.resize(max_chars);
    out += "...";
  }
  return out;
}

}  // namespace grove
