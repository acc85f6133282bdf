// Way (a): the nvcc-built PTX of kernels.cu on Rocuda's CPU device, through the driver API of
// Rocuda's libcuda.so.1, loaded by path with dlopen (so NVIDIA's stub or driver never stands in).
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "rocuda/cuda_abi.h"
#include "workload.h"

extern const char kRocudaBenchPtx[];

namespace rocuda::bench {
namespace {

using namespace rocuda::cuda;

// The driver entry points used, as resolved from the library.
struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*primaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*ctxSynchronize)() = nullptr;
  CUresult (*moduleLoadDataEx)(CUmodule*, const void*, unsigned, CUjit_option*, void**) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*memAlloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*memFree)(CUdeviceptr) = nullptr;
  CUresult (*memcpyHtoD)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*memcpyDtoH)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*memsetD32)(CUdeviceptr, unsigned, std::size_t) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**) = nullptr;
  CUresult (*getErrorName)(CUresult, const char**) = nullptr;
};

class RocudaBackend final : public Backend {
 public:
  explicit RocudaBackend(const std::string& path) { problem_ = open(path); }

  const char* name() const override { return "Rocuda"; }
  std::string unavailable() const override { return problem_; }

  // cuModuleLoadDataEx compiles the PTX to host code (or finds it in Rocuda's code cache).
  std::string setupNote() const override {
    char text[96];
    std::snprintf(text, sizeof text, "cuModuleLoadDataEx, one module per kernel: %.3f s for %d",
                  loadSeconds_, loaded_);
    return text;
  }

  RunResult run(const Workload& workload, const MeasureOptions& options) override {
    RunResult result;
    if (!problem_.empty()) {
      result.error = problem_;
      return result;
    }
    CUfunction function = nullptr;
    if (std::string err = loadKernel(workload.kernel, function); !err.empty()) {
      result.error = err;
      return result;
    }
    std::vector<CUdeviceptr> device(workload.buffers.size(), 0);
    result.error = runWith(workload, options, function, device, result);
    for (CUdeviceptr p : device)
      if (p != 0) d_.memFree(p);
    return result;
  }

 private:
  std::string open(const std::string& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return std::string("dlopen failed: ") + dlerror();
    std::string missing;
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, symbol));
      if (fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + symbol;
    };
    get(d_.init, "cuInit");
    get(d_.deviceGet, "cuDeviceGet");
    get(d_.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    get(d_.ctxSetCurrent, "cuCtxSetCurrent");
    get(d_.ctxSynchronize, "cuCtxSynchronize");
    get(d_.moduleLoadDataEx, "cuModuleLoadDataEx");
    get(d_.moduleGetFunction, "cuModuleGetFunction");
    get(d_.memAlloc, "cuMemAlloc_v2");
    get(d_.memFree, "cuMemFree_v2");
    get(d_.memcpyHtoD, "cuMemcpyHtoD_v2");
    get(d_.memcpyDtoH, "cuMemcpyDtoH_v2");
    get(d_.memsetD32, "cuMemsetD32_v2");
    get(d_.launchKernel, "cuLaunchKernel");
    get(d_.getErrorName, "cuGetErrorName");
    if (!missing.empty()) return path + " lacks " + missing;

    CUdevice device = 0;
    CUcontext context = nullptr;
    if (CUresult r = d_.init(0)) return describe("cuInit", r);
    if (CUresult r = d_.deviceGet(&device, 0)) return describe("cuDeviceGet", r);
    if (CUresult r = d_.primaryCtxRetain(&context, device))
      return describe("cuDevicePrimaryCtxRetain", r);
    if (CUresult r = d_.ctxSetCurrent(context)) return describe("cuCtxSetCurrent", r);
    return {};
  }

  // One module per kernel (the module's header plus that entry), so that a kernel the CPU
  // device cannot compile fails its own row, not the whole benchmark.
  std::string loadKernel(const std::string& kernel, CUfunction& function) {
    std::string ptx = ptxForKernel(kRocudaBenchPtx, kernel);
    char log[4096] = {};
    CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log - 1)};
    CUmodule module = nullptr;
    auto start = std::chrono::steady_clock::now();
    if (CUresult r = d_.moduleLoadDataEx(&module, ptx.c_str(), 2, keys, values))
      return describe("cuModuleLoadDataEx", r) + (log[0] ? std::string(": ") + log : "");
    loadSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++loaded_;
    if (CUresult r = d_.moduleGetFunction(&function, module, kernel.c_str()))
      return describe("cuModuleGetFunction", r);
    return {};
  }

  // The lines before the first entry, then the entry `kernel` up to its closing brace; the whole
  // text when the entry is not found.
  static std::string ptxForKernel(const std::string& ptx, const std::string& kernel) {
    std::size_t first = ptx.find(".visible .entry ");
    std::size_t begin = ptx.find(".visible .entry " + kernel + "(");
    if (first == std::string::npos || begin == std::string::npos) return ptx;
    std::size_t end = ptx.find("\n}", begin);
    if (end == std::string::npos) return ptx;
    return ptx.substr(0, first) + ptx.substr(begin, end + 2 - begin) + "\n";
  }

  std::string describe(const char* what, CUresult r) const {
    const char* errorName = nullptr;
    if (d_.getErrorName != nullptr) d_.getErrorName(r, &errorName);
    return std::string(what) + " failed: " + (errorName ? errorName : "?") + " (" +
           std::to_string(static_cast<int>(r)) + ")";
  }

  std::string runWith(const Workload& workload, const MeasureOptions& options, CUfunction function,
                      std::vector<CUdeviceptr>& device, RunResult& result) {
    for (std::size_t i = 0; i < workload.buffers.size(); ++i) {
      const BufferSpec& spec = workload.buffers[i];
      if (CUresult r = d_.memAlloc(&device[i], spec.bytes)) return describe("cuMemAlloc", r);
      CUresult r = spec.init.empty() ? d_.memsetD32(device[i], 0, (spec.bytes + 3) / 4)
                                     : d_.memcpyHtoD(device[i], spec.init.data(), spec.bytes);
      if (r != CUDA_SUCCESS) return describe("initialising a buffer", r);
    }
    // kernelParams points at each argument's value.
    std::vector<CUdeviceptr> pointerArgs(workload.args.size());
    std::vector<void*> params(workload.args.size());
    for (std::size_t i = 0; i < workload.args.size(); ++i) {
      const KernelArg& arg = workload.args[i];
      if (arg.kind == KernelArg::Kind::kBuffer) {
        pointerArgs[i] = device[arg.buffer];
        params[i] = &pointerArgs[i];
      } else if (arg.kind == KernelArg::Kind::kInt) {
        params[i] = const_cast<int32_t*>(&arg.intValue);
      } else {
        params[i] = const_cast<float*>(&arg.floatValue);
      }
    }
    auto prepare = [&]() -> std::string {
      for (std::size_t i = 0; i < workload.buffers.size(); ++i)
        if (workload.buffers[i].zeroEachRun)
          if (CUresult r = d_.memsetD32(device[i], 0, workload.buffers[i].bytes / 4))
            return describe("cuMemsetD32", r);
      return {};
    };
    auto run = [&]() -> std::string {
      for (int l = 0; l < workload.launchesPerRun; ++l) {
        const unsigned* g = workload.grid;
        const unsigned* b = workload.block;
        if (CUresult r = d_.launchKernel(function, g[0], g[1], g[2], b[0], b[1], b[2], 0, nullptr,
                                         params.data(), nullptr))
          return describe("cuLaunchKernel", r);
        if (CUresult r = d_.ctxSynchronize()) return describe("cuCtxSynchronize", r);
      }
      return {};
    };
    if (std::string err = measure(options, workload.launchesPerRun, prepare, run, result.timing);
        !err.empty())
      return err;
    result.ran = true;
    // Read the outputs back; inputs are checked in place from their initial contents.
    std::vector<std::vector<std::byte>> host(workload.buffers.size());
    BufferPointers pointers(workload.buffers.size(), nullptr);
    for (std::size_t i = 0; i < workload.buffers.size(); ++i) {
      if (!workload.buffers[i].output) continue;
      host[i].resize(workload.buffers[i].bytes);
      if (CUresult r = d_.memcpyDtoH(host[i].data(), device[i], host[i].size()))
        return describe("cuMemcpyDtoH", r);
      pointers[i] = host[i].data();
    }
    result.verifyError = workload.verify(pointers);
    return {};
  }

  void* handle_ = nullptr;  // never closed: the library's threads outlive the backend
  Driver d_;
  double loadSeconds_ = 0.0;
  int loaded_ = 0;
  std::string problem_;
};

}  // namespace

std::unique_ptr<Backend> makeRocudaBackend(const std::string& libcudaPath) {
  return std::make_unique<RocudaBackend>(libcudaPath);
}

}  // namespace rocuda::bench
