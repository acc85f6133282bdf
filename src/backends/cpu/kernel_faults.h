// Invalid memory accesses of kernels on the CPU device without memcheck: a translated kernel that
// dereferences a wild pointer faults (SIGSEGV, SIGBUS) like any host code. Rather than let the
// fault end the application, the CPU device catches it on the thread running the block, stops
// that block as trap does and fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS, as a GPU would.
// The device's copies and fills are guarded the same way (guardedMemoryOperation): memory mapped
// by cuMemMap without cuMemSetAccess, or a wild address, fails the operation instead.
// Faults outside both go to whatever handler was installed before (or end the process).
#pragma once

#include <atomic>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <string>

#include "support/result.h"

namespace rocuda::backends::cpu {

// The first fault of a launch, for its log line (the access itself is not known: memcheck,
// ROCUDA_MEMCHECK=1, names it with its PTX line).
struct KernelFault {
  std::atomic<bool> taken{false};
  uintptr_t address = 0;  // the faulting address the OS reported
  int signal = 0;
  uint32_t ctaid[3] = {0, 0, 0};
  uint32_t tid[3] = {0, 0, 0};
  bool threadKnown = false;  // block forms run many threads in one: tid is unknown there
  bool blockKnown = true;    // a grid-stride loop's flat form runs no block of its own
};

// Installs the handler (once per process; later calls do nothing).
void installKernelFaultHandler();

// Gives the calling host thread an alternate signal stack, where the handler runs when a fault
// is a fiber's stack overflow (once per thread; kept while the thread lives).
void prepareFaultStack();

// A copy or fill of the device's memory in progress on this thread: a fault inside it jumps
// back to `exit` with `address` set.
struct MemoryOperationGuard {
  std::jmp_buf exit;
  uintptr_t address = 0;
};
MemoryOperationGuard*& activeMemoryOperationGuard();

// Runs `operation` (memmove, memset...); a fault in it becomes IllegalAddress naming `what`.
// The handler must be installed (the CPU device does so when it starts).
template <class Operation>
Status guardedMemoryOperation(const char* what, Operation&& operation) {
  MemoryOperationGuard guard;
  MemoryOperationGuard* const previous = activeMemoryOperationGuard();
  activeMemoryOperationGuard() = &guard;
  if (setjmp(guard.exit) == 0) {
    operation();
    activeMemoryOperationGuard() = previous;
    return Status::success();
  }
  activeMemoryOperationGuard() = previous;
  char address[32];
  std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(guard.address));
  return makeError(ErrorCode::IllegalAddress,
                   std::string(what) + " touched memory it may not access, at " + address +
                       " (memory freed or unmapped meanwhile, or mapped by cuMemMap without "
                       "cuMemSetAccess)");
}

}  // namespace rocuda::backends::cpu
