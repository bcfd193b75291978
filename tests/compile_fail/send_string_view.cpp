// expect: refers to memory it does not own
#include <string>
#include <string_view>

#include <grove/message.hpp>

void use(grove::pid to, std::string_view text) {
#ifdef GROVE_EXPECT_OK
  grove::send(to, std::string(text));
#else
  grove::send(to, text);
#endif
}
