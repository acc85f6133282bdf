#include "support/fiber.h"

#include <cstdint>
#include <cstdlib>

#include "support/platform.h"

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace rocuda {

bool Fiber::reserveStack(size_t stackBytes) {
  if (stack_ != nullptr && stackBytes_ >= stackBytes) return true;  // reuse: no mmap per launch
  if (stack_ != nullptr) platform::freeStack(stack_, stackBytes_);
  stack_ = platform::allocateStack(stackBytes);
  stackBytes_ = stack_ != nullptr ? stackBytes : 0;
  return stack_ != nullptr;
}

#if defined(__x86_64__)
// Saves the callee-saved registers on the current stack, stores the stack pointer in *save and
// resumes the stack `next` (laid out the same way). No system call, unlike swapcontext.
extern "C" void rocudaFiberSwitch(void** save, void* next);
extern "C" void rocudaFiberStart();
asm(R"(
  .text
  .globl rocudaFiberSwitch
  .hidden rocudaFiberSwitch
  .type rocudaFiberSwitch,@function
rocudaFiberSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size rocudaFiberSwitch, .-rocudaFiberSwitch

  .globl rocudaFiberStart
  .hidden rocudaFiberStart
  .type rocudaFiberStart,@function
rocudaFiberStart:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size rocudaFiberStart, .-rocudaFiberStart
)");

bool Fiber::prepare(size_t stackBytes, Entry entry, void* argument) {
  if (!reserveStack(stackBytes)) return false;
  // Initial frame as rocudaFiberSwitch pops it: r15 r14 r13 r12 rbx rbp, then the return address.
  // The frame sits 8 bytes off 16-byte alignment so that rocudaFiberStart's call is aligned.
  auto top = (reinterpret_cast<uintptr_t>(stack_) + stackBytes_) & ~uintptr_t(15);
  auto* frame = reinterpret_cast<uintptr_t*>(top - 72);
  for (int i = 0; i < 6; ++i) frame[i] = 0;
  frame[2] = reinterpret_cast<uintptr_t>(argument);  // r13
  frame[3] = reinterpret_cast<uintptr_t>(entry);     // r12
  frame[6] = reinterpret_cast<uintptr_t>(&rocudaFiberStart);
  context_ = frame;
  return true;
}

void Fiber::switchTo(Fiber& from, Fiber& to) { rocudaFiberSwitch(&from.context_, to.context_); }

Fiber::~Fiber() {
  if (stack_ != nullptr) platform::freeStack(stack_, stackBytes_);
}

#else  // portable fallback

namespace {
struct StartRecord {
  Fiber::Entry entry;
  void* argument;
};
struct UContextFiber {
  ucontext_t context;
  StartRecord start;
};
void startThunk(unsigned high, unsigned low) {
  auto* record = reinterpret_cast<StartRecord*>((uintptr_t(high) << 32) | uintptr_t(low));
  record->entry(record->argument);
  std::abort();  // entries never return
}
}  // namespace

bool Fiber::prepare(size_t stackBytes, Entry entry, void* argument) {
  if (!reserveStack(stackBytes)) return false;
  if (context_ == nullptr) context_ = new UContextFiber();
  auto* fiber = static_cast<UContextFiber*>(context_);
  ucontext_t* uc = &fiber->context;
  getcontext(uc);
  uc->uc_stack.ss_sp = stack_;
  uc->uc_stack.ss_size = stackBytes_;
  uc->uc_link = nullptr;
  fiber->start = {entry, argument};
  auto address = reinterpret_cast<uintptr_t>(&fiber->start);
  makecontext(uc, reinterpret_cast<void (*)()>(startThunk), 2, unsigned(address >> 32),
              unsigned(address));
  return true;
}

void Fiber::switchTo(Fiber& from, Fiber& to) {
  if (from.context_ == nullptr) from.context_ = new UContextFiber();
  swapcontext(&static_cast<UContextFiber*>(from.context_)->context,
              &static_cast<UContextFiber*>(to.context_)->context);
}

Fiber::~Fiber() {
  if (stack_ != nullptr) platform::freeStack(stack_, stackBytes_);
  delete static_cast<UContextFiber*>(context_);
}

#endif

}  // namespace rocuda
