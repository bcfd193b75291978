// Unit tests for runtime/src/image_delta.hpp: images kept as differences from a reference decode to
// the very bytes they were made from, whatever the differences (none, every word, the extremes of
// 64-bit arithmetic, more distinct ones than the codec remembers), and the encoder keeps to its limit.
// Behaviour only; what it saves is measured by bench/grove/spawn (bytes_per_process).
#include "image_delta.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

namespace delta = grove::internal::image_delta;

std::vector<unsigned char> bytes_of(const std::vector<std::uint64_t>& words) {
  std::vector<unsigned char> b(words.size() * 8);
  std::memcpy(b.data(), words.data(), b.size());
  return b;
}

// Encodes image against ref with the given limit, decodes it, and returns the encoded length (0:
// refused); a refused encoding is not decoded.
std::size_t round_trip(const std::vector<std::uint64_t>& ref_words, const std::vector<std::uint64_t>& image_words,
                       std::size_t limit) {
  const auto ref = bytes_of(ref_words);
  const auto image = bytes_of(image_words);
  std::vector<unsigned char> encoded(limit + 16, 0xAB);
  const std::size_t n = delta::encode(ref.data(), image.data(), image.size(), encoded.data(), limit);
  for (std::size_t i = limit; i < encoded.size(); ++i) REQUIRE(encoded[i] == 0xAB);  // kept to its limit
  if (n == 0) return 0;
  REQUIRE(n <= limit);
  std::vector<unsigned char> out(image.size(), 0xCD);
  const unsigned char* end = delta::decode(ref.data(), encoded.data(), image.size(), out.data());
  CHECK(end == encoded.data() + n);  // what follows an encoding (the shadow under ASan) is found
  CHECK(out == image);
  return n;
}

}  // namespace

TEST_CASE("an image equal to its reference is its bitmap alone") {
  std::vector<std::uint64_t> ref(34, 0x7f33a8613700);
  CHECK(round_trip(ref, ref, 1000) == 5);  // 34 words: 5 bytes of bitmap
}

TEST_CASE("a sleeper's image: repeated differences cost one byte each after the first") {
  // The shape measured on bench/grove/spawn: the control block's address (and +0x20, +0x50) and the
  // deadline repeat across the frames.
  std::vector<std::uint64_t> ref(34);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = 0x7f33a8600000 + i * 0x40;
  std::vector<std::uint64_t> image = ref;
  const std::uint64_t pcb = 152395008, deadline = 673000897;
  for (std::size_t i : {2, 5, 10, 11, 12, 22}) image[i] += pcb;
  for (std::size_t i : {1, 3, 8, 13}) image[i] += deadline;
  image[4] = 0x5588a53de670;
  const std::size_t n = round_trip(ref, image, 1000);
  CHECK(n > 0);
  CHECK(n <= 5 + 11 + 3 * 8);  // bitmap, an op byte per word, three varints
}

TEST_CASE("differences at the extremes of 64-bit arithmetic decode exactly") {
  constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::vector<std::uint64_t> ref{0, max, 0, 1ull << 63, (1ull << 63) - 1, 0x80, 0x7F, 5};
  const std::vector<std::uint64_t> image{max, 0, 1ull << 63, 0, 1ull << 63, 0x7F, 0x80, 5};
  CHECK(round_trip(ref, image, 200) > 0);
}

TEST_CASE("more distinct differences than the codec remembers") {
  std::vector<std::uint64_t> ref(64, 0), image(64);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = (i % 40) + 1;  // 40 distinct, then repeats
  CHECK(round_trip(ref, image, 1000) > 0);
}

TEST_CASE("the encoder refuses what would pass its limit, and odd sizes") {
  std::vector<std::uint64_t> ref(32, 0), image(32);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = 0x0123456789ABCDEFull * (i + 1);
  CHECK(round_trip(ref, image, 128) == 0);  // every word differs, each by ~9 bytes
  CHECK(round_trip(ref, image, 3) == 0);    // not even the bitmap fits
  std::vector<unsigned char> a(20), b(20), out(64);
  CHECK(delta::encode(a.data(), b.data(), a.size(), out.data(), out.size()) == 0);  // not whole words
  CHECK(delta::encode(a.data(), b.data(), 0, out.data(), out.size()) == 0);
}

TEST_CASE("random images round-trip against random references at every limit") {
  std::mt19937_64 rng(20261204);
  for (int round = 0; round < 2000; ++round) {
    const std::size_t words = 1 + rng() % 130;
    std::vector<std::uint64_t> ref(words), image(words);
    for (auto& w : ref) w = rng();
    const int mode = static_cast<int>(rng() % 3);
    for (std::size_t i = 0; i < words; ++i) {
      const unsigned roll = static_cast<unsigned>(rng() % 4);
      if (mode == 0 || roll == 0) image[i] = rng();                    // unrelated
      else if (roll == 1) image[i] = ref[i] + (rng() % 5) * 0x100;     // a few repeated differences
      else image[i] = ref[i];                                         // the same
    }
    const std::size_t limit = rng() % (words * 10 + 8);
    round_trip(ref, image, limit);
  }
}
