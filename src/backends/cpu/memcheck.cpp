// ROCUDA_MEMCHECK: the allocation map and __rocuda_memcheck (see memcheck.h).
#include "backends/cpu/memcheck.h"

#include <pthread.h>

#include <algorithm>
#include <cinttypes>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "backends/cpu/execution.h"
#include "support/env.h"
#include "support/log.h"

namespace rocuda::backends::cpu {

namespace {

enum class Mode { Off, Bounds, Race };

Mode memcheckMode() {
  static const Mode mode = [] {
    std::optional<std::string> value = env::get("ROCUDA_MEMCHECK");
    if (!value || value->empty() || *value == "0") return Mode::Off;
    if (*value == "race") return Mode::Race;
    if (*value != "1")
      log::warning("ROCUDA_MEMCHECK='" + *value + "' is not 0, 1 or race; using 1");
    return Mode::Bounds;
  }();
  return mode;
}

}  // namespace

bool memcheckEnabled() { return memcheckMode() != Mode::Off; }
bool memcheckRaceEnabled() { return memcheckMode() == Mode::Race; }

void AllocationMap::add(const void* base, size_t size, bool owned) {
  uintptr_t start = reinterpret_cast<uintptr_t>(base);
  std::unique_lock lock(mutex_);
  live_[start] = Range{start, size, owned};
  // A new allocation at a quarantined address (a foreign range, or memory freed before memcheck
  // kept it) is live now: the stale freed entry must not shadow it.
  freed_.erase(start);
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

std::vector<void*> AllocationMap::remove(const void* base, bool owned) {
  uintptr_t start = reinterpret_cast<uintptr_t>(base);
  std::vector<void*> release;
  std::unique_lock lock(mutex_);
  auto it = live_.find(start);
  if (it == live_.end()) {
    if (owned) release.push_back(const_cast<void*>(base));
    return release;
  }
  Range range = it->second;
  range.owned = range.owned && owned;
  live_.erase(it);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  freed_[start] = range;
  freedOrder_.push_back(range);
  freedBytes_ += range.size;
  while (!freedOrder_.empty() &&
         (freedBytes_ > quarantineBytes_ || freedOrder_.size() > quarantineCount_)) {
    Range oldest = freedOrder_.front();
    freedOrder_.pop_front();
    freedBytes_ -= oldest.size;
    auto stale = freed_.find(oldest.base);
    if (stale != freed_.end() && stale->second.size == oldest.size) freed_.erase(stale);
    if (oldest.owned) release.push_back(reinterpret_cast<void*>(oldest.base));
  }
  return release;
}

namespace {

// The range of `ranges` containing `address` (a zero-size range owns its base), or end().
std::map<uintptr_t, AllocationMap::Range>::const_iterator containing(
    const std::map<uintptr_t, AllocationMap::Range>& ranges, uintptr_t address) {
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return ranges.end();
  --it;
  const AllocationMap::Range& r = it->second;
  return address == r.base || address - r.base < r.size ? it : ranges.end();
}

}  // namespace

AllocationMap::Lookup AllocationMap::find(uintptr_t address, size_t size) const {
  std::shared_lock lock(mutex_);
  Lookup result;
  if (auto it = containing(live_, address); it != live_.end()) {
    const Range& r = it->second;
    result.range = r;
    result.found = true;
    result.verdict = size <= r.size - (address - r.base) ? Verdict::Inside : Verdict::Overrun;
    return result;
  }
  if (auto it = containing(freed_, address); it != freed_.end()) {
    result.range = it->second;
    result.found = true;
    result.verdict = Verdict::AfterFree;
    return result;
  }
  // The nearest live allocation, before or after the address.
  auto next = live_.upper_bound(address);
  uint64_t best = UINT64_MAX;
  if (next != live_.end()) {
    best = next->first - address;
    result.range = next->second;
    result.found = true;
  }
  if (next != live_.begin()) {
    const Range& before = std::prev(next)->second;
    uint64_t distance = address - (before.base + before.size);
    if (distance < best) {
      result.range = before;
      result.found = true;
    }
  }
  return result;
}

AllocationMap& AllocationMap::instance() {
  static AllocationMap* map = new AllocationMap();  // used from atexit paths
  return *map;
}

std::string describeLookup(uintptr_t address, size_t size, const AllocationMap::Lookup& lookup) {
  using Verdict = AllocationMap::Verdict;
  const auto& r = lookup.range;
  char where[96];
  std::snprintf(where, sizeof where, "the allocation at 0x%" PRIxPTR " of %zu bytes", r.base,
                r.size);
  switch (lookup.verdict) {
    case Verdict::Inside:
      return std::string("inside ") + where;
    case Verdict::Overrun: {
      uint64_t past = address + size - (r.base + r.size);
      return std::to_string(past) + " bytes past the end of " + where;
    }
    case Verdict::AfterFree:
      return std::string("use after free of ") + where;
    case Verdict::Outside:
      break;
  }
  // Near an allocation (within 1 MiB): say where relative to it, as compute-sanitizer does.
  constexpr uint64_t kNear = 1 << 20;
  if (lookup.found && address >= r.base + r.size && address - (r.base + r.size) < kNear)
    return std::to_string(address - (r.base + r.size)) + " bytes after the end of " + where;
  if (lookup.found && address < r.base && r.base - address < kNear)
    return std::to_string(r.base - address) + " bytes before the start of " + where;
  return "not within any allocation";
}

namespace {

const char* spaceName(uint32_t code) {
  switch (code) {
    case compiler::kMemcheckGlobal: return "global";
    case compiler::kMemcheckShared: return "shared";
    case compiler::kMemcheckLocal: return "local";
    case compiler::kMemcheckConst: return "constant";
    default: return "generic";
  }
}

bool within(uintptr_t address, size_t size, uintptr_t base, size_t bytes) {
  return address >= base && address - base <= bytes && size <= bytes - (address - base);
}

// Global, constant and generic addresses outside shared memory and the stack: the allocations,
// through a per-thread cache of the last allocation found while none has changed since.
bool checkAllocation(uintptr_t address, size_t size, std::string& problem) {
  struct Cached {
    uint64_t generation = UINT64_MAX;
    uintptr_t base = 0;
    size_t size = 0;
  };
  static thread_local Cached cached;
  AllocationMap& map = AllocationMap::instance();
  uint64_t generation = map.generation();
  if (cached.generation == generation && within(address, size, cached.base, cached.size))
    return true;
  AllocationMap::Lookup lookup = map.find(address, size);
  if (lookup.verdict == AllocationMap::Verdict::Inside) {
    cached = Cached{generation, lookup.range.base, lookup.range.size};
    return true;
  }
  problem = describeLookup(address, size, lookup);
  return false;
}

// What is wrong with the access, or "" when it is valid.
std::string checkAccess(uintptr_t address, uint64_t size, uint32_t space, bool write,
                        uintptr_t localBase, uint64_t localSize) {
  const ThreadState& thread = *currentThread();
  const BlockState& block = *thread.block;
  const GridState& grid = *block.grid;
  uintptr_t shared = reinterpret_cast<uintptr_t>(block.shared);
  bool inSharedWindow = address >= shared && address - shared < grid.sharedBytes;
  if (space == compiler::kMemcheckShared || (space == compiler::kMemcheckGeneric && inSharedWindow)) {
    if (within(address, size, shared, grid.sharedBytes)) return {};
    // NVIDIA's compilers read the end of a shared array as one aligned vector (NVVM loads bytes
    // 16..31 of a 28-byte dynamic window with ld.shared.v4): a read that starts inside the window
    // and ends within its last aligned 16 bytes cannot fault on a GPU, whose shared allocations
    // are whole units of 128 bytes or more (the CPU device's window is whole pages).
    uint64_t alignedEnd = (uint64_t(grid.sharedBytes) + 15) / 16 * 16;
    if (!write && inSharedWindow && within(address, size, shared, alignedEnd)) return {};
    int64_t offset = static_cast<int64_t>(address - shared);
    if (offset >= 0 && static_cast<uint64_t>(offset) >= grid.sharedBytes)
      return std::to_string(offset - grid.sharedBytes) + " bytes after the end of the block's " +
             std::to_string(grid.sharedBytes) + " bytes of shared memory";
    if (offset >= 0)
      return std::to_string(offset + size - grid.sharedBytes) + " bytes past the end of the " +
             "block's " + std::to_string(grid.sharedBytes) + " bytes of shared memory";
    return "outside the block's " + std::to_string(grid.sharedBytes) +
           " bytes of shared memory (offset " + std::to_string(offset) + ")";
  }
  if (space == compiler::kMemcheckLocal && localBase != 0) {
    if (within(address, size, localBase, localSize)) return {};
    if (address >= localBase + localSize)
      return std::to_string(address - (localBase + localSize)) +
             " bytes after the end of the thread's local memory of " + std::to_string(localSize) +
             " bytes";
    if (address >= localBase)
      return std::to_string(address + size - (localBase + localSize)) +
             " bytes past the end of the thread's local memory of " + std::to_string(localSize) +
             " bytes";
    return std::to_string(localBase - address) +
           " bytes before the start of the thread's local memory of " +
           std::to_string(localSize) + " bytes";
  }
  if (space == compiler::kMemcheckLocal || space == compiler::kMemcheckGeneric) {
    if (onThreadStack(address, size)) return {};
    if (space == compiler::kMemcheckLocal) return "not within the thread's local memory";
  }
  uintptr_t params = reinterpret_cast<uintptr_t>(grid.params);
  if (within(address, size, params, grid.paramBytes)) return {};  // __grid_constant__ pointers
  std::string problem;
  if (checkAllocation(address, size, problem)) return {};
  return problem;
}

// Stop the block as trap does (device_runtime.cpp), the launch failing with IllegalAddress.
[[noreturn]] void stopBlock() {
  ThreadState& thread = *currentThread();
  BlockState& block = *thread.block;
  block.trapped = true;
  if (block.grid->useFibers()) Fiber::switchTo(thread.fiber, block.scheduler);  // never resumed
  std::longjmp(block.trapExit, 1);
}

}  // namespace

// Local memory the thread may reach without a depot to check against: its stack (the OS
// thread's, or its fiber's) and, for Continuation kernels, the block's frames.
bool onThreadStack(uintptr_t address, size_t size) {
  static thread_local uintptr_t stackLow = 0, stackHigh = 0;
  if (stackHigh == 0) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* low = nullptr;
      size_t bytes = 0;
      if (pthread_attr_getstack(&attr, &low, &bytes) == 0) {
        stackLow = reinterpret_cast<uintptr_t>(low);
        stackHigh = stackLow + bytes;
      }
      pthread_attr_destroy(&attr);
    }
  }
  if (within(address, size, stackLow, stackHigh - stackLow)) return true;
  if (currentThread() == nullptr) return false;
  const ThreadState& thread = *currentThread();
  const BlockState& block = *thread.block;
  if (thread.fiber.stack() != nullptr &&
      within(address, size, reinterpret_cast<uintptr_t>(thread.fiber.stack()),
             thread.fiber.stackBytes()))
    return true;
  const GridState& grid = *block.grid;
  return block.context.frames != nullptr &&
         within(address, size, reinterpret_cast<uintptr_t>(block.context.frames),
                size_t{grid.code.frameBytes} * block.context.threadCount);
}


extern "C" {
static void memcheckAccess(const void* address, uint64_t size, uint32_t access, uint32_t ptxLine,
                           const char* source, const void* localBase, uint64_t localSize) {
  uint32_t space = (access >> compiler::kMemcheckSpaceShift) & 7;
  uintptr_t at = reinterpret_cast<uintptr_t>(address);
  const ThreadState& thread = *currentThread();
  const BlockState& block = *thread.block;
  const GridState& grid = *block.grid;
  bool acquires = (access & compiler::kMemcheckAcquire) != 0;
  if (address == nullptr && size == 0 && acquires) {  // a fence
    if (memcheckRaceEnabled()) raceCheckAcquired(block);
    return;
  }
  // Every PTX access (a vector as a whole) needs an address aligned to its size; NVIDIA's GPUs
  // fail the launch with CUDA_ERROR_MISALIGNED_ADDRESS otherwise, x86 would just run it.
  bool misaligned = (size == 2 || size == 4 || size == 8 || size == 16) && at % size != 0;
  std::string problem = misaligned
                            ? "the address is not a multiple of the access size"
                            : checkAccess(at, size, space, (access & compiler::kMemcheckWrite) != 0,
                                          reinterpret_cast<uintptr_t>(localBase), localSize);
  if (problem.empty()) {
    uintptr_t shared = reinterpret_cast<uintptr_t>(block.shared);
    if (memcheckRaceEnabled() && at >= shared && at - shared < grid.sharedBytes &&
        (space == compiler::kMemcheckShared || space == compiler::kMemcheckGeneric))
      raceCheckShared(static_cast<uint32_t>(at - shared), size, access, ptxLine, source);
    if (memcheckRaceEnabled() && acquires) raceCheckAcquired(block);
    return;
  }
  // One report per launch: the first invalid access; other blocks stop without a line.
  if (grid.illegalAddress == nullptr || !grid.illegalAddress->exchange(true)) {
    if (misaligned && grid.misalignedAddress != nullptr) grid.misalignedAddress->store(true);
    char head[320];
    std::snprintf(head, sizeof head,
                  "memcheck: invalid %s %s of %" PRIu64 " bytes at 0x%" PRIxPTR
                  " by thread (%u,%u,%u) in block (%u,%u,%u) of kernel %.*s, PTX line %u",
                  spaceName(space), (access & compiler::kMemcheckWrite) ? "write" : "read", size,
                  at, thread.tid[0], thread.tid[1], thread.tid[2], block.ctaid[0],
                  block.ctaid[1], block.ctaid[2], static_cast<int>(grid.kernelName.size()),
                  grid.kernelName.data(), ptxLine);
    std::string line = head;
    if (source != nullptr) line += std::string(" (") + source + ")";
    log::error(line + ": " + problem);
  }
  stopBlock();
}

}  // extern "C"

std::vector<std::pair<std::string, void*>> memcheckRuntimeSymbols() {
  return {{"__rocuda_memcheck", reinterpret_cast<void*>(memcheckAccess)}};
}

}  // namespace rocuda::backends::cpu
