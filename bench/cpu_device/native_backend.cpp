// Way (c): the OpenMP versions on host buffers, timed like the others.
#include <cstdlib>
#include <cstring>

#include "workload.h"

namespace rocuda::bench {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

class NativeBackend final : public Backend {
 public:
  const char* name() const override { return "OpenMP"; }
  std::string unavailable() const override { return {}; }

  RunResult run(const Workload& workload, const MeasureOptions& options) override {
    RunResult result;
    std::vector<std::unique_ptr<void, FreeDeleter>> storage;
    BufferPointers pointers;
    for (const BufferSpec& spec : workload.buffers) {
      // 64-byte aligned, as a device allocation would be.
      std::size_t bytes = (spec.bytes + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, bytes == 0 ? 64 : bytes);
      if (p == nullptr) {
        result.error = "out of memory";
        return result;
      }
      if (spec.init.empty())
        std::memset(p, 0, spec.bytes);
      else
        std::memcpy(p, spec.init.data(), spec.bytes);
      storage.emplace_back(p);
      pointers.push_back(p);
    }
    auto prepare = [&]() -> std::string {
      for (std::size_t i = 0; i < workload.buffers.size(); ++i)
        if (workload.buffers[i].zeroEachRun) std::memset(pointers[i], 0, workload.buffers[i].bytes);
      return {};
    };
    auto run = [&]() -> std::string {
      for (int l = 0; l < workload.launchesPerRun; ++l) workload.native(pointers);
      return {};
    };
    result.error = measure(options, workload.launchesPerRun, prepare, run, result.timing);
    if (!result.error.empty()) return result;
    result.ran = true;
    result.verifyError = workload.verify(pointers);
    return result;
  }
};

}  // namespace

std::unique_ptr<Backend> makeNativeBackend() { return std::make_unique<NativeBackend>(); }

}  // namespace rocuda::bench
