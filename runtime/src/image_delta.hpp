// image_delta.hpp: a parked process's stack image kept as its difference from a reference image.
//
// Why: a sleeping process is its control block (192 bytes) plus the image of its stack, ~270 bytes for
// one parked in sleep_for (bench/RESULTS.md, "spawn"). Processes parked at the same site in the same
// execution stack have images of the same size that differ in a few words only: their frames hold
// the same return addresses and the same pointers into the slot, and differ where they hold their
// own control block's address, their deadline and their captures. Measured on a million sleepers
// (each image compared with the first of its size in its slot): 11 of 34 words differ, and they hold
// only 3 distinct differences (the control block's address, the deadline, one capture). Kept as
// those differences, the image takes ~40 bytes instead of 272.
//
// Format (encode/decode; the image is a whole number of 8-byte words):
//   - a bitmap, one bit per word, set where the word differs from the reference's;
//   - for each set bit, in order, one byte: k < distinct_memory, "the same difference as the k-th
//     new one"; or new_difference followed by the difference (image word - reference word, modulo
//     2^64) zigzag-encoded as a LEB128 varint (1-10 bytes), which becomes the next k if there is room.
// The pointer of a process to its own control block appears in 5-6 words at a few fixed offsets
// from it: one difference, stored once, serves them all.
//
// Cost: one pass over the image and the reference on eviction, one copy of the reference and a pass
// over the bitmap on resume; the encoder gives up (returns 0) as soon as the encoding passes the
// caller's limit, so an image unlike its reference costs a partial pass and is stored whole.
// Rejected: a general compressor (lz4, zstd): it finds repeats within one buffer, and what repeats
// here is across images, which is what the reference holds; XOR instead of subtraction: a pointer
// to a field (the control block's address + 0x20) differs from its reference by the same amount as
// the base pointer under subtraction, so it costs one byte, but not under XOR once a carry differs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace grove::internal::image_delta {

inline constexpr unsigned distinct_memory = 15;       // new differences remembered per image
inline constexpr unsigned char new_difference = 0xFF;  // the op byte before a varint

// Writes image's difference from ref (both `bytes` long, a multiple of 8) to out and returns its
// length, or returns 0 if bytes is not a multiple of 8 or the encoding would be longer than limit
// (out has room for limit bytes). 0 is never a valid length: the bitmap takes at least one byte.
std::size_t encode(const unsigned char* ref, const unsigned char* image, std::size_t bytes,
                   unsigned char* out, std::size_t limit) noexcept;

// Writes the image that `in` encodes against ref (`bytes` long) to out, and returns the end of the
// encoding in `in`. out must not overlap ref or in.
const unsigned char* decode(const unsigned char* ref, const unsigned char* in, std::size_t bytes,
                            unsigned char* out) noexcept;

}  // namespace grove::internal::image_delta
