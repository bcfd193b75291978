// grove/detail/message_checks.hpp: what send and receive check at compile time (grove/message.hpp
// has the rules users read). Internal to Grove; included by message.hpp. Not part of the API.
//
// - outgoing<T>: the type a send of T puts in the mailbox. A C string (a literal, const char*) is
//   sent as the std::string it spells, so a std::string handler matches it; everything else as
//   std::decay_t<T>.
// - borrows<T>: T refers to memory it does not own: an object pointer, std::string_view, std::span,
//   std::reference_wrapper, or a class template with one of those among its type arguments
//   (std::pair<int, char*>, std::vector<std::string_view>). Function pointers are not borrowed (code
//   outlives every process). A pointer inside a user's own class cannot be seen: the check is a
//   guard against the common mistakes, not a proof.
// - first_problem<H...>, results_check<R...>: classify every clause of a receive and find the first
//   problem, so that receive stops at one static_assert that names it instead of a page of template
//   errors.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include <grove/detail/visibility.hpp>
GROVE_PUBLIC_BEGIN

namespace grove {

// Says "I own the lifetime": a pointer (or a view) sent on purpose, for memory that outlives every
// use the receiver makes of it (a static, a heap object kept alive by other means, memory shared
// with a foreign thread). Never safe for memory on a process's stack: a parked process's stack is
// copied out and its slot reused, so the address then holds another process's frames.
//   grove::send(worker, grove::raw{&table});        grove::receive([](grove::raw<table_t*> t) { ... });
template <class T>
struct raw {
  T value;
};
template <class T>
raw(T) -> raw<T>;

// Specialize as std::true_type for a type of yours that the borrowed-memory check refuses but that
// owns what it points at (a handle whose template argument is a pointer, say).
template <class T>
struct allow_borrowed_message : std::false_type {};
template <class T>
struct allow_borrowed_message<raw<T>> : std::true_type {};

namespace detail {

// ---- send ----

template <class C>
inline constexpr bool is_char_like = std::is_same_v<C, char> || std::is_same_v<C, wchar_t> || std::is_same_v<C, char8_t> ||
                                     std::is_same_v<C, char16_t> || std::is_same_v<C, char32_t>;

template <class D, class = void>
struct c_string_char {};  // not a C string
template <class C>
struct c_string_char<C*, std::enable_if_t<is_char_like<std::remove_const_t<C>>>> {
  using type = std::remove_const_t<C>;
};

template <class T>
inline constexpr bool is_c_string = requires { typename c_string_char<std::decay_t<T>>::type; };

template <class T>
struct outgoing {
  using type = std::decay_t<T>;
};
template <class T>
  requires is_c_string<T>
struct outgoing<T> {
  using type = std::basic_string<typename c_string_char<std::decay_t<T>>::type>;
};
template <class T>
using outgoing_t = typename outgoing<T>::type;

template <class T>
struct borrows : std::false_type {};
template <class T>
struct borrows<T*> : std::bool_constant<!std::is_function_v<T>> {};
template <class C, class Tr>
struct borrows<std::basic_string_view<C, Tr>> : std::true_type {};
template <class T, std::size_t N>
struct borrows<std::span<T, N>> : std::true_type {};
template <class T>
struct borrows<std::reference_wrapper<T>> : std::true_type {};
template <template <class...> class Tm, class... A>
struct borrows<Tm<A...>> : std::bool_constant<!allow_borrowed_message<Tm<A...>>::value && (borrows<A>::value || ...)> {};

template <class M>
inline constexpr bool is_borrowed = !allow_borrowed_message<M>::value && borrows<M>::value;

// The checks of every send, on the type it puts in the mailbox (one static_assert fires at most).
template <class M>
constexpr bool check_sendable() {
  static_assert(!(std::is_pointer_v<M> && is_borrowed<M>),
                "grove::send: a raw pointer cannot cross processes: what it points at may be freed, or be another "
                "process's stack, by the time the receiver reads it. Send the value, a std::unique_ptr or "
                "std::shared_ptr, or grove::raw{ptr} if you own the lifetime (grove/message.hpp)");
  static_assert(std::is_pointer_v<M> || !is_borrowed<M>,
                "grove::send: this message refers to memory it does not own (a std::string_view, std::span, "
                "std::reference_wrapper or raw pointer, maybe inside a pair, tuple or container): send an owning "
                "type (std::string, std::vector), or wrap it in grove::raw{...} if you own the lifetime (grove/message.hpp)");
  static_assert(std::is_move_constructible_v<M>, "grove::send: messages must be movable");
  return true;
}

// ---- receive ----

template <class G, class F>
struct guarded;
template <class F>
struct after_clause;

template <class T>
inline constexpr bool is_after = false;
template <class F>
inline constexpr bool is_after<after_clause<F>> = true;

enum class clause_problem {
  none,
  not_callable,
  generic,             // a template or overloaded operator()
  no_argument,
  several_arguments,
  non_const_reference, // the message is moved into the handler: a T& parameter cannot take it
  borrowed_parameter,  // a type send refuses: no message of it can ever arrive
  bad_guard,           // when(guard, f): guard(const M&) is not callable or not testable as bool
  after_not_last,
};

template <class Sig>
struct signature;  // of a function type: its arity, its first parameter and its result
template <class R, class... A>
struct signature<R(A...)> {
  static constexpr std::size_t arity = sizeof...(A);
  using ret = R;
  using first = std::tuple_element_t<0, std::tuple<A..., void>>;
};
template <class R, class... A>
struct signature<R(A...) noexcept> : signature<R(A...)> {};

template <class M>
struct member_signature;
template <class C, class S>
struct member_signature<S C::*> : signature<std::remove_cvref_t<S>> {};
// const, noexcept and ref-qualified call operators: strip the qualifiers down to R(A...)
template <class C, class R, class... A>
struct member_signature<R (C::*)(A...) const> : signature<R(A...)> {};
template <class C, class R, class... A>
struct member_signature<R (C::*)(A...) const noexcept> : signature<R(A...)> {};
template <class C, class R, class... A>
struct member_signature<R (C::*)(A...) noexcept> : signature<R(A...)> {};
template <class C, class R, class... A>
struct member_signature<R (C::*)(A...) &> : signature<R(A...)> {};
template <class C, class R, class... A>
struct member_signature<R (C::*)(A...) const&> : signature<R(A...)> {};

// Whether F has any member called operator(), template or overloaded included: if it has one, the
// name is ambiguous in a class that also inherits probe's.
struct call_probe {
  void operator()();
};
template <class F>
struct call_probe_derived : F, call_probe {};
template <class F>
constexpr bool has_any_call_operator() {
  if constexpr (!std::is_class_v<F> || std::is_final_v<F>) {
    return false;
  } else {
    return !requires { &call_probe_derived<F>::operator(); };
  }
}

// What a callable looks like to receive: `arity` and `first` of its one call operator, or a problem.
template <class F>
struct callable_shape {
  static constexpr clause_problem problem = has_any_call_operator<F>() ? clause_problem::generic : clause_problem::not_callable;
};
template <class F>
  requires std::is_function_v<std::remove_pointer_t<F>>
struct callable_shape<F> : signature<std::remove_pointer_t<F>> {
  static constexpr clause_problem problem = clause_problem::none;
};
template <class F>
  requires(std::is_class_v<F> && requires { &F::operator(); })
struct callable_shape<F> : member_signature<decltype(&F::operator())> {
  static constexpr clause_problem problem = clause_problem::none;
};

// A message handler's shape: one parameter taken by value, const& or &&.
template <class F>
constexpr clause_problem message_handler_problem() {
  using shape = callable_shape<F>;
  if constexpr (shape::problem != clause_problem::none) {
    return shape::problem;
  } else if constexpr (shape::arity == 0) {
    return clause_problem::no_argument;
  } else if constexpr (shape::arity > 1) {
    return clause_problem::several_arguments;
  } else {
    using A = typename shape::first;
    using M = std::remove_cvref_t<A>;
    if constexpr (std::is_lvalue_reference_v<A> && !std::is_const_v<std::remove_reference_t<A>>) {
      return clause_problem::non_const_reference;
    } else if constexpr (is_borrowed<M>) {
      return clause_problem::borrowed_parameter;
    } else {
      return clause_problem::none;
    }
  }
}

template <class H>
struct clause_check {  // a plain handler
  static constexpr clause_problem problem = message_handler_problem<H>();
};
template <class G, class F>
struct clause_check<guarded<G, F>> {
  static constexpr clause_problem problem = [] {
    constexpr clause_problem p = message_handler_problem<F>();
    if constexpr (p != clause_problem::none) {
      return p;
    } else {
      using M = std::remove_cvref_t<typename callable_shape<F>::first>;
      if constexpr (!std::is_invocable_v<G&, const M&>) {
        return clause_problem::bad_guard;
      } else if constexpr (!std::is_constructible_v<bool, std::invoke_result_t<G&, const M&>>) {
        return clause_problem::bad_guard;
      } else {
        return clause_problem::none;
      }
    }
  }();
};

// The result type of a clause known to be well formed.
template <class H>
struct clause_result {
  using type = typename callable_shape<H>::ret;
};
template <class G, class F>
struct clause_result<guarded<G, F>> {
  using type = typename callable_shape<F>::ret;
};
template <class F>
struct clause_result<after_clause<F>> {
  using type = std::invoke_result_t<F&>;
};

template <class A, class B>
inline constexpr bool have_common_type = requires { typename std::common_type<A, B>::type; };

// Named so that the compiler's "in instantiation of" line shows the two types.
template <class A, class B>
struct receive_results_have_no_common_type {
  static_assert(have_common_type<A, B>,
                "grove::receive: two clauses return types with no common type (they are this template's two "
                "arguments): make the handlers (and the after clause) return the same type, or types that convert "
                "to one");
  static constexpr bool ok = have_common_type<A, B>;
};

// The common type of every clause's result; ok false (and report() fails on the pair) if two have none.
template <class... R>
struct results_check {
  static constexpr bool ok = true;
  using type = void;  // no clause at all cannot happen: receive needs one
};
template <class R>
struct results_check<R> {
  static constexpr bool ok = true;
  using type = R;
};
template <class R1, class R2, class... Rest>
struct results_check<R1, R2, Rest...> {
  static constexpr bool pair_ok = have_common_type<R1, R2>;
  using next = results_check<typename std::conditional_t<pair_ok, std::common_type<R1, R2>, std::type_identity<R1>>::type, Rest...>;
  static constexpr bool ok = pair_ok && next::ok;
  using type = typename next::type;
  // Only when reporting: fails on the first pair without a common type (the result so far, then the next).
  static constexpr bool report() {
    if constexpr (!pair_ok) {
      return receive_results_have_no_common_type<R1, R2>::ok;
    } else {
      return next::report();
    }
  }
};

template <class H>
constexpr clause_problem problem_of() {
  if constexpr (is_after<H>) {
    return clause_problem::none;
  } else {
    return clause_check<H>::problem;
  }
}

// The first problem among a receive's clauses, in order (an after clause must be the last).
template <class... H>
constexpr clause_problem first_problem() {
  constexpr std::size_t n = sizeof...(H);
  constexpr clause_problem each[] = {problem_of<H>()..., clause_problem::none};
  constexpr bool after[] = {is_after<H>..., false};
  for (std::size_t i = 0; i < n; ++i) {
    if (after[i] && i + 1 != n) return clause_problem::after_not_last;
    if (each[i] != clause_problem::none) return each[i];
  }
  return clause_problem::none;
}

template <clause_problem P>
constexpr bool report_clause_problem() {
  static_assert(P != clause_problem::not_callable,
                "grove::receive: a clause is not callable: pass functions or lambdas that take one message, e.g. "
                "[](const ping&) { ... }, grove::when(guard, handler), and grove::after(timeout, fn) last");
  static_assert(P != clause_problem::generic,
                "grove::receive: a handler is a generic lambda (auto parameter) or has an overloaded operator(): "
                "receive matches a message by the handler's parameter type, so it needs one concrete type, e.g. "
                "[](const ping&) rather than [](const auto&); grove::any_message takes any message");
  static_assert(P != clause_problem::no_argument,
                "grove::receive: a handler takes no argument: a message handler takes the message, e.g. "
                "[](const ping&); for code that runs when nothing matched use grove::after(timeout, fn)");
  static_assert(P != clause_problem::several_arguments,
                "grove::receive: a handler takes more than one argument: a message is one value; send a struct "
                "(or a std::tuple) and take it as the handler's one parameter");
  static_assert(P != clause_problem::non_const_reference,
                "grove::receive: a handler takes its message by non-const reference (T&): the message is moved "
                "into the handler; take it by value, const T& or T&&");
  static_assert(P != clause_problem::borrowed_parameter,
                "grove::receive: a handler's message type is a pointer or a view (std::string_view, std::span...), "
                "which send refuses, so no such message can arrive: take the owning type (a string literal "
                "arrives as std::string), or grove::raw<T> for pointers sent as grove::raw");
  static_assert(P != clause_problem::bad_guard,
                "grove::when(guard, handler): guard must be callable with the handler's message as const M& "
                "and return something testable as bool");
  static_assert(P != clause_problem::after_not_last,
                "grove::receive: after(...) must be the last clause of receive, and appear once");
  return false;
}

}  // namespace detail
}  // namespace grove

GROVE_PUBLIC_END
