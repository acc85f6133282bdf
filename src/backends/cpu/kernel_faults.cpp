#include "backends/cpu/kernel_faults.h"

#include <csetjmp>
#include <cstdlib>
#include <mutex>

#include "backends/cpu/execution.h"

#if defined(__unix__)
#include <signal.h>
#include <ucontext.h>
#endif

namespace rocuda::backends::cpu {

#if defined(__unix__)
namespace {

struct sigaction gPreviousSegv, gPreviousBus;

// The fault is not a kernel's: hand it to the handler installed before, or restore the default
// and return, so that the faulting instruction runs again and ends the process as it would have.
void passOn(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous = signal == SIGSEGV ? gPreviousSegv : gPreviousBus;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
      previous.sa_handler != nullptr) {
    previous.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
}

uintptr_t stackPointer(void* context) {
#if defined(__x86_64__)
  return static_cast<uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.sp);
#else
  (void)context;
  return 0;
#endif
}

// Leaving the handler by a jump: the signal must not stay blocked on this thread.
void unblock(int signal) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

// Only async-signal-safe work here: no allocation, no logging (the launch logs the fault).
void onFault(int signal, siginfo_t* info, void* context) {
  if (MemoryOperationGuard* guard = activeMemoryOperationGuard()) {
    guard->address = reinterpret_cast<uintptr_t>(info->si_addr);
    activeMemoryOperationGuard() = nullptr;
    unblock(signal);
    std::longjmp(guard->exit, 1);
  }
  BlockState* block = currentBlock();
  ThreadState* thread = currentThread();
  if (block == nullptr || block->grid == nullptr || block->grid->fault == nullptr)
    return passOn(signal, info, context);
  // With fibers the kernel's code runs on the threads' stacks; a fault on the worker's own stack
  // is the scheduler's (Rocuda's), not the kernel's.
  // (A fiber's stack overflow leaves the stack pointer in the guard page below it.)
  uintptr_t sp = stackPointer(context);
  uintptr_t low = thread != nullptr ? reinterpret_cast<uintptr_t>(thread->fiber.stack()) : 0;
  constexpr uintptr_t kGuardBytes = 64 * 1024;  // the guard page and what a frame may skip
  bool onFiber = low != 0 && sp + kGuardBytes >= low && sp < low + thread->fiber.stackBytes();
  if (block->grid->useFibers() && !onFiber) return passOn(signal, info, context);
  KernelFault& fault = *block->grid->fault;
  if (!fault.taken.exchange(true)) {
    fault.address = reinterpret_cast<uintptr_t>(info->si_addr);
    fault.signal = signal;
    // The context's: a round function that chains blocks advances it (BlockContext::blocksLeft).
    for (int i = 0; i < 3; ++i) fault.ctaid[i] = block->context.ctaid[i];
    fault.blockKnown = !block->flatRange;
    fault.threadKnown =
        thread != nullptr && block->grid->code.execution == compiler::CpuExecution::ThreadEntry;
    if (fault.threadKnown)
      for (int i = 0; i < 3; ++i) fault.tid[i] = thread->tid[i];
  }
  block->trapped = true;
  unblock(signal);
  if (onFiber) Fiber::switchTo(thread->fiber, block->scheduler);  // never resumed
  std::longjmp(block->trapExit, 1);
}

// The alternate stack of one host thread, freed with it.
struct FaultStack {
  static constexpr size_t kBytes = 64 * 1024;
  void* memory = nullptr;
  FaultStack() {
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0)
      return;  // the thread has one already (the application's)
    memory = std::malloc(kBytes);
    if (memory == nullptr) return;
    stack_t stack{};
    stack.ss_sp = memory;
    stack.ss_size = kBytes;
    if (sigaltstack(&stack, nullptr) != 0) {
      std::free(memory);
      memory = nullptr;
    }
  }
  ~FaultStack() {
    if (memory == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    std::free(memory);
  }
};

}  // namespace

void installKernelFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = onFault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &gPreviousSegv);
    sigaction(SIGBUS, &action, &gPreviousBus);
  });
}

void prepareFaultStack() { static thread_local FaultStack stack; }

MemoryOperationGuard*& activeMemoryOperationGuard() {
  static thread_local MemoryOperationGuard* guard = nullptr;
  return guard;
}

#else  // Windows: not yet (a vectored exception handler would do the same); faults end the process.

void installKernelFaultHandler() {}
void prepareFaultStack() {}
MemoryOperationGuard*& activeMemoryOperationGuard() {
  static thread_local MemoryOperationGuard* guard = nullptr;
  return guard;
}

#endif

}  // namespace rocuda::backends::cpu
