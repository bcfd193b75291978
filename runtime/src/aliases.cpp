// aliases.cpp: process aliases (grove/message.hpp). An alias is an id in its owner's active set; a
// message sent to it travels as an alias_delivery signal, and the owner keeps the message only if
// the alias is still active when it acts on the signal (signal_handling.cpp), so a reply that comes
// after the owner stopped waiting is dropped at the door.
#include <grove/errc.hpp>
#include <grove/message.hpp>

#include "delivery.hpp"
#include "exit_protocol.hpp"
#include "receive.hpp"
#include "remote.hpp"
#include "signal_nodes.hpp"
#include "tracer.hpp"

namespace grove {

using namespace grove::internal;

alias make_alias() {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, false);
  runtime_state* rt = current_runtime();
  if (!rt) throw error(errc::not_running);
  std::uint64_t id = rt->next_ref.fetch_add(1, std::memory_order_relaxed);  // uniqueness is all we need
  p->ensure_extra().aliases.insert(id);
  return alias{p->id(), id};
}

bool unalias(const alias& a) {
  process* p = current_process();
  if (!p) throw error(errc::not_in_process);
  before_runtime_call(p, false);
  return a.owner == p->id() && p->extra && p->extra->aliases.erase(a.id) > 0;
}

namespace detail {
void send_node_to_alias(const alias& to, message_node* n) {
  runtime_state* rt = current_runtime();
  if (!rt) {
    destroy_node(n);
    return;
  }
  process* self = current_process();
  if (self) {
    try {
      before_runtime_call(self, false);  // a send after a kill has arrived is never delivered
    } catch (...) {
      destroy_node(n);
      throw;
    }
  }
  if (tracing(event_kind::send, self)) [[unlikely]]
    record(event_kind::send, 0, 0, self ? self->id().bits() : 0, to.owner.bits(), reinterpret_cast<std::uintptr_t>(n),
           reinterpret_cast<std::uintptr_t>(n->type));
  // The wrapper owns n from here: if allocating it throws, n is freed with it.
  deliver(*rt, to.owner, make_signal<alias_delivery>(to.id, n), true);
  if (self) {
    count_send(*rt, self);
    charge(self, true);
    if (to.owner.is_remote()) [[unlikely]]
      wait_after_remote_send(*rt, to.owner);  // a node busy past its limit holds the sender (remote.cpp)
  }
}
}  // namespace detail

}  // namespace grove
