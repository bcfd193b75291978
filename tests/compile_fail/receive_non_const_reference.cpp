// expect: takes its message by non-const reference
#include <string>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](std::string&& s) { s += "!"; });
#else
  grove::receive([](std::string& s) { s += "!"; });
#endif
}
