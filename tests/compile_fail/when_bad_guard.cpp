// expect: guard must be callable with the handler's message
#include <string>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive(grove::when([](int n) { return n > 0; }, [](int) {}));
#else
  grove::receive(grove::when([](const std::string& s) { return s.empty(); }, [](int) {}));
#endif
}
