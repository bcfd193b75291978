// image_delta.cpp: the codec of image_delta.hpp (the design is there).
#include "image_delta.hpp"

#include <cstring>

namespace grove::internal::image_delta {
namespace {

std::uint64_t load(const unsigned char* p) noexcept {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

void store(unsigned char* p, std::uint64_t w) noexcept { std::memcpy(p, &w, sizeof w); }

std::uint64_t zigzag(std::uint64_t d) noexcept {
  return (d << 1) ^ static_cast<std::uint64_t>(static_cast<std::int64_t>(d) >> 63);
}

std::uint64_t unzigzag(std::uint64_t z) noexcept { return (z >> 1) ^ (~(z & 1) + 1); }

std::size_t varint_bytes(std::uint64_t v) noexcept {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

}  // namespace

std::size_t encode(const unsigned char* ref, const unsigned char* image, std::size_t bytes,
                   unsigned char* out, std::size_t limit) noexcept {
  if (bytes % 8 != 0) return 0;
  const std::size_t words = bytes / 8;
  const std::size_t bitmap_bytes = (words + 7) / 8;
  if (bitmap_bytes == 0 || bitmap_bytes > limit) return 0;
  std::memset(out, 0, bitmap_bytes);
  std::size_t pos = bitmap_bytes;
  std::uint64_t seen[distinct_memory];
  unsigned seen_count = 0;
  for (std::size_t i = 0; i < words; ++i) {
    // Skip four equal words at a time: most words of a sleeper's image equal its reference's.
    if (i % 4 == 0 && i + 4 <= words) {
      const unsigned char* r4 = ref + 8 * i;
      const unsigned char* w4 = image + 8 * i;
      if (((load(r4) ^ load(w4)) | (load(r4 + 8) ^ load(w4 + 8)) | (load(r4 + 16) ^ load(w4 + 16)) |
           (load(r4 + 24) ^ load(w4 + 24))) == 0) {
        i += 3;
        continue;
      }
    }
    const std::uint64_t r = load(ref + 8 * i);
    const std::uint64_t w = load(image + 8 * i);
    if (r == w) continue;
    out[i / 8] = static_cast<unsigned char>(out[i / 8] | (1u << (i % 8)));
    const std::uint64_t d = w - r;  // modulo 2^64
    unsigned k = 0;
    while (k < seen_count && seen[k] != d) ++k;
    if (k < seen_count) {
      if (pos + 1 > limit) return 0;
      out[pos++] = static_cast<unsigned char>(k);
      continue;
    }
    std::uint64_t z = zigzag(d);
    if (pos + 1 + varint_bytes(z) > limit) return 0;
    out[pos++] = new_difference;
    while (z >= 0x80) {
      out[pos++] = static_cast<unsigned char>(z | 0x80);
      z >>= 7;
    }
    out[pos++] = static_cast<unsigned char>(z);
    if (seen_count < distinct_memory) seen[seen_count++] = d;
  }
  return pos;
}

const unsigned char* decode(const unsigned char* ref, const unsigned char* in, std::size_t bytes,
                            unsigned char* out) noexcept {
  std::memcpy(out, ref, bytes);
  const std::size_t words = bytes / 8;
  const std::size_t bitmap_bytes = (words + 7) / 8;
  const unsigned char* pos = in + bitmap_bytes;
  std::uint64_t seen[distinct_memory];
  unsigned seen_count = 0;
  for (std::size_t b = 0; b < bitmap_bytes; ++b) {
    unsigned bits = in[b];
    while (bits) {
      const std::size_t i = b * 8 + static_cast<std::size_t>(__builtin_ctz(bits));
      bits &= bits - 1;
      std::uint64_t d;
      const unsigned char op = *pos++;
      if (op == new_difference) {
        std::uint64_t z = 0;
        unsigned shift = 0;
        unsigned char byte;
        do {
          byte = *pos++;
          z |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
          shift += 7;
        } while (byte & 0x80);
        d = unzigzag(z);
        if (seen_count < distinct_memory) seen[seen_count++] = d;
      } else {
        d = seen[op];
      }
      store(out + 8 * i, load(ref + 8 * i) + d);
    }
  }
  return pos;
}

}  // namespace grove::internal::image_delta
