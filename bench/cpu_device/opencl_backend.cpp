// Way (b): kernels.cl on PoCL's CPU device (the first OpenCL CPU device found, preferring a
// platform named "Portable Computing Language"). Built only when OpenCL headers and the ICD
// loader are found; otherwise the backend reports itself unavailable.
#include <chrono>
#include <cstdio>

#include "workload.h"

#ifdef ROCUDA_BENCH_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

extern const char kRocudaBenchOpenClSource[];
#endif

namespace rocuda::bench {
namespace {

#ifdef ROCUDA_BENCH_HAVE_OPENCL

std::string clError(const char* what, cl_int code) {
  return std::string(what) + " failed: OpenCL error " + std::to_string(code);
}

class OpenClBackend final : public Backend {
 public:
  OpenClBackend() { problem_ = open(); }
  ~OpenClBackend() override {
    if (program_ != nullptr) clReleaseProgram(program_);
    if (queue_ != nullptr) clReleaseCommandQueue(queue_);
    if (context_ != nullptr) clReleaseContext(context_);
  }

  const char* name() const override { return "PoCL"; }
  std::string unavailable() const override { return problem_; }
  std::string setupNote() const override {
    char text[160];
    std::snprintf(text, sizeof text, "OpenCL device \"%s\"; clBuildProgram: %.3f s",
                  deviceName_.c_str(), buildSeconds_);
    return text;
  }

  RunResult run(const Workload& workload, const MeasureOptions& options) override {
    RunResult result;
    if (!problem_.empty()) {
      result.error = problem_;
      return result;
    }
    cl_int status = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program_, workload.kernel.c_str(), &status);
    if (status != CL_SUCCESS) {
      result.error = clError("clCreateKernel", status);
      return result;
    }
    std::vector<cl_mem> buffers(workload.buffers.size(), nullptr);
    result.error = runWith(workload, options, kernel, buffers, result);
    for (cl_mem b : buffers)
      if (b != nullptr) clReleaseMemObject(b);
    clReleaseKernel(kernel);
    return result;
  }

 private:
  std::string open() {
    cl_uint count = 0;
    if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0)
      return "no OpenCL platform (install PoCL: scripts/install-bench-deps.sh)";
    std::vector<cl_platform_id> platforms(count);
    clGetPlatformIDs(count, platforms.data(), nullptr);
    cl_device_id chosen = nullptr;
    for (cl_platform_id platform : platforms) {
      char name[256] = {};
      clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
      cl_device_id device = nullptr;
      if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &device, nullptr) != CL_SUCCESS) continue;
      if (chosen == nullptr || std::string(name) == "Portable Computing Language") chosen = device;
    }
    if (chosen == nullptr) return "no OpenCL CPU device";
    char deviceName[256] = {};
    clGetDeviceInfo(chosen, CL_DEVICE_NAME, sizeof deviceName - 1, deviceName, nullptr);
    deviceName_ = deviceName;
    cl_int status = CL_SUCCESS;
    context_ = clCreateContext(nullptr, 1, &chosen, nullptr, nullptr, &status);
    if (status != CL_SUCCESS) return clError("clCreateContext", status);
    queue_ = clCreateCommandQueue(context_, chosen, 0, &status);
    if (status != CL_SUCCESS) return clError("clCreateCommandQueue", status);
    const char* source = kRocudaBenchOpenClSource;
    program_ = clCreateProgramWithSource(context_, 1, &source, nullptr, &status);
    if (status != CL_SUCCESS) return clError("clCreateProgramWithSource", status);
    auto start = std::chrono::steady_clock::now();
    status = clBuildProgram(program_, 1, &chosen, "-cl-std=CL1.2", nullptr, nullptr);
    buildSeconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status != CL_SUCCESS) {
      std::size_t size = 0;
      clGetProgramBuildInfo(program_, chosen, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(program_, chosen, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
      return clError("clBuildProgram", status) + ":\n" + log;
    }
    return {};
  }

  std::string setArgs(const Workload& workload, cl_kernel kernel,
                      const std::vector<cl_mem>& buffers) {
    for (std::size_t i = 0; i < workload.args.size(); ++i) {
      const KernelArg& arg = workload.args[i];
      cl_uint index = static_cast<cl_uint>(i);
      cl_int status = CL_SUCCESS;
      if (arg.kind == KernelArg::Kind::kBuffer)
        status = clSetKernelArg(kernel, index, sizeof(cl_mem), &buffers[arg.buffer]);
      else if (arg.kind == KernelArg::Kind::kInt)
        status = clSetKernelArg(kernel, index, sizeof(cl_int), &arg.intValue);
      else
        status = clSetKernelArg(kernel, index, sizeof(cl_float), &arg.floatValue);
      if (status != CL_SUCCESS) return clError("clSetKernelArg", status);
    }
    return {};
  }

  std::string runWith(const Workload& workload, const MeasureOptions& options, cl_kernel kernel,
                      std::vector<cl_mem>& buffers, RunResult& result) {
    const cl_uint zero = 0;
    for (std::size_t i = 0; i < workload.buffers.size(); ++i) {
      const BufferSpec& spec = workload.buffers[i];
      cl_int status = CL_SUCCESS;
      void* init = spec.init.empty() ? nullptr : const_cast<std::byte*>(spec.init.data());
      buffers[i] = clCreateBuffer(context_, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                                  spec.bytes, init, &status);
      if (status != CL_SUCCESS) return clError("clCreateBuffer", status);
      if (init == nullptr) {
        status =
            clEnqueueFillBuffer(queue_, buffers[i], &zero, 1, 0, spec.bytes, 0, nullptr, nullptr);
        if (status != CL_SUCCESS) return clError("clEnqueueFillBuffer", status);
      }
    }
    if (std::string err = setArgs(workload, kernel, buffers); !err.empty()) return err;
    if (cl_int status = clFinish(queue_)) return clError("clFinish", status);
    std::size_t global[3], local[3];
    for (int d = 0; d < 3; ++d) {
      local[d] = workload.block[d];
      global[d] = std::size_t{workload.grid[d]} * workload.block[d];
    }
    cl_uint dims = workload.grid[2] * workload.block[2] > 1   ? 3
                   : workload.grid[1] * workload.block[1] > 1 ? 2
                                                              : 1;
    auto prepare = [&]() -> std::string {
      for (std::size_t i = 0; i < workload.buffers.size(); ++i) {
        if (!workload.buffers[i].zeroEachRun) continue;
        if (cl_int status = clEnqueueFillBuffer(queue_, buffers[i], &zero, sizeof zero, 0,
                                                workload.buffers[i].bytes, 0, nullptr, nullptr))
          return clError("clEnqueueFillBuffer", status);
      }
      if (cl_int status = clFinish(queue_)) return clError("clFinish", status);
      return {};
    };
    auto run = [&]() -> std::string {
      for (int l = 0; l < workload.launchesPerRun; ++l) {
        if (cl_int status = clEnqueueNDRangeKernel(queue_, kernel, dims, nullptr, global, local, 0,
                                                   nullptr, nullptr))
          return clError("clEnqueueNDRangeKernel", status);
        if (cl_int status = clFinish(queue_)) return clError("clFinish", status);
      }
      return {};
    };
    if (std::string err = measure(options, workload.launchesPerRun, prepare, run, result.timing);
        !err.empty())
      return err;
    result.ran = true;
    std::vector<std::vector<std::byte>> host(workload.buffers.size());
    BufferPointers pointers(workload.buffers.size(), nullptr);
    for (std::size_t i = 0; i < workload.buffers.size(); ++i) {
      if (!workload.buffers[i].output) continue;
      host[i].resize(workload.buffers[i].bytes);
      if (cl_int status = clEnqueueReadBuffer(queue_, buffers[i], CL_TRUE, 0, host[i].size(),
                                              host[i].data(), 0, nullptr, nullptr))
        return clError("clEnqueueReadBuffer", status);
      pointers[i] = host[i].data();
    }
    result.verifyError = workload.verify(pointers);
    return {};
  }

  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  cl_program program_ = nullptr;
  std::string deviceName_;
  double buildSeconds_ = 0.0;
  std::string problem_;
};

#else

class OpenClBackend final : public Backend {
 public:
  const char* name() const override { return "PoCL"; }
  std::string unavailable() const override {
    return "built without OpenCL (run scripts/install-bench-deps.sh and reconfigure)";
  }
  RunResult run(const Workload&, const MeasureOptions&) override {
    RunResult result;
    result.error = unavailable();
    return result;
  }
};

#endif

}  // namespace

std::unique_ptr<Backend> makeOpenClBackend() { return std::make_unique<OpenClBackend>(); }

}  // namespace rocuda::bench
