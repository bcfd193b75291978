// Restart types (OTP): permanent children are always restarted, transient ones only after an
// abnormal exit, temporary ones never (and their specs are forgotten).
#include "helpers.hpp"

using namespace sup_test;

namespace {

struct exit_with {
  grove::exit_reason reason;
};

// A child that exits with whatever reason it is sent.
sup::child_spec obedient(const std::string& id, sup::restart_type restart) {
  return sup::worker(
      id, [] { grove::receive([](exit_with e) { grove::exit(e.reason); }); }, restart);
}

sup::flags logged(report_log& reports) {
  sup::flags f{.intensity = 10};
  f.logger = reports.logger();
  return f;
}

}  // namespace

TEST_CASE("a permanent child is restarted whatever its exit reason, normal included") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {obedient("p", sup::restart_type::permanent)});
  for (auto why : {grove::exit_reason::normal(), grove::exit_reason::shutdown(), grove::exit_reason("boom")}) {
    grove::pid old = child_pid(s, "p");
    grove::send(old, exit_with{why});
    CHECK(!wait_restarted(s, "p", old).is_null());
  }
  CHECK(reports.count(sup::report_kind::child_crashed) == 3);  // OTP reports every permanent child's exit
  CHECK(reports.count(sup::report_kind::child_restarted) == 3);
}

TEST_CASE("a transient child is restarted after a crash but not after a normal or shutdown exit") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(reports), {obedient("t", sup::restart_type::transient)});
  grove::pid old = child_pid(s, "t");
  grove::send(old, exit_with{grove::exit_reason::exception("bad input")});
  grove::pid second = wait_restarted(s, "t", old);
  REQUIRE(!second.is_null());
  grove::send(second, exit_with{grove::exit_reason::normal()});
  CHECK(grove_test::wait_until([&] { return child_state_of(s, "t") == sup::child_state::stopped; }));
  CHECK(child_pid(s, "t").is_null());
  // It can be started again by hand; then a shutdown exit leaves it stopped too.
  auto third = sup::restart_child(s, "t");
  REQUIRE(third);
  grove::send(*third, exit_with{grove::exit_reason::shutdown()});
  CHECK(grove_test::wait_until([&] { return child_state_of(s, "t") == sup::child_state::stopped; }));
  // OTP's {shutdown, Term}: a user reason named "shutdown", with a payload.
  auto fourth = sup::restart_child(s, "t");
  REQUIRE(fourth);
  grove::send(*fourth, exit_with{grove::exit_reason::user<int>("shutdown", 7)});
  CHECK(grove_test::wait_until([&] { return child_state_of(s, "t") == sup::child_state::stopped; }));
  CHECK(reports.count(sup::report_kind::child_crashed) == 1);
  CHECK(reports.count(sup::report_kind::child_restarted) == 1);
}

TEST_CASE("a temporary child is never restarted and its spec is forgotten") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(
      logged(reports), {obedient("keep", sup::restart_type::permanent), obedient("tmp", sup::restart_type::temporary),
                        obedient("tmp2", sup::restart_type::temporary)});
  auto ref = grove::monitor(child_pid(s, "tmp"));
  grove::send(child_pid(s, "tmp"), exit_with{grove::exit_reason("boom")});
  wait_down(ref);
  auto ref2 = grove::monitor(child_pid(s, "tmp2"));
  grove::send(child_pid(s, "tmp2"), exit_with{grove::exit_reason::normal()});
  wait_down(ref2);
  CHECK(grove_test::wait_until([&] {
    auto c = sup::count_children(s);
    return c && c->specs == 1;
  }));
  auto kids = sup::which_children(s);
  REQUIRE(kids);
  REQUIRE(kids->size() == 1);
  CHECK(kids->front().id == "keep");
  CHECK(reports.count(sup::report_kind::child_crashed) == 1);  // the abnormal exit only
  CHECK(reports.count(sup::report_kind::child_restarted) == 0);
}
