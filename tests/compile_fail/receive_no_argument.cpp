// expect: a handler takes no argument
#include <chrono>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](int) {}, grove::after(std::chrono::milliseconds(0), [] {}));
#else
  grove::receive([](int) {}, [] {});
#endif
}
