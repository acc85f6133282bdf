// ROCUDA_MEMCHECK=race: the shared-memory race check (see memcheck.h). A shadow word per 4 bytes
// of the block's shared window remembers the last writer and the last reader in the current
// barrier epoch (BlockState::barrierEpoch, advanced whenever a block barrier completes) and which
// of the word's bytes each touched; an access to one of those bytes by a thread of another warp
// in the same epoch is a race (threads writing different bytes of one word do not conflict).
// Threads of one warp are not compared: they may order their accesses with __syncwarp or warp
// collectives, which this check does not track. A wait that sees an mbarrier phase complete
// (cuda::barrier, cuda::pipeline) starts a new epoch too, as a block barrier does: accesses
// before the phase's arrivals and after its waits are ordered (raceCheckMBarrierPassed); so does
// any acquire (cuda::std::barrier's and atomic flags' release/acquire pairs, fences:
// raceCheckAcquired). Strong accesses (atomics, volatile/relaxed/acquire/release loads and
// stores) never race with one another.
#include <algorithm>
#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backends/cpu/execution.h"
#include "backends/cpu/memcheck.h"
#include "support/log.h"

namespace rocuda::backends::cpu {
namespace {

constexpr uint32_t kWarp = 32;
constexpr size_t kReportsPerLaunch = 8;

struct ShadowWord {
  uint64_t stamp = 0;  // (block serial << 32) | barrier epoch the entries below belong to
  int32_t writer = -1, reader = -1;  // linear thread ids, -1 none
  uint32_t writerLine = 0, readerLine = 0;
  const char* writerSource = nullptr;
  const char* readerSource = nullptr;
  bool writerAtomic = false, readerAtomic = false;  // atomics (mbarrier waits) never race
  uint8_t writerBytes = 0, readerBytes = 0;  // bit i: byte i of the word
};

// Per worker thread: the shadow of the block it runs (blocks run one at a time per worker).
struct Shadow {
  std::vector<ShadowWord> words;
  const BlockState* block = nullptr;
  std::array<uint32_t, 3> ctaid{};
  uint32_t gridId = 0;
  uint64_t serial = 0;
  // mbarrier phases seen completed by a wait (address -> its phase bit after the completion);
  // each, and each acquire, starts a new epoch, as a block barrier does.
  std::unordered_map<uintptr_t, uint64_t> mbarrierPhases;
  uint32_t syncEpochs = 0;
  uint64_t stamp(const BlockState& b) const {
    return (serial << 32) | static_cast<uint32_t>(b.barrierEpoch + syncEpochs);
  }
};

Shadow& shadowOf(const BlockState& block) {
  static thread_local Shadow shadow;
  const GridState& grid = *block.grid;
  if (shadow.block != &block || shadow.ctaid != block.ctaid || shadow.gridId != grid.gridId) {
    shadow.block = &block;
    shadow.ctaid = block.ctaid;
    shadow.gridId = grid.gridId;
    ++shadow.serial;  // every word's stamp is stale now: no clearing needed
    shadow.mbarrierPhases.clear();
    shadow.syncEpochs = 0;
  }
  size_t words = (size_t{grid.sharedBytes} + 3) / 4;
  if (shadow.words.size() < words) shadow.words.resize(words);
  return shadow;
}

std::string threadName(uint32_t linear, const std::array<uint32_t, 3>& extent) {
  uint32_t x = linear % extent[0], y = linear / extent[0] % extent[1],
           z = linear / (extent[0] * extent[1]);
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

std::string where(uint32_t line, const char* source) {
  std::string text = "PTX line " + std::to_string(line);
  if (source != nullptr) text += std::string(" (") + source + ")";
  return text;
}

// One error line per distinct (launch, kind, lines) hazard, at most kReportsPerLaunch a launch.
void report(const char* kind, uint32_t offset, uint64_t size, uint32_t otherTid,
            uint32_t otherLine, const char* otherSource, const char* otherAccess,
            uint32_t ptxLine, const char* source, const char* access) {
  const ThreadState& thread = *currentThread();
  const BlockState& block = *thread.block;
  const GridState& grid = *block.grid;
  static std::mutex mutex;
  static std::set<std::tuple<uint32_t, std::string, uint32_t, uint32_t>> seen;
  static uint32_t seenGrid = 0;
  static size_t count = 0;
  {
    std::lock_guard lock(mutex);
    if (seenGrid != grid.gridId) {
      seenGrid = grid.gridId;
      seen.clear();
      count = 0;
    }
    if (count >= kReportsPerLaunch) return;
    if (!seen.emplace(grid.gridId, kind, otherLine, ptxLine).second) return;
    ++count;
  }
  char head[200];
  std::snprintf(head, sizeof head,
                "memcheck: shared memory race (%s) in block (%u,%u,%u) of kernel %.*s: ", kind,
                block.ctaid[0], block.ctaid[1], block.ctaid[2],
                static_cast<int>(grid.kernelName.size()), grid.kernelName.data());
  log::error(std::string(head) + access + " of " + std::to_string(size) +
             " bytes at shared offset " + std::to_string(offset) + " by thread " +
             threadName(thread.linearTid, grid.block) + ", " + where(ptxLine, source) +
             ", conflicts with a " + otherAccess + " by thread " +
             threadName(otherTid, grid.block) + ", " + where(otherLine, otherSource) +
             ", with no barrier between");
}

}  // namespace

void raceCheckShared(uint32_t offset, uint64_t size, uint32_t access, uint32_t ptxLine,
                     const char* source) {
  const ThreadState& thread = *currentThread();
  const BlockState& block = *thread.block;
  Shadow& shadow = shadowOf(block);
  uint64_t stamp = shadow.stamp(block);
  bool write = (access & compiler::kMemcheckWrite) != 0;
  bool atomic = (access & compiler::kMemcheckAtomic) != 0;
  int32_t self = static_cast<int32_t>(thread.linearTid);
  auto otherWarp = [&](int32_t tid) {
    return tid >= 0 && static_cast<uint32_t>(tid) / kWarp != thread.linearTid / kWarp;
  };
  uint64_t last = size == 0 ? offset : offset + size - 1;
  for (uint64_t word = offset / 4; word <= last / 4 && word < shadow.words.size(); ++word) {
    ShadowWord& w = shadow.words[word];
    if (w.stamp != stamp) w = ShadowWord{stamp};
    uint8_t bytes = 0;  // the bytes of this word the access touches
    for (uint64_t b = std::max<uint64_t>(offset, word * 4); b <= std::min(last, word * 4 + 3); ++b)
      bytes |= static_cast<uint8_t>(1u << (b % 4));
    const char* mine = atomic ? "atomic" : write ? "write" : "read";
    if (otherWarp(w.writer) && (w.writerBytes & bytes) != 0 && !(atomic && w.writerAtomic)) {
      report(write ? "write after write" : "read after write", offset, size,
             static_cast<uint32_t>(w.writer), w.writerLine, w.writerSource,
             w.writerAtomic ? "atomic" : "write", ptxLine, source, mine);
    } else if (write && otherWarp(w.reader) && (w.readerBytes & bytes) != 0 &&
               !(atomic && w.readerAtomic)) {
      report("write after read", offset, size, static_cast<uint32_t>(w.reader), w.readerLine,
             w.readerSource, "read", ptxLine, source, mine);
    }
    // The last access is remembered (with the earlier one's bytes while the thread is the same).
    if (write) {
      w.writerBytes = w.writer == self ? static_cast<uint8_t>(w.writerBytes | bytes) : bytes;
      w.writer = self;
      w.writerLine = ptxLine;
      w.writerSource = source;
      w.writerAtomic = atomic;
    } else {
      w.readerBytes = w.reader == self ? static_cast<uint8_t>(w.readerBytes | bytes) : bytes;
      w.reader = self;
      w.readerLine = ptxLine;
      w.readerSource = source;
      w.readerAtomic = atomic;
    }
  }
}

void raceCheckMBarrierPassed(const BlockState& block, const void* mbarrier) {
  Shadow& shadow = shadowOf(block);
  auto* word = static_cast<const std::atomic<uint64_t>*>(mbarrier);
  uint64_t phase = word->load(std::memory_order_acquire) >> 63;
  auto [it, first] =
      shadow.mbarrierPhases.try_emplace(reinterpret_cast<uintptr_t>(mbarrier), phase);
  if (first || it->second != phase) {
    it->second = phase;
    ++shadow.syncEpochs;
  }
}

void raceCheckAcquired(const BlockState& block) { ++shadowOf(block).syncEpochs; }

}  // namespace rocuda::backends::cpu
