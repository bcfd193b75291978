// expect: a handler is a generic lambda
#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](const int& n) { (void)n; });
#else
  grove::receive([](const auto& n) { (void)n.size(); });
#endif
}
