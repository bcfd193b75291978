// expect: a handler takes more than one argument
#include <utility>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](std::pair<int, int> p) { (void)p; });
#else
  grove::receive([](int a, int b) { (void)a, (void)b; });
#endif
}
