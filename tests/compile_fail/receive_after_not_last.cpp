// expect: after\(\.\.\.\) must be the last clause
#include <chrono>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](int) {}, grove::after(std::chrono::milliseconds(5), [] {}));
#else
  grove::receive(grove::after(std::chrono::milliseconds(5), [] {}), [](int) {});
#endif
}
