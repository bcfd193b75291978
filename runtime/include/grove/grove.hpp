// grove/grove.hpp: the one include most applications need.
//
//   #include <grove/grove.hpp>
//   int main() {
//     grove::runtime rt;                                   // one worker per core
//     grove::scoped_process me;                            // this thread can receive replies
//     auto echo = grove::spawn([] {
//       grove::receive([](std::pair<grove::pid, int> m) { grove::send(m.first, m.second); });
//     });
//     grove::send(echo, std::pair{me.pid(), 42});
//     grove::receive([](int n) { fmt::print("{}\n", n); });
//   }
#pragma once

#include <grove/arena.hpp>
#include <grove/blocking.hpp>
#include <grove/duration.hpp>
#include <grove/errc.hpp>
#include <grove/exit_reason.hpp>
#include <grove/introspection.hpp>
#include <grove/io.hpp>
#include <grove/link.hpp>
#include <grove/logger.hpp>
#include <grove/message.hpp>
#include <grove/metrics.hpp>
#include <grove/net.hpp>
#include <grove/pid.hpp>
#include <grove/process.hpp>
#include <grove/registry.hpp>
#include <grove/runtime.hpp>
#include <grove/scoped_process.hpp>
#include <grove/stack_trace.hpp>
#include <grove/timer.hpp>
#include <grove/trace.hpp>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

GROVE_PUBLIC_END
