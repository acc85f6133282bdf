// cuGetProcAddress's choice of variant, on the real table (entry_points.def) with stand-in
// function addresses, and on every lookup CUDA 13's cudart makes.
#include "api/cuda/proc_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace rocuda::api {
namespace {

char gStandIn;  // any non-null address marks an implemented row

const EntryPoint kTable[] = {
#define ROCUDA_ENTRY(api, version, symbol, stream) \
  {#api, version, #symbol, StreamVariant::stream, &gStandIn},
#define ROCUDA_MISSING(api, version, symbol, stream) \
  {#api, version, #symbol, StreamVariant::stream, nullptr},
#include "api/cuda/entry_points.def"
};

std::string resolvedSymbol(std::string_view api, int version, bool perThread = false) {
  ProcLookup lookup = resolveProc(kTable, api, version, perThread);
  return lookup.entry != nullptr ? lookup.entry->symbol : "";
}

TEST(ProcTable, PicksTheHighestVersionNotAboveTheCaller) {
  EXPECT_EQ(resolvedSymbol("cuMemAlloc", 3020), "cuMemAlloc_v2");
  EXPECT_EQ(resolvedSymbol("cuMemAlloc", 13000), "cuMemAlloc_v2");
  EXPECT_EQ(resolvedSymbol("cuMemAlloc", 2000), "cuMemAlloc");
  EXPECT_EQ(resolvedSymbol("cuCtxGetDevice", 2000), "cuCtxGetDevice");
  EXPECT_EQ(resolvedSymbol("cuCtxGetDevice", 12090), "cuCtxGetDevice");
  EXPECT_EQ(resolvedSymbol("cuCtxGetDevice", 13000), "cuCtxGetDevice_v2");
  EXPECT_EQ(resolvedSymbol("cuCtxSynchronize", 13000), "cuCtxSynchronize_v2");
  EXPECT_EQ(resolvedSymbol("cuEventElapsedTime", 12080), "cuEventElapsedTime_v2");
  EXPECT_EQ(resolvedSymbol("cuEventElapsedTime", 12000), "cuEventElapsedTime");
  EXPECT_EQ(resolvedSymbol("cuCtxCreate", 3020), "cuCtxCreate_v2");
  EXPECT_EQ(resolvedSymbol("cuCtxCreate", 13000), "cuCtxCreate_v4");
  EXPECT_EQ(resolvedSymbol("cuStreamGetCaptureInfo", 11030), "cuStreamGetCaptureInfo_v2");
  EXPECT_EQ(resolvedSymbol("cuGraphInstantiate", 11000), "cuGraphInstantiate_v2");
  EXPECT_EQ(resolvedSymbol("cuGetProcAddress", 12000), "cuGetProcAddress_v2");
  // Versions as NVIDIA's own clients ask for them (cuda-python's tables): the error log API
  // from CUDA 12.8, batch decompression from 12.6.
  EXPECT_EQ(resolvedSymbol("cuLogsRegisterCallback", 12080), "cuLogsRegisterCallback");
  EXPECT_EQ(resolvedSymbol("cuLogsCurrent", 12070), "");
  EXPECT_EQ(resolvedSymbol("cuMemBatchDecompressAsync", 12060), "cuMemBatchDecompressAsync");
}

TEST(ProcTable, PerThreadFlagPicksThePtdsVariant) {
  EXPECT_EQ(resolvedSymbol("cuMemcpyHtoD", 7000, true), "cuMemcpyHtoD_v2_ptds");
  EXPECT_EQ(resolvedSymbol("cuMemcpyHtoD", 7000, false), "cuMemcpyHtoD_v2");
  EXPECT_EQ(resolvedSymbol("cuLaunchKernel", 7000, true), "cuLaunchKernel_ptsz");
  EXPECT_EQ(resolvedSymbol("cuMemcpyAsync", 7000, true), "cuMemcpyAsync_ptsz");
  EXPECT_EQ(resolvedSymbol("cuStreamBeginCapture", 10010, true), "cuStreamBeginCapture_v2_ptsz");
  // Too old for the per-thread variant, or a name without one: the legacy variant.
  EXPECT_EQ(resolvedSymbol("cuMemcpyHtoD", 3020, true), "cuMemcpyHtoD_v2");
  EXPECT_EQ(resolvedSymbol("cuStreamCreate", 2000, true), "cuStreamCreate");
}

TEST(ProcTable, StatusOfMissingUnknownAndTooOld) {
  EXPECT_EQ(resolveProc(kTable, "cuMemAlloc", 3020, false).status, ProcStatus::Found);
  // The 32-bit-size cuDeviceTotalMem of CUDA 2.0 (NVIDIA's driver dropped it): not implemented.
  ProcLookup missing = resolveProc(kTable, "cuDeviceTotalMem", 2000, false);
  EXPECT_EQ(missing.status, ProcStatus::SymbolNotFound);
  ASSERT_NE(missing.entry, nullptr);
  EXPECT_EQ(missing.entry->function, nullptr);
  ProcLookup unknown = resolveProc(kTable, "", 0, false);
  EXPECT_EQ(unknown.status, ProcStatus::SymbolNotFound);
  EXPECT_EQ(unknown.entry, nullptr);
  EXPECT_EQ(resolveProc(kTable, "cuNoSuchThing", 13000, false).status, ProcStatus::SymbolNotFound);
  EXPECT_EQ(resolveProc(kTable, "cuMemAlloc", 1000, false).status,
            ProcStatus::VersionNotSufficient);
}

TEST(ProcTable, RowsAreUniqueAndWellFormed) {
  std::set<std::tuple<std::string, int, StreamVariant>> seen;
  std::map<std::string, std::string> symbolOwner;
  for (const EntryPoint& entry : kTable) {
    EXPECT_TRUE(seen.emplace(entry.api, entry.version, entry.stream).second)
        << entry.api << "@" << entry.version;
    EXPECT_EQ(std::string(entry.symbol).rfind(entry.api, 0), 0u)
        << entry.symbol << " does not start with " << entry.api;
    auto [it, inserted] = symbolOwner.emplace(entry.symbol, entry.api);
    EXPECT_EQ(it->second, entry.api) << entry.symbol;
    bool perThreadName = std::string(entry.symbol).find("_pt") != std::string::npos;
    EXPECT_EQ(perThreadName, entry.stream == StreamVariant::PerThread) << entry.symbol;
  }
}

// Every lookup cudart 13 makes (name, version, flags) finds its variant in the table.
TEST(ProcTable, EveryCudart13RequestHasAVariant) {
  std::ifstream file(ROCUDA_API_TEST_INPUTS "/cudart13_requests.txt");
  ASSERT_TRUE(file.good());
  std::string line;
  int requests = 0, implemented = 0;
  std::set<std::string> names;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string name;
    int version = 0, flags = 0;
    if (!(fields >> name >> version >> flags)) continue;  // the first lookup, of "", has no name
    ++requests;
    names.insert(name);
    ProcLookup lookup = resolveProc(kTable, name, version, (flags & 2) != 0);
    ASSERT_NE(lookup.entry, nullptr) << name << "@" << version;
    EXPECT_NE(lookup.status, ProcStatus::VersionNotSufficient) << name;
    if ((flags & 2) != 0) {
      EXPECT_EQ(lookup.entry->stream, StreamVariant::PerThread) << name << "@" << version;
    }
    if (lookup.status == ProcStatus::Found) ++implemented;
  }
  EXPECT_EQ(requests, 439);
  EXPECT_EQ(names.size(), 345u);  // plus the nameless first lookup
  EXPECT_GE(implemented, 150);
}

}  // namespace
}  // namespace rocuda::api
