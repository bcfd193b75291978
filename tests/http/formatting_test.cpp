// fmt prints grove::http's errors by name (this file includes no fmt/format.h).
#include "support/fixture.hpp"

#include <fmt/core.h>

#include <grove/http/message.hpp>

TEST_CASE("HTTP errors print by name with fmt") {
  CHECK(fmt::format("{}", grove::http::errc::closed_early) == "closed_early");
  CHECK(fmt::format("{}", grove::http::errc::bad_message) == "bad_message");
  CHECK(fmt::format("{:>14}", grove::http::errc::bad_url) == "       bad_url");
}
