// control.cpp: frames of control messages (control.hpp).
#include "control.hpp"

#include <fmt/format.h>

namespace grove::dist::internal {

namespace {
void finish(std::string& out, std::size_t start, std::size_t max_bytes) {
  const std::size_t n = out.size() - start - 4;
  if (n > max_bytes || n > UINT32_MAX) {
    out.resize(start);
    throw error(errc::bad_argument, fmt::format("a message of {} bytes, past max_frame_bytes ({})", n, max_bytes));
  }
  for (int i = 0; i < 4; ++i) out[start + static_cast<std::size_t>(i)] = static_cast<char>(n >> (24 - 8 * i));
}
}  // namespace

void append_frame(std::string& out, std::initializer_list<term> control, const term* payload, const codec_context& ctx,
                  std::size_t max_bytes) {
  const std::size_t start = out.size();
  try {
    out.append(4, '\0');
    out += static_cast<char>(pass_through);
    out += static_cast<char>(version_magic);
    out += static_cast<char>(104);  // SMALL_TUPLE_EXT: control tuples have a few elements
    out += static_cast<char>(control.size());
    for (const term& e : control) encode_term(out, e, ctx);
    if (payload) {
      out += static_cast<char>(version_magic);
      encode_term(out, *payload, ctx);
    }
  } catch (...) {
    out.resize(start);
    throw;
  }
  finish(out, start, max_bytes);
}

std::string make_frame(const term& control, const term* payload, const codec_context& ctx, std::size_t max_bytes) {
  std::string out(4, '\0');
  out += static_cast<char>(pass_through);
  out += static_cast<char>(version_magic);
  encode_term(out, control, ctx);
  if (payload) {
    out += static_cast<char>(version_magic);
    encode_term(out, *payload, ctx);
  }
  finish(out, 0, max_bytes);
  return out;
}

frame read_frame(std::string_view bytes, const codec_context& ctx) {
  if (bytes.empty() || static_cast<std::uint8_t>(bytes[0]) != pass_through)
    throw error(errc::bad_argument, fmt::format("a frame of type {} (only pass-through, 112, was agreed)",
                                                bytes.empty() ? -1 : static_cast<int>(static_cast<std::uint8_t>(bytes[0]))));
  std::size_t pos = 1;
  const auto versioned = [&](term& into) {
    if (pos >= bytes.size() || static_cast<std::uint8_t>(bytes[pos]) != version_magic)
      throw error(errc::bad_argument, fmt::format("a frame's term without its version byte at byte {}", pos));
    ++pos;
    into = decode_term(bytes, pos, ctx);
  };
  frame f;
  versioned(f.control);
  if (!f.control.is_tuple() || f.control.size() == 0 || f.control[0].type() != term::kind::integer)
    throw error(errc::bad_argument, fmt::format("a control message that is not a tagged tuple: {}", f.control.to_string().substr(0, 200)));
  if (pos < bytes.size()) {
    versioned(f.payload);
    f.has_payload = true;
  }
  if (pos != bytes.size()) throw error(errc::bad_argument, fmt::format("{} bytes after a frame's terms", bytes.size() - pos));
  return f;
}

}  // namespace grove::dist::internal
