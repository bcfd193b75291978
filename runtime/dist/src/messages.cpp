// messages.cpp: C++ values as terms and back (grove/dist/messages.hpp), and the references this node
// makes for monitors and aliases.
//
// The registry maps a message type (its descriptor's address, grove/detail/message_node.hpp) to
// the function that makes its term, and a tag atom to the functions that may read a tuple with that
// tag; built-in types are answered before it is consulted. It is read on every remote send and every
// arrival, written at start-up: a shared_mutex, whose shared side costs one RMW.
#include <grove/dist/messages.hpp>

#include <atomic>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <grove/logger.hpp>
#include <grove/remote.hpp>

#include "node_state.hpp"

namespace grove::dist {

using namespace grove::dist::internal;

namespace {

// An exit reason's words are its term's text, cut here: a reason from another node may be any size.
constexpr std::size_t max_reason_chars = 1024;

const atom& a_normal() { static const atom a("normal"); return a; }
const atom& a_shutdown() { static const atom a("shutdown"); return a; }
const atom& a_kill() { static const atom a("kill"); return a; }
const atom& a_killed() { static const atom a("killed"); return a; }
const atom& a_noproc() { static const atom a("noproc"); return a; }
const atom& a_exception() { static const atom a("exception"); return a; }
const atom& a_max_heap_size() { static const atom a("max_heap_size"); return a; }

struct registry {
  // Decoders registered: 0 lets every arrival skip the lock (relaxed: registration happens at
  // start-up, before messages flow; a message racing a registration may miss the new decoder).
  std::atomic<std::size_t> decoders{0};
  std::shared_mutex lock;
  std::unordered_map<const grove::detail::message_type*, detail::to_term_fn> to;  // guarded by lock
  std::unordered_map<std::uint32_t, std::vector<detail::from_term_fn>> from;       // guarded by lock: by tag atom index
};

registry& types() {
  static registry r;
  return r;
}

template <class T>
bool is(const grove::detail::message_node* n) {
  return n->type == grove::detail::type_id<T>();
}
template <class T>
const T& value_of(const grove::detail::message_node* n) {
  return static_cast<const grove::detail::typed_node<T>*>(n)->value;
}

// Integers of every width, as their term.
template <class... I>
std::optional<term> integer_term(const grove::detail::message_node* n) {
  std::optional<term> out;
  ((is<I>(n) ? (out = term(value_of<I>(n)), true) : false) || ...);
  return out;
}

}  // namespace

term to_term(const exit_reason& reason) {
  switch (reason.what_kind()) {
    case exit_reason::kind::normal: return term(a_normal());
    case exit_reason::kind::shutdown: return term(a_shutdown());
    case exit_reason::kind::kill: return term(a_kill());
    case exit_reason::kind::killed: return term(a_killed());
    case exit_reason::kind::noproc: return term(a_noproc());
    case exit_reason::kind::exception: return term::tuple({term(a_exception()), term::binary(reason.text())});
    case exit_reason::kind::max_heap_size: return term::tuple({term(a_max_heap_size()), term::binary(reason.text())});
    case exit_reason::kind::user: break;
  }
  if (const term* t = reason.payload<term>()) return *t;
  try {
    return term(atom(reason.text()));
  } catch (const error&) {
    return term::binary(reason.text());  // a name no atom can hold (over 255 characters)
  }
}

exit_reason to_exit_reason(const term& reason) {
  if (reason.is_atom()) {
    const atom a = reason.as_atom();
    if (a == a_normal()) return exit_reason::normal();
    if (a == a_shutdown()) return exit_reason::shutdown();
    if (a == a_kill()) return exit_reason::kill();
    if (a == a_killed()) return exit_reason::killed();
    if (a == a_noproc()) return exit_reason::noproc();
    return exit_reason::user(std::string(a.name()), reason);
  }
  if (reason.is_tuple() && reason.size() > 0 && reason[0].is_atom())
    return exit_reason::user(std::string(reason[0].as_atom().name()), reason, reason.to_string(max_reason_chars));
  return exit_reason::user(reason.to_string(max_reason_chars), reason);
}

term to_term(const monitor_ref& ref) { return term(monitor_reference(ref.id)); }
term to_term(const alias& a) { return term(alias_reference(a)); }

term to_term(const down& d) {
  static const atom down_tag("DOWN"), process("process");
  term item = d.name.empty() ? term(d.from) : term::tuple({term(atom(d.name)), term(atom(d.node))});
  return term::tuple({term(down_tag), to_term(d.ref), term(process), std::move(item), to_term(d.reason)});
}

term to_term(const exit_signal& e) {
  static const atom exit_tag("EXIT");
  return term::tuple({term(exit_tag), term(e.from), to_term(e.reason)});
}

namespace detail {

void add_message_type(const grove::detail::message_type* type, std::string_view tag, to_term_fn to, from_term_fn from) {
  if (tag.empty()) throw error(errc::bad_argument, "dist::register_message: an empty tag");
  const atom t(tag);
  registry& r = types();
  std::unique_lock<std::shared_mutex> g(r.lock);
  if (r.to.count(type)) throw error(errc::bad_argument, fmt::format("dist::register_message: {} is registered already", type->name()));
  r.to.emplace(type, std::move(to));
  r.from[t.index()].push_back(std::move(from));
  r.decoders.fetch_add(1, std::memory_order_relaxed);  // see registry::decoders
}

}  // namespace detail

}  // namespace grove::dist

namespace grove::dist::internal {

void report(log_level level, std::string text) noexcept {
  try {
    log(log_event{level, log_kind::distribution, {}, {}, {}, std::move(text)});
  } catch (...) {
  }
}

namespace {
constexpr std::uint32_t kind_monitor = 1, kind_alias = 2;
}

reference monitor_reference(std::uint64_t id) {
  reference r;
  r.length = 3;
  r.words = {static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(id >> 32), kind_monitor, 0, 0};
  return r;
}

std::optional<std::uint64_t> monitor_id_of(const reference& r) {
  if (r.node != 0 || r.length != 3 || r.words[2] != kind_monitor) return std::nullopt;
  return std::uint64_t{r.words[1]} << 32 | r.words[0];
}

reference alias_reference(const alias& a) {
  reference r;
  r.length = 5;
  r.words = {static_cast<std::uint32_t>(a.id), static_cast<std::uint32_t>(a.id >> 32), kind_alias, a.owner.index(),
             a.owner.serial()};
  return r;
}

std::optional<alias> alias_of(const reference& r) {
  if (r.node != 0 || r.length != 5 || r.words[2] != kind_alias) return std::nullopt;
  return alias{pid::from_parts(r.words[3], r.words[4]), std::uint64_t{r.words[1]} << 32 | r.words[0]};
}

std::optional<term> wire_term(const grove::detail::message_node* n) {
  using namespace grove::detail;
  if (is<term>(n)) return value_of<term>(n);
  if (is<std::string>(n)) return term::binary(value_of<std::string>(n));
  if (auto i = integer_term<int, long, long long, unsigned, unsigned long, unsigned long long, short, unsigned short,
                            signed char, unsigned char>(n))
    return i;
  if (is<double>(n)) return term(value_of<double>(n));
  if (is<float>(n)) return term(static_cast<double>(value_of<float>(n)));
  if (is<bool>(n)) return term(value_of<bool>(n));
  if (is<pid>(n)) return term(value_of<pid>(n));
  if (is<atom>(n)) return term(value_of<atom>(n));
  if (is<down>(n)) return to_term(value_of<down>(n));
  if (is<exit_signal>(n)) return to_term(value_of<exit_signal>(n));
  registry& r = types();
  dist::detail::to_term_fn fn;
  {
    std::shared_lock<std::shared_mutex> g(r.lock);
    if (auto it = r.to.find(n->type); it != r.to.end()) fn = it->second;
  }
  if (!fn) {
    report(log_level::error, fmt::format("grove::dist: a message of type {} has no term form "
                                         "(grove/dist/messages.hpp: register_message); dropped",
                                         n->type->name()));
    return std::nullopt;
  }
  try {
    return fn(n);
  } catch (const std::exception& e) {
    report(log_level::error, fmt::format("grove::dist: making the term of a {} threw: {}; dropped", n->type->name(), e.what()));
    return std::nullopt;
  }
}

grove::detail::message_node* arrived_message(term t) {
  registry& r = types();
  if (r.decoders.load(std::memory_order_relaxed) != 0 && t.is_tuple() && t.size() > 0 && t[0].is_atom()) {
    std::vector<dist::detail::from_term_fn> readers;
    {
      std::shared_lock<std::shared_mutex> g(r.lock);
      if (auto it = r.from.find(t[0].as_atom().index()); it != r.from.end()) readers = it->second;
    }
    for (auto& read : readers) {
      try {
        if (grove::detail::message_node* n = read(t)) return n;
      } catch (const std::bad_alloc&) {
        throw;
      } catch (...) {
        // A decoder that throws refuses the term; it arrives as a term.
      }
    }
  }
  return grove::detail::make_node<term>(std::move(t));
}

}  // namespace grove::dist::internal
