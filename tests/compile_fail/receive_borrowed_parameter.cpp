// expect: which send refuses, so no such message can arrive
#include <string>
#include <string_view>

#include <grove/message.hpp>

void use() {
#ifdef GROVE_EXPECT_OK
  grove::receive([](const std::string& s) { (void)s; });  // what send(pid, "literal") sends
#else
  grove::receive([](std::string_view s) { (void)s; });
#endif
}
