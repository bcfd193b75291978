// child_spec.cpp: validating flags and child specs (supervisor::validate), and the backoff delay.
//
// Every check runs before anything is spawned, so a bad spec never leaves a half-started tree. The
// rules are OTP's check_flags/check_childspec, in Grove's types: intensity >= 0, period > 0, unique
// ids, a start function, significant only with auto_shutdown and only for transient or temporary
// children, no auto_shutdown for simple_one_for_one (whose only spec is the template), a shutdown
// timeout >= 0. Grove adds: non-empty ids, start_with only on templates, and the backoff's ranges.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "protocol.hpp"

namespace grove::supervisor {

std::chrono::nanoseconds backoff_policy::delay(unsigned n, double u) const noexcept {
  const double first = std::min(static_cast<double>(initial.count()) * 1e6, 1e18);
  // (in double nanoseconds, capped at ~31 years, so that no conversion overflows)
  const double cap = std::min(static_cast<double>(max.count()) * 1e6, 1e18);
  const double grown = first * std::pow(multiplier, static_cast<double>(n > 0 ? n - 1 : 0));  // may be inf
  double d = std::isfinite(grown) ? std::min(grown, cap) : cap;
  d *= 1.0 + jitter * std::clamp(u, -1.0, 1.0);
  d = std::clamp(d, 0.0, cap);
  return std::chrono::nanoseconds(static_cast<std::int64_t>(d));
}

namespace internal {

std::string check_spec(const child_spec& spec, const flags& f, bool is_template) {
  if (spec.id.empty()) return "has an empty id";
  if (is_template) {
    if (!spec.start && !spec.start_with) return "has no start function (start or start_with)";
  } else {
    if (spec.start_with) return "has start_with, which only simple_one_for_one templates take";
    if (!spec.start) return "has no start function";
  }
  if (spec.restart != restart_type::permanent && spec.restart != restart_type::transient &&
      spec.restart != restart_type::temporary)
    return "has an unknown restart type";
  if (spec.type != child_type::worker && spec.type != child_type::supervisor) return "has an unknown child type";
  if (spec.significant && spec.restart == restart_type::permanent)
    return "is permanent and significant: a significant child must be transient or temporary";
  if (spec.significant && f.auto_shutdown == auto_shutdown::never)
    return "is significant, but the supervisor's auto_shutdown is never";
  if (spec.shutdown && spec.shutdown->what() == shutdown_policy::kind::timeout && spec.shutdown->time().count() < 0)
    return fmt::format("has a negative shutdown timeout ({} ms)", spec.shutdown->time().count());
  if (spec.backoff) {
    const backoff_policy& b = *spec.backoff;
    if (b.initial.count() <= 0)
      return fmt::format("has a backoff initial delay of {} ms (must be > 0)", b.initial.count());
    if (b.max < b.initial)
      return fmt::format("has a backoff max ({} ms) below its initial delay ({} ms)", b.max.count(), b.initial.count());
    if (!(b.multiplier >= 1.0) || !std::isfinite(b.multiplier))
      return fmt::format("has a backoff multiplier of {} (must be >= 1)", b.multiplier);
    if (!(b.jitter >= 0.0 && b.jitter <= 1.0))
      return fmt::format("has a backoff jitter of {} (must be in [0, 1])", b.jitter);
    if (b.reset_after.count() < 0)
      return fmt::format("has a negative backoff reset_after ({} ms)", b.reset_after.count());
  }
  return {};
}

}  // namespace internal

problem validate(const flags& f, const std::vector<child_spec>& specs) {
  auto bad_flags = [](std::string m) { return problem{make_error_code(errc::invalid_flags), std::move(m)}; };
  if (f.intensity < 0)
    return bad_flags(fmt::format("invalid supervisor flags: intensity {} (must be >= 0)", f.intensity));
  if (f.period.count() <= 0)
    return bad_flags(fmt::format("invalid supervisor flags: period {} ms (must be > 0)", f.period.count()));
  switch (f.strategy) {
    case strategy::one_for_one:
    case strategy::one_for_all:
    case strategy::rest_for_one:
    case strategy::simple_one_for_one:
      break;
    default:
      return bad_flags("invalid supervisor flags: unknown strategy");
  }
  switch (f.auto_shutdown) {
    case auto_shutdown::never:
    case auto_shutdown::any_significant:
    case auto_shutdown::all_significant:
      break;
    default:
      return bad_flags("invalid supervisor flags: unknown auto_shutdown");
  }
  const bool simple = f.strategy == strategy::simple_one_for_one;
  if (simple && f.auto_shutdown != auto_shutdown::never)
    return bad_flags("invalid supervisor flags: auto_shutdown must be never for simple_one_for_one");
  if (simple && specs.size() != 1)
    return {make_error_code(errc::invalid_child_spec),
            fmt::format("invalid child specs: simple_one_for_one takes exactly one spec (its template), got {}",
                        specs.size())};
  std::unordered_map<std::string_view, std::size_t> seen;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const child_spec& s = specs[i];
    std::string why = internal::check_spec(s, f, simple);
    if (!why.empty())
      return {make_error_code(errc::invalid_child_spec),
              fmt::format("invalid child spec {} of {} ('{}'): {}", i + 1, specs.size(), s.id, why)};
    auto [it, fresh] = seen.emplace(s.id, i);
    if (!fresh)
      return {make_error_code(errc::duplicate_child_id),
              fmt::format("invalid child specs: duplicate id '{}' (specs {} and {} of {})", s.id, it->second + 1, i + 1,
                          specs.size())};
  }
  return {};
}

const char* to_string(restart_type e) noexcept {
  switch (e) {
    case restart_type::permanent: return "permanent";
    case restart_type::transient: return "transient";
    case restart_type::temporary: return "temporary";
  }
  return "unknown";
}

const char* to_string(child_type e) noexcept {
  switch (e) {
    case child_type::worker: return "worker";
    case child_type::supervisor: return "supervisor";
  }
  return "unknown";
}

}  // namespace grove::supervisor
