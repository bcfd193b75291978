// bench/grove/context_switch_probe.cpp: what Boost.Context's switch spends on the floating-point
// control words. jump_fcontext saves and restores MXCSR and the x87 control word at every switch
// (the SysV ABI has them preserved across calls); in `perf annotate` of a ring hop on an AMD EPYC
// guest most of jump_fcontext's samples sat on the instruction after ldmxcsr. This probe switches
// two contexts back and forth, warm, with Boost's jump_fcontext and with a copy of its x86-64 SysV
// code without those four instructions, in ns a switch, 3 rounds. It keeps the figures behind a
// rejected alternative (runtime/src/context.hpp, "Rejected"); the copy is not used by Grove.
//
//   build/release/bench/grove/context_switch_probe
#include <boost/context/detail/fcontext.hpp>

#include <chrono>
#include <cstdio>
#include <memory>

namespace ctx = boost::context::detail;

#if defined(__x86_64__) && defined(__linux__)
// Boost.Context 1.74's jump_x86_64_sysv_elf_gas.S less stmxcsr/fnstcw and ldmxcsr/fldcw; same frame.
extern "C" ctx::transfer_t probe_jump_without_fp_control(ctx::fcontext_t to, void* data);
asm(R"(
.text
.globl probe_jump_without_fp_control
.type probe_jump_without_fp_control,@function
.align 16
probe_jump_without_fp_control:
    leaq  -0x38(%rsp), %rsp
    movq  %r12, 0x8(%rsp)
    movq  %r13, 0x10(%rsp)
    movq  %r14, 0x18(%rsp)
    movq  %r15, 0x20(%rsp)
    movq  %rbx, 0x28(%rsp)
    movq  %rbp, 0x30(%rsp)
    movq  %rsp, %rax
    movq  %rdi, %rsp
    movq  0x38(%rsp), %r8
    movq  0x8(%rsp), %r12
    movq  0x10(%rsp), %r13
    movq  0x18(%rsp), %r14
    movq  0x20(%rsp), %r15
    movq  0x28(%rsp), %rbx
    movq  0x30(%rsp), %rbp
    leaq  0x40(%rsp), %rsp
    movq  %rsi, %rdx
    movq  %rax, %rdi
    jmp   *%r8
.size probe_jump_without_fp_control,.-probe_jump_without_fp_control
.section .note.GNU-stack,"",%progbits
.text
)");

namespace {

constexpr long switches = 50'000'000;
constexpr std::size_t stack_bytes = 64 * 1024;

template <ctx::transfer_t (*Jump)(ctx::fcontext_t, void*)>
void bounce(ctx::transfer_t t) {
  for (;;) t = Jump(t.fctx, nullptr);
}

template <ctx::transfer_t (*Jump)(ctx::fcontext_t, void*)>
double ns_per_switch() {
  auto stack = std::make_unique<char[]>(stack_bytes);
  ctx::transfer_t t{ctx::make_fcontext(stack.get() + stack_bytes, stack_bytes, &bounce<Jump>), nullptr};
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < switches / 2; ++i) t = Jump(t.fctx, nullptr);  // two switches a turn
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  return took.count() / switches;  // the bouncing context is left suspended: its stack is freed unused
}

}  // namespace

int main() {
  for (int round = 0; round < 3; ++round)
    std::printf("jump_fcontext %.2f ns a switch   without the FP control words %.2f ns\n",
                ns_per_switch<&ctx::jump_fcontext>(), ns_per_switch<&probe_jump_without_fp_control>());
}
#else
int main() { std::puts("context_switch_probe: x86-64 Linux only"); }
#endif
