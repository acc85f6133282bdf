#include "test_runtime.h"

#include <gtest/gtest.h>

#include <array>
#include <barrier>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace rocuda::compiler::test {
namespace {

struct ThreadState {
  Dim3 tid, ntid, ctaid, nctaid;
  uint8_t* shared = nullptr;
  size_t sharedBytes = 0;
  std::barrier<>* barrier = nullptr;
  std::vector<uint64_t>* slots = nullptr;  // one per thread of the block, for collectives
  uint32_t linear = 0;
};
thread_local ThreadState state;
std::atomic<int> printfCount{0};

extern "C" {
uint32_t sregTidX() { return state.tid.x; }
uint32_t sregTidY() { return state.tid.y; }
uint32_t sregTidZ() { return state.tid.z; }
uint32_t sregNtidX() { return state.ntid.x; }
uint32_t sregNtidY() { return state.ntid.y; }
uint32_t sregNtidZ() { return state.ntid.z; }
uint32_t sregCtaidX() { return state.ctaid.x; }
uint32_t sregCtaidY() { return state.ctaid.y; }
uint32_t sregCtaidZ() { return state.ctaid.z; }
uint32_t sregNctaidX() { return state.nctaid.x; }
uint32_t sregNctaidY() { return state.nctaid.y; }
uint32_t sregNctaidZ() { return state.nctaid.z; }
uint32_t sregLaneid() { return state.tid.x % 32; }
uint32_t sregWarpid() { return state.tid.x / 32; }
uint32_t sregZero() { return 0; }
uint64_t sregClock64() { return 12345; }
void* sharedBase() { return state.shared; }
int32_t isShared(const uint8_t* p) {
  return p >= state.shared && p < state.shared + state.sharedBytes ? 1 : 0;
}
void barrierSync(uint32_t, uint32_t) {
  if (state.barrier) state.barrier->arrive_and_wait();
}
void warpSync(uint32_t) {
  if (state.barrier) state.barrier->arrive_and_wait();
}
}

// Every thread publishes a value, then computes its result from all of them. The test launcher
// runs warp kernels with one warp per block, so the block barrier is the warp rendezvous.
template <class F>
uint64_t exchange(uint64_t mine, F f) {
  (*state.slots)[state.linear] = mine;
  state.barrier->arrive_and_wait();
  uint64_t r = f(*state.slots);
  state.barrier->arrive_and_wait();
  return r;
}

extern "C" {
uint64_t shflSync(uint32_t mode, uint32_t value, uint32_t b, uint32_t c, uint32_t) {
  return exchange(value, [&](const std::vector<uint64_t>& v) -> uint64_t {
    uint32_t lane = state.linear % 32, seg = (c >> 8) & 0x1f, clampv = c & 0x1f;
    uint32_t maxLane = (lane & seg) | (clampv & ~seg), minLane = lane & seg;
    int64_t j = lane;
    bool ok = false;
    switch (mode) {
      case 0:
        j = static_cast<int64_t>(lane) - b;
        ok = j >= maxLane;
        break;
      case 1:
        j = lane + b;
        ok = j <= maxLane;
        break;
      case 2:
        j = lane ^ b;
        ok = j <= maxLane;
        break;
      default:
        j = minLane | (b & ~seg);
        ok = j <= maxLane;
        break;
    }
    if (!ok) j = lane;
    return (v[j] & 0xffffffffu) | (static_cast<uint64_t>(ok) << 32);
  });
}
uint32_t voteSync(uint32_t mode, uint32_t pred, uint32_t) {
  return static_cast<uint32_t>(exchange(pred, [&](const std::vector<uint64_t>& v) -> uint64_t {
    uint32_t ballot = 0;
    for (size_t i = 0; i < v.size() && i < 32; ++i) ballot |= (v[i] ? 1u : 0u) << i;
    uint32_t full = v.size() >= 32 ? 0xffffffffu : (1u << v.size()) - 1;
    switch (mode) {
      case 0:
        return ballot == full;
      case 1:
        return ballot != 0;
      case 2:
        return ballot == full || ballot == 0;
      default:
        return ballot;
    }
  }));
}
uint32_t barrierReduce(uint32_t op, uint32_t, uint32_t, uint32_t pred) {
  return static_cast<uint32_t>(exchange(pred, [&](const std::vector<uint64_t>& v) -> uint64_t {
    uint32_t count = 0;
    for (uint64_t x : v) count += x ? 1 : 0;
    return op == 0 ? count : op == 1 ? count == v.size() : count != 0;
  }));
}
// mma: lane 0 of each warp runs the operation's tile function over the warp's records (lanes
// beyond the block contribute zeros), between the exchange's two rendezvous.
void mmaSync(void* tile, void*, void* record) {
  exchange(reinterpret_cast<uintptr_t>(record), [&](const std::vector<uint64_t>& v) -> uint64_t {
    if (state.linear % 32 != 0) return 0;
    std::array<uint64_t, kMatrixRecordSlots> absent{};
    std::array<void*, 32> records;
    for (size_t l = 0; l < 32; ++l)
      records[l] = state.linear + l < v.size() ? reinterpret_cast<void*>(v[state.linear + l])
                                               : absent.data();
    reinterpret_cast<void (*)(void* const*)>(tile)(records.data());
    return 0;
  });
}
void trap() { std::abort(); }
int vprintfStub(const char*, const void*) {
  ++printfCount;
  return 0;
}
}

}  // namespace

RuntimeSymbols testRuntimeSymbols() {
  return {
      {"__rocuda_sreg_tid_x", reinterpret_cast<void*>(&sregTidX)},
      {"__rocuda_sreg_tid_y", reinterpret_cast<void*>(&sregTidY)},
      {"__rocuda_sreg_tid_z", reinterpret_cast<void*>(&sregTidZ)},
      {"__rocuda_sreg_ntid_x", reinterpret_cast<void*>(&sregNtidX)},
      {"__rocuda_sreg_ntid_y", reinterpret_cast<void*>(&sregNtidY)},
      {"__rocuda_sreg_ntid_z", reinterpret_cast<void*>(&sregNtidZ)},
      {"__rocuda_sreg_ctaid_x", reinterpret_cast<void*>(&sregCtaidX)},
      {"__rocuda_sreg_ctaid_y", reinterpret_cast<void*>(&sregCtaidY)},
      {"__rocuda_sreg_ctaid_z", reinterpret_cast<void*>(&sregCtaidZ)},
      {"__rocuda_sreg_nctaid_x", reinterpret_cast<void*>(&sregNctaidX)},
      {"__rocuda_sreg_nctaid_y", reinterpret_cast<void*>(&sregNctaidY)},
      {"__rocuda_sreg_nctaid_z", reinterpret_cast<void*>(&sregNctaidZ)},
      {"__rocuda_sreg_laneid", reinterpret_cast<void*>(&sregLaneid)},
      {"__rocuda_sreg_warpid", reinterpret_cast<void*>(&sregWarpid)},
      {"__rocuda_sreg_smid", reinterpret_cast<void*>(&sregZero)},
      {"__rocuda_sreg_clock64", reinterpret_cast<void*>(&sregClock64)},
      {"__rocuda_shared_base", reinterpret_cast<void*>(&sharedBase)},
      {"__rocuda_is_shared", reinterpret_cast<void*>(&isShared)},
      {"__rocuda_barrier_sync", reinterpret_cast<void*>(&barrierSync)},
      {"__rocuda_warp_sync", reinterpret_cast<void*>(&warpSync)},
      {"__rocuda_shfl_sync", reinterpret_cast<void*>(&shflSync)},
      {"__rocuda_mma_sync", reinterpret_cast<void*>(&mmaSync)},
      {"__rocuda_vote_sync", reinterpret_cast<void*>(&voteSync)},
      {"__rocuda_barrier_reduce", reinterpret_cast<void*>(&barrierReduce)},
      {"__rocuda_trap", reinterpret_cast<void*>(&trap)},
      {"vprintf", reinterpret_cast<void*>(&vprintfStub)},
  };
}

int vprintfCalls() { return printfCount.load(); }

std::unique_ptr<Loaded> compileAndLoad(std::string_view ptx, std::string_view name, int optLevel) {
  CompileOptions options;
  options.optLevel = optLevel;
  options.blockFunctions = false;  // this runtime drives one thread per call
  options.blockOnOneHostThread = false;  // ... and a barrier kernel's threads as OS threads
  auto object = compileForHost(ptx, name, options);
  if (!object.ok()) {
    ADD_FAILURE() << "compileForHost: " << object.error().message;
    return nullptr;
  }
  auto loaded = std::make_unique<Loaded>();
  loaded->object = std::move(*object);
  auto code = loadHostCode(loaded->object, testRuntimeSymbols());
  if (!code.ok()) {
    ADD_FAILURE() << "loadHostCode: " << code.error().message;
    return nullptr;
  }
  loaded->code = std::move(*code);
  return loaded;
}

std::vector<uint8_t> packParams(const KernelInfo& kernel, const std::vector<const void*>& args) {
  std::vector<uint8_t> buffer(std::max<uint32_t>(kernel.paramBufferSize, 1));
  for (size_t i = 0; i < kernel.params.size() && i < args.size(); ++i)
    std::memcpy(buffer.data() + kernel.params[i].offset, args[i], kernel.params[i].size);
  return buffer;
}

bool launch(Loaded& loaded, const std::string& name, Dim3 grid, Dim3 block,
            const std::vector<const void*>& args, uint32_t dynamicShared) {
  const KernelInfo* kernel = loaded.object.info.findKernel(name);
  auto* fn = reinterpret_cast<void (*)(void*)>(loaded.code->lookup(name));
  if (!kernel || !fn) return false;
  std::vector<uint8_t> params = packParams(*kernel, args);
  uint32_t threads = block.x * block.y * block.z;
  std::vector<uint8_t> shared(kernel->dynamicSharedOffset + dynamicShared + 16);
  for (uint32_t bz = 0; bz < grid.z; ++bz)
    for (uint32_t by = 0; by < grid.y; ++by)
      for (uint32_t bx = 0; bx < grid.x; ++bx) {
        std::fill(shared.begin(), shared.end(), 0xcd);
        std::vector<uint64_t> slots(threads);
        auto run = [&](uint32_t linear, std::barrier<>* barrier) {
          state.slots = &slots;
          state.linear = linear;
          state.ntid = block;
          state.nctaid = grid;
          state.ctaid = {bx, by, bz};
          state.tid = {linear % block.x, linear / block.x % block.y, linear / (block.x * block.y)};
          state.shared = shared.data();
          state.sharedBytes = shared.size();
          state.barrier = barrier;
          fn(params.data());
        };
        if (!kernel->usesBarriers && !kernel->usesWarpCollectives) {
          for (uint32_t t = 0; t < threads; ++t) run(t, nullptr);
          continue;
        }
        std::barrier<> barrier(threads);
        std::vector<std::thread> pool;
        for (uint32_t t = 0; t < threads; ++t) pool.emplace_back(run, t, &barrier);
        for (auto& th : pool) th.join();
      }
  return true;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace rocuda::compiler::test
