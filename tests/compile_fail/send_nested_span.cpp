// expect: refers to memory it does not own
#include <span>
#include <utility>
#include <vector>

#include <grove/message.hpp>

void use(grove::pid to, std::vector<int>& values) {
#ifdef GROVE_EXPECT_OK
  grove::send(to, std::pair<int, std::vector<int>>{1, values});
#else
  grove::send(to, std::pair<int, std::span<int>>{1, values});
#endif
}
