// ROCUDA_MEMCHECK on the CPU device: every memory access of a kernel compiled with
// CompileOptions::memcheck calls __rocuda_memcheck first (compiler.h), which checks it against
// the block's shared window, the thread's local depot or stack, and the live allocations below.
// The first invalid access stops its block and fails the launch with CUDA_ERROR_ILLEGAL_ADDRESS
// after one error line naming the kernel, thread, block, PTX line and nearest allocation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace rocuda::backends::cpu {

struct BlockState;

// Whether [address, address + size) is local memory of the calling CUDA thread: on its stack (the
// OS thread's, or its fiber's) or, for Continuation kernels, in the block's frames. Memcheck
// accepts such accesses; isspacep.local asks the same (__rocuda_is_local).
bool onThreadStack(uintptr_t address, size_t size);

// ROCUDA_MEMCHECK is set to a value that enables the bounds check ("1" or "race"); read once.
bool memcheckEnabled();
// ROCUDA_MEMCHECK=race: also the shared-memory race check (memcheck_race.cpp).
bool memcheckRaceEnabled();

// The race check of one valid shared-memory access of the calling thread: conflicting accesses
// by threads of different warps with no block barrier between are reported (error lines, at
// most a few per launch); the kernel goes on, as compute-sanitizer's racecheck lets it.
void raceCheckShared(uint32_t offset, uint64_t size, uint32_t access, uint32_t ptxLine,
                     const char* source);
// A wait of a thread of `block` saw the phase of the mbarrier at `mbarrier` complete: the first
// such wait of each phase starts a new epoch of the race check.
void raceCheckMBarrierPassed(const BlockState& block, const void* mbarrier);
// A thread of `block` acquired (an .acquire load or atom, a fence): what other threads released
// before it may be ordered before what it does next, which the check does not follow, so it
// starts a new epoch (it may miss races then, never report one that is not).
void raceCheckAcquired(const BlockState& block);

// The memory kernels may reach through pointers: allocations of the device (device, pinned and
// managed memory, pool allocations), host ranges registered with cuMemHostRegister and module
// globals; and recently freed allocations, kept in a quarantine so that a use after free is
// reported as such instead of landing in a reused allocation. Lookups are safe against
// concurrent changes from other host threads.
class AllocationMap {
 public:
  struct Range {
    uintptr_t base = 0;
    size_t size = 0;
    bool owned = false;  // memory the device allocated (released when it leaves the quarantine)
  };
  enum class Verdict {
    Inside,       // [address, address+size) lies in one live allocation
    Overrun,      // starts in `range` but runs past its end
    Outside,      // starts in no live allocation; `range` is the nearest one (if any: found)
    AfterFree,    // starts in `range`, which was freed
  };
  struct Lookup {
    Verdict verdict = Verdict::Outside;
    Range range;
    bool found = false;  // Outside: whether any allocation exists to be the nearest
  };

  explicit AllocationMap(size_t quarantineBytes = size_t{256} << 20,
                         size_t quarantineCount = 1024)
      : quarantineBytes_(quarantineBytes), quarantineCount_(quarantineCount) {}

  void add(const void* base, size_t size, bool owned);
  // `base` leaves the live set for the quarantine. Returns the owned memory that fell out of
  // the quarantine (oldest first), which the caller may now release. A base that is not live is
  // ignored (and returned when owned is true, so the caller still frees it).
  std::vector<void*> remove(const void* base, bool owned);
  Lookup find(uintptr_t address, size_t size) const;
  // Changes whenever the live set does: a thread may cache a range it found Inside while the
  // generation stays the same.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // The process-wide map the CPU device and its kernels use.
  static AllocationMap& instance();

 private:
  mutable std::shared_mutex mutex_;
  std::atomic<uint64_t> generation_{0};
  std::map<uintptr_t, Range> live_;
  std::map<uintptr_t, Range> freed_;
  std::deque<Range> freedOrder_;  // oldest first
  size_t freedBytes_ = 0;
  size_t quarantineBytes_, quarantineCount_;
};

// What the report says about an address relative to the allocation `lookup` found:
// "12 bytes after the end of the allocation at 0x... of 4096 bytes", "use after free of ...",
// "not within any allocation".
std::string describeLookup(uintptr_t address, size_t size, const AllocationMap::Lookup& lookup);

// __rocuda_memcheck, for the JIT to resolve.
std::vector<std::pair<std::string, void*>> memcheckRuntimeSymbols();

}  // namespace rocuda::backends::cpu
