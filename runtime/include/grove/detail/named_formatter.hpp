// grove/detail/named_formatter.hpp: fmt formatting of Grove's values as text, with fmt/core.h only.
//
//   template <> struct fmt::formatter<grove::errc> : grove::detail::named_formatter<grove::errc> {};
//
// text_formatter formats a string with the string options (width, alignment, precision:
// fmt::format("{:>8}", grove::errc::noproc)). It does not inherit fmt::formatter<string_view>'s
// format(): that is defined in fmt/format.h, which public headers do not include (a program that
// included only Grove's headers failed to link). Instead parse() checks the options as the string
// formatter does and keeps their text, and format() hands both to fmt's compiled vformat_to.
// named_formatter<T> formats a value as the `const char* to_string(T) noexcept` its header declares.
#pragma once

#include <cstddef>

#include <fmt/core.h>

namespace grove::detail {

struct text_formatter {
  char spec[32] = "{}";  // "{:" + the options + "}", or "{}"

  constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) {
    fmt::formatter<fmt::string_view> check;  // the string options, and their errors
    auto end = check.parse(ctx);
    std::size_t n = 0;
    spec[n++] = '{';
    if (ctx.begin() != end) {
      spec[n++] = ':';
      for (auto it = ctx.begin(); it != end; ++it) {
        if (n + 2 >= sizeof spec) ctx.on_error("format options too long for a Grove value");
        spec[n++] = *it;
      }
    }
    spec[n++] = '}';
    spec[n] = '\0';
    return end;
  }

  template <class Ctx>
  auto format_text(fmt::string_view text, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::format_to(ctx.out(), fmt::runtime(spec), text);
  }
};

template <class T>
struct named_formatter : text_formatter {
  template <class Ctx>
  auto format(T value, Ctx& ctx) const -> decltype(ctx.out()) {
    return format_text(to_string(value), ctx);
  }
};

}  // namespace grove::detail
