// ModuleInfo lookups and its compact binary form (little-endian, length-prefixed strings). The
// reader checks every length against the bytes left, so malformed input is an error, not a crash.
#include <cstring>

#include "compiler/compiler.h"

namespace rocuda::compiler {
namespace {

constexpr uint8_t kMagic[4] = {'R', 'C', 'M', 'I'};
constexpr uint32_t kFormatVersion = 16;

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool u8(uint8_t& v) {
    if (left() < 1) return false;
    v = data_[pos_++];
    return true;
  }
  bool u32(uint32_t& v) {
    if (left() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(data_[pos_++]) << (8 * i);
    return true;
  }
  bool u64(uint64_t& v) {
    if (left() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(data_[pos_++]) << (8 * i);
    return true;
  }
  bool str(std::string& s) {
    uint32_t n = 0;
    if (!u32(n) || left() < n) return false;
    s.assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return true;
  }
  // A count of items each at least `minBytes` long must fit in what is left.
  bool count(uint32_t& n, size_t minBytes) { return u32(n) && n <= left() / minBytes; }
  size_t left() const { return size_ - pos_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

bool readKernel(Reader& r, KernelInfo& k) {
  uint32_t params = 0;
  if (!r.str(k.name) || !r.count(params, 12)) return false;
  k.params.resize(params);
  for (auto& p : k.params)
    if (!r.u32(p.offset) || !r.u32(p.size) || !r.u32(p.alignment)) return false;
  if (!r.u32(k.paramBufferSize) || !r.u32(k.staticSharedBytes) || !r.u32(k.dynamicSharedOffset) ||
      !r.u32(k.localBytesPerThread))
    return false;
  for (auto& v : k.maxntid)
    if (!r.u32(v)) return false;
  for (auto& v : k.reqntid)
    if (!r.u32(v)) return false;
  for (auto& v : k.reqnctapercluster)
    if (!r.u32(v)) return false;
  uint8_t flags = 0;
  if (!r.u8(flags)) return false;
  k.usesBarriers = (flags & 1) != 0;
  k.usesWarpCollectives = (flags & 2) != 0;
  k.spinWaits = (flags & 4) != 0;
  k.spinWaitsOnBlockMemory = (flags & 8) != 0;
  k.usesReservedShared = (flags & 16) != 0;
  k.usesPrintf = (flags & 32) != 0;
  k.usesDeviceMalloc = (flags & 64) != 0;
  k.explicitCluster = (flags & 128) != 0;
  uint8_t moreFlags = 0;
  if (!r.u8(moreFlags)) return false;
  k.readsLaunchRegisters = (moreFlags & 1) != 0;
  k.launchesGrids = (moreFlags & 2) != 0;
  k.launchesGraphs = (moreFlags & 4) != 0;
  k.updatesGraphNodes = (moreFlags & 8) != 0;
  k.cpuChainsBlocks = (moreFlags & 16) != 0;
  uint8_t execution = 0;
  if (!r.u8(execution) || execution > static_cast<uint8_t>(CpuExecution::Continuation))
    return false;
  k.cpuExecution = static_cast<CpuExecution>(execution);
  uint8_t lockstep = 0;
  uint32_t sites = 0;
  if (!r.u32(k.cpuFrameBytes) || !r.u32(k.cpuUniformFrameBytes) ||
      !r.u32(k.cpuStreamingStoreBytes) || !r.count(sites, 24))
    return false;
  k.cpuWarpSites.resize(sites);
  for (auto& site : k.cpuWarpSites) {
    uint32_t op = 0, mode = 0, b = 0, c = 0;
    if (!r.u32(op) || !r.u32(site.constants) || !r.u32(mode) || !r.u32(b) || !r.u32(c) ||
        !r.u32(site.mask))
      return false;
    site.op = static_cast<int32_t>(op);
    site.mode = static_cast<int32_t>(mode);
    site.b = static_cast<int32_t>(b);
    site.c = static_cast<int32_t>(c);
  }
  uint8_t flat = 0;
  if (!r.u8(lockstep) || lockstep > 1 || !r.u8(flat) || flat > 1) return false;
  k.cpuLockstep = lockstep != 0;
  k.cpuFlat = flat != 0;
  return r.u32(k.cpuLockstepFrameBytes) && r.u32(k.cpuLockstepUniformFrameBytes) &&
         r.str(k.cpuSlowPathReason) && r.str(k.unsupported);
}

}  // namespace

std::string blockLoopSymbol(std::string_view kernel) {
  return "__rocuda_block_" + std::string(kernel);
}

std::string continuationSymbol(std::string_view kernel) {
  return "__rocuda_step_" + std::string(kernel);
}

std::string roundSymbol(std::string_view kernel) {
  return "__rocuda_round_" + std::string(kernel);
}

std::string lockstepName(std::string_view kernel) { return std::string(kernel) + ".lockstep"; }

std::string flatSymbol(std::string_view kernel) { return "__rocuda_flat_" + std::string(kernel); }

std::string streamingBlockLoopSymbol(std::string_view kernel) {
  return "__rocuda_streaming_" + std::string(kernel);
}

std::string flatExtentSymbol(std::string_view kernel) {
  return "__rocuda_flat_extent_" + std::string(kernel);
}

std::string hostEntrySymbol(const KernelInfo& kernel) {
  switch (kernel.cpuExecution) {
    case CpuExecution::BlockLoop: return blockLoopSymbol(kernel.name);
    case CpuExecution::Continuation: return continuationSymbol(kernel.name);
    case CpuExecution::ThreadEntry: break;
  }
  return kernel.name;
}

const KernelInfo* ModuleInfo::findKernel(std::string_view name) const {
  for (const auto& k : kernels)
    if (k.name == name) return &k;
  return nullptr;
}

const GlobalInfo* ModuleInfo::findGlobal(std::string_view name) const {
  for (const auto& g : globals)
    if (g.name == name) return &g;
  return nullptr;
}

std::vector<uint8_t> ModuleInfo::serialize() const {
  Writer w;
  for (uint8_t m : kMagic) w.u8(m);
  w.u32(kFormatVersion);
  w.u32(static_cast<uint32_t>(kernels.size()));
  for (const auto& k : kernels) {
    w.str(k.name);
    w.u32(static_cast<uint32_t>(k.params.size()));
    for (const auto& p : k.params) {
      w.u32(p.offset);
      w.u32(p.size);
      w.u32(p.alignment);
    }
    w.u32(k.paramBufferSize);
    w.u32(k.staticSharedBytes);
    w.u32(k.dynamicSharedOffset);
    w.u32(k.localBytesPerThread);
    for (uint32_t v : k.maxntid) w.u32(v);
    for (uint32_t v : k.reqntid) w.u32(v);
    for (uint32_t v : k.reqnctapercluster) w.u32(v);
    w.u8(static_cast<uint8_t>((k.usesBarriers ? 1 : 0) | (k.usesWarpCollectives ? 2 : 0) |
                              (k.spinWaits ? 4 : 0) | (k.spinWaitsOnBlockMemory ? 8 : 0) |
                              (k.usesReservedShared ? 16 : 0) | (k.usesPrintf ? 32 : 0) |
                              (k.usesDeviceMalloc ? 64 : 0) | (k.explicitCluster ? 128 : 0)));
    w.u8(static_cast<uint8_t>((k.readsLaunchRegisters ? 1 : 0) | (k.launchesGrids ? 2 : 0) |
                              (k.launchesGraphs ? 4 : 0) | (k.updatesGraphNodes ? 8 : 0) |
                              (k.cpuChainsBlocks ? 16 : 0)));
    w.u8(static_cast<uint8_t>(k.cpuExecution));
    w.u32(k.cpuFrameBytes);
    w.u32(k.cpuUniformFrameBytes);
    w.u32(k.cpuStreamingStoreBytes);
    w.u32(static_cast<uint32_t>(k.cpuWarpSites.size()));
    for (const auto& site : k.cpuWarpSites)
      for (uint32_t v :
           {static_cast<uint32_t>(site.op), site.constants, static_cast<uint32_t>(site.mode),
            static_cast<uint32_t>(site.b), static_cast<uint32_t>(site.c), site.mask})
        w.u32(v);
    w.u8(k.cpuLockstep ? 1 : 0);
    w.u8(k.cpuFlat ? 1 : 0);
    w.u32(k.cpuLockstepFrameBytes);
    w.u32(k.cpuLockstepUniformFrameBytes);
    w.str(k.cpuSlowPathReason);
    w.str(k.unsupported);
  }
  w.u32(static_cast<uint32_t>(globals.size()));
  for (const auto& g : globals) {
    w.str(g.name);
    w.u8(static_cast<uint8_t>(g.space));
    w.u64(g.size);
    w.u8((g.initialized ? 1 : 0) | (g.managed ? 2 : 0));
  }
  w.u8(kernelsCompiledSeparately ? 1 : 0);
  return w.take();
}

Result<ModuleInfo> ModuleInfo::deserialize(const uint8_t* data, size_t size) {
  auto bad = [](const char* why) {
    return makeError(ErrorCode::InvalidImage, std::string("malformed module info: ") + why);
  };
  if (!data && size) return bad("null data");
  Reader r(data, size);
  uint8_t magic[4];
  for (auto& m : magic)
    if (!r.u8(m)) return bad("truncated header");
  if (std::memcmp(magic, kMagic, 4) != 0) return bad("bad magic");
  uint32_t version = 0;
  if (!r.u32(version) || version != kFormatVersion) return bad("unknown format version");
  ModuleInfo info;
  uint32_t kernels = 0;
  if (!r.count(kernels, 4 + 4 + 4 * 4 + 6 * 4 + 1)) return bad("bad kernel count");
  info.kernels.resize(kernels);
  for (auto& k : info.kernels)
    if (!readKernel(r, k)) return bad("truncated kernel");
  uint32_t globals = 0;
  if (!r.count(globals, 4 + 1 + 8 + 1)) return bad("bad global count");
  info.globals.resize(globals);
  for (auto& g : info.globals) {
    uint8_t space = 0, flags = 0;
    if (!r.str(g.name) || !r.u8(space) || !r.u64(g.size) || !r.u8(flags))
      return bad("truncated global");
    if (flags > 3) return bad("bad global flags");
    g.initialized = (flags & 1) != 0;
    g.managed = (flags & 2) != 0;
    if (space != static_cast<uint8_t>(ptx::StateSpace::Global) &&
        space != static_cast<uint8_t>(ptx::StateSpace::Const))
      return bad("bad global state space");
    g.space = static_cast<ptx::StateSpace>(space);
  }
  uint8_t separately = 0;
  if (!r.u8(separately) || separately > 1) return bad("bad unit flag");
  info.kernelsCompiledSeparately = separately != 0;
  if (r.left() != 0) return bad("trailing bytes");
  return info;
}

}  // namespace rocuda::compiler
