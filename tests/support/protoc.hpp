// protoc.hpp: `protoc --decode_raw` (Debian's protobuf-compiler) as a test oracle for the Perfetto
// files Grove writes: it proves the bytes parse as protobuf and prints each field by number.
// Both fail the test (not skip it) when protoc is missing or rejects the input.
#pragma once

#include <string>
#include <string_view>

namespace grove_test {

// protoc --decode_raw of the file at path, as text.
std::string protoc_decode_raw_file(const std::string& path);
// protoc --decode_raw of these bytes (written to a temporary file first), as text.
std::string protoc_decode_raw(std::string_view bytes);

}  // namespace grove_test
