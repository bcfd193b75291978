// auto_shutdown with significant children (OTP 24): the supervisor stops itself when significant
// children end on their own, either any of them or all of them.
#include "helpers.hpp"

using namespace sup_test;

namespace {

struct exit_with {
  grove::exit_reason reason;
};

sup::child_spec significant(const std::string& id, sup::restart_type restart) {
  auto s = sup::worker(
      id, [] { grove::receive([](exit_with e) { grove::exit(e.reason); }); }, restart);
  s.significant = true;
  return s;
}

sup::flags logged(sup::auto_shutdown mode, report_log& reports) {
  sup::flags f{.intensity = 10};
  f.auto_shutdown = mode;
  f.logger = reports.logger();
  return f;
}

}  // namespace

TEST_CASE("any_significant: a significant child that ends normally stops the supervisor") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  grove::pid s = sup::start_link(logged(sup::auto_shutdown::any_significant, reports),
                                 {idle_worker("plain"), significant("job", sup::restart_type::transient)});
  grove::pid plain = child_pid(s, "plain");
  auto ref = grove::monitor(s);
  grove::send(child_pid(s, "job"), exit_with{grove::exit_reason::normal()});
  CHECK(wait_down(ref).is_shutdown());
  CHECK(!grove::is_alive(plain));
  CHECK(reports.count(sup::report_kind::auto_shutdown) == 1);
}

TEST_CASE("a significant transient child that crashes is restarted, not counted as ended") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(sup::auto_shutdown::any_significant, reports),
                                 {significant("job", sup::restart_type::transient)});
  grove::pid old = child_pid(s, "job");
  grove::send(old, exit_with{grove::exit_reason("boom")});
  CHECK(!wait_restarted(s, "job", old).is_null());
  CHECK(grove::is_alive(s));
  CHECK(reports.count(sup::report_kind::auto_shutdown) == 0);
}

TEST_CASE("all_significant: the supervisor stops only when the last significant child has ended") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::trap_exit(true);
  grove::pid s = sup::start_link(logged(sup::auto_shutdown::all_significant, reports),
                                 {idle_worker("plain"), significant("one", sup::restart_type::temporary),
                                  significant("two", sup::restart_type::transient)});
  auto ref = grove::monitor(s);
  auto one = grove::monitor(child_pid(s, "one"));
  grove::send(child_pid(s, "one"), exit_with{grove::exit_reason("boom")});  // temporary: never restarted
  wait_down(one);
  CHECK(grove_test::wait_until([&] {
    auto c = sup::count_children(s);
    return c && c->specs == 2;
  }));
  CHECK(grove::is_alive(s));
  grove::send(child_pid(s, "two"), exit_with{grove::exit_reason::shutdown()});
  CHECK(wait_down(ref).is_shutdown());
  CHECK(reports.count(sup::report_kind::auto_shutdown) == 1);
}

TEST_CASE("a significant child stopped by terminate_child does not trigger auto_shutdown") {
  report_log reports;
  grove_test::runtime_fixture rt;
  grove::scoped_process me;
  grove::pid s = sup::start_link(logged(sup::auto_shutdown::any_significant, reports),
                                 {significant("job", sup::restart_type::transient), idle_worker("plain")});
  CHECK(sup::terminate_child(s, "job") == std::error_code{});
  CHECK(sup::which_children(s));  // still answering
  CHECK(grove::is_alive(s));
  CHECK(reports.count(sup::report_kind::auto_shutdown) == 0);
}
