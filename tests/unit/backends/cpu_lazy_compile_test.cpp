// The CPU device compiles a module's globals when it loads it and each kernel on its first launch
// (compiler::HostUnit): kernels compiled apart share the module's globals, a kernel not launched
// is never compiled, concurrent first launches compile once, and compiled units come back from
// the code cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/device_backend.h"
#include "support/disk_cache.h"

namespace rocuda::backends {
namespace {

using compiler::CpuExecution;

class CpuLazyCompile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cacheDirectory_ = new std::string(testing::TempDir() + "rocuda-lazy-compile-cache-" +
                                      std::to_string(::getpid()));
    std::filesystem::remove_all(*cacheDirectory_);
    ::setenv("ROCUDA_CACHE", "1", 1);
    ::setenv("ROCUDA_CACHE_DIR", cacheDirectory_->c_str(), 1);
    ::unsetenv("CUDA_MODULE_LOADING");
    device_ = createCpuBackend().release();
  }
  static void TearDownTestSuite() {
    delete device_;
    device_ = nullptr;
    std::filesystem::remove_all(*cacheDirectory_);
    delete cacheDirectory_;
  }

  LoadedModule* load(const char* ptx, const char* name) {
    auto module = device_->loadPtx(ptx, name);
    EXPECT_TRUE(module.ok()) << (module.ok() ? "" : module.error().message);
    if (!module.ok()) return nullptr;
    modules_.push_back(std::move(*module));
    return modules_.back().get();
  }

  static Status launch(LoadedKernel& kernel, uint32_t threads, std::vector<const void*> args) {
    const compiler::KernelInfo& info = kernel.info();
    std::vector<uint8_t> params(info.paramBufferSize);
    for (size_t i = 0; i < args.size() && i < info.params.size(); ++i)
      std::memcpy(params.data() + info.params[i].offset, args[i], info.params[i].size);
    LaunchConfig config;
    config.grid = {1, 1, 1};
    config.block = {threads, 1, 1};
    return device_->launch(kernel, config, params.data());
  }

  static size_t cacheEntries() {
    size_t n = 0;
    if (!std::filesystem::exists(*cacheDirectory_)) return 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(*cacheDirectory_))
      n += entry.is_regular_file() ? 1 : 0;
    return n;
  }

  static DeviceBackend* device_;
  static std::string* cacheDirectory_;
  std::vector<std::unique_ptr<LoadedModule>> modules_;
};

DeviceBackend* CpuLazyCompile::device_ = nullptr;
std::string* CpuLazyCompile::cacheDirectory_ = nullptr;

// produce adds table[tid] to counter for four threads; consume copies counter out; twice calls a
// .func. Each kernel is compiled on its own, against the globals of the module's first unit.
const char* kTwoKernelsPtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 counter = 5;
.visible .const .align 4 .u32 table[4] = {1, 2, 3, 4};
.func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.u32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry produce()
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd1, %r1, 4;
  mov.u64 %rd2, table;
  add.s64 %rd3, %rd2, %rd1;
  ld.const.u32 %r2, [%rd3];
  atom.global.add.u32 %r3, [counter], %r2;
  ret;
}
.visible .entry consume(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [counter];
  {
  .param .b32 a;
  .param .b32 b;
  st.param.b32 [a], %r1;
  call.uni (b), twice, (a);
  ld.param.b32 %r2, [b];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

TEST_F(CpuLazyCompile, KernelsCompiledApartShareTheModulesGlobals) {
  LoadedModule* module = load(kTwoKernelsPtx, "two_kernels");
  ASSERT_NE(module, nullptr);
  LoadedKernel* produce = module->kernel("produce");
  LoadedKernel* consume = module->kernel("consume");
  ASSERT_NE(produce, nullptr);
  ASSERT_NE(consume, nullptr);
  // The globals exist, initialised, before any kernel is compiled.
  auto* counter = static_cast<uint32_t*>(module->globalAddress("counter"));
  ASSERT_NE(counter, nullptr);
  EXPECT_EQ(*counter, 5u);
  ASSERT_NE(module->globalAddress("table"), nullptr);
  // Not launched yet: described as translated (no block form chosen yet).
  EXPECT_EQ(consume->info().cpuExecution, CpuExecution::ThreadEntry);
  EXPECT_EQ(consume->info().params.size(), 1u);

  ASSERT_TRUE(launch(*produce, 4, {}).ok());
  EXPECT_EQ(*counter, 5u + 1 + 2 + 3 + 4);
  EXPECT_EQ(produce->info().cpuExecution, CpuExecution::BlockLoop);  // compiled now
  EXPECT_EQ(consume->info().cpuExecution, CpuExecution::ThreadEntry);

  uint32_t out = 0;
  void* o = &out;
  ASSERT_TRUE(launch(*consume, 1, {&o}).ok());
  EXPECT_EQ(out, 2 * 15u);
  // The host's writes to a global are what the next launch sees.
  *counter = 100;
  ASSERT_TRUE(launch(*consume, 1, {&o}).ok());
  EXPECT_EQ(out, 200u);
}

TEST_F(CpuLazyCompile, FirstLaunchesFromSeveralThreadsCompileOnce) {
  LoadedModule* module = load(kTwoKernelsPtx, "concurrent");
  ASSERT_NE(module, nullptr);
  LoadedKernel* produce = module->kernel("produce");
  ASSERT_NE(produce, nullptr);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { ok[t] = launch(*produce, 4, {}).ok() ? 1 : 0; });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 1) << "launch from thread " << t;
  auto* counter = static_cast<uint32_t*>(module->globalAddress("counter"));
  EXPECT_EQ(*counter, 5u + kThreads * 10u);
}

// An indirect call: the module takes a function's address, so one copy of the function must
// serve every kernel and the whole module is compiled when it is loaded.
const char* kIndirectPtx = R"(.version 7.0
.target sm_75
.address_size 64
.func (.param .b32 r) plus_one(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  add.u32 %r2, %r1, 1;
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry indirect(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, plus_one;
  mov.u32 %r1, 41;
  {
  .param .b32 a;
  .param .b32 b;
  st.param.b32 [a], %r1;
  prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
  call (b), %rd2, (a), prototype_0;
  ld.param.b32 %r2, [b];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

TEST_F(CpuLazyCompile, ModuleTakingAFunctionsAddressIsCompiledWholeAtLoad) {
  LoadedModule* module = load(kIndirectPtx, "indirect");
  ASSERT_NE(module, nullptr);
  LoadedKernel* kernel = module->kernel("indirect");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->info().cpuExecution, CpuExecution::BlockLoop);  // before any launch
  uint32_t out = 0;
  void* o = &out;
  ASSERT_TRUE(launch(*kernel, 1, {&o}).ok());
  EXPECT_EQ(out, 42u);
}

TEST_F(CpuLazyCompile, UnitsComeBackFromTheCodeCache) {
  if (DiskCache::instance().directory() != *cacheDirectory_)
    GTEST_SKIP() << "the process's code cache was set up by another test";
  const char* ptx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 cached_value = 7;
.visible .entry read_cached(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r1, [cached_value];
  st.global.u32 [%rd1], %r1;
  ret;
}
.visible .entry never_launched()
{
  ret;
}
)";
  size_t before = cacheEntries();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    LoadedModule* module = load(ptx, "cached");
    ASSERT_NE(module, nullptr);
    uint32_t out = 0;
    void* o = &out;
    ASSERT_TRUE(launch(*module->kernel("read_cached"), 1, {&o}).ok());
    EXPECT_EQ(out, 7u);
    EXPECT_EQ(module->kernel("read_cached")->info().cpuExecution, CpuExecution::BlockLoop);
    // The globals and the one kernel launched, stored by the first round and found by the
    // second; never_launched is never compiled.
    EXPECT_EQ(cacheEntries(), before + 2);
  }
}

}  // namespace
}  // namespace rocuda::backends
