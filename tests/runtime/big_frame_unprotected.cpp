// A large stack frame compiled without -fstack-clash-protection (as a library built without it would
// be): tests/CMakeLists.txt builds this file with -fno-stack-clash-protection. Used by overflow_test.cpp.
#include <cstddef>
#include <cstring>

namespace grove_test {

// Puts a `bytes`-byte buffer on the stack and writes only its first `touched` bytes (its lowest
// addresses: the far end from the caller). Without stack-clash probes nothing touches the pages in
// between. Returns a byte of it so that nothing is optimised away.
__attribute__((noinline)) int big_frame_unprotected(std::size_t touched) {
  volatile char buffer[300 * 1024];
  for (std::size_t i = 0; i < touched; ++i) buffer[i] = static_cast<char>(i);
  return buffer[touched / 2];
}

}  // namespace grove_test
