// One benchmark kernel described once, so that each way of running it (Rocuda's CPU device via
// the driver API, PoCL via OpenCL, native OpenMP) runs the same launch on the same data and is
// checked by the same host reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace rocuda::bench {

// A device buffer: initial contents (empty = zero-filled), and whether it is read back and
// checked. zeroEachRun buffers are cleared before every run, outside the timed region.
struct BufferSpec {
  std::size_t bytes = 0;
  std::vector<std::byte> init;
  bool output = false;
  bool zeroEachRun = false;
};

struct KernelArg {
  enum class Kind { kBuffer, kInt, kFloat };
  Kind kind = Kind::kInt;
  int buffer = -1;
  int32_t intValue = 0;
  float floatValue = 0.0f;

  static KernelArg buf(int index) { return {Kind::kBuffer, index, 0, 0.0f}; }
  static KernelArg i32(int32_t v) { return {Kind::kInt, -1, v, 0.0f}; }
  static KernelArg f32(float v) { return {Kind::kFloat, -1, 0, v}; }
};

// Host pointers to every buffer, indexed like Workload::buffers.
using BufferPointers = std::vector<void*>;

struct Workload {
  std::string name;    // row label
  std::string size;    // human-readable problem size
  std::string kernel;  // entry name, the same in kernels.cu and kernels.cl
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  std::vector<BufferSpec> buffers;
  std::vector<KernelArg> args;
  // A run is this many launches, each followed by a synchronize; times are reported per launch.
  int launchesPerRun = 1;
  // Bytes a run must move to and from memory at least (0: not reported), and whether the kernel
  // counts as memory-bound for the STREAM-triad goal.
  double bytes = 0.0;
  bool memoryBound = false;
  double flops = 0.0;  // floating-point operations of a compute-bound run (GFLOP/s line)
  // The OpenMP version: one launch on host buffers.
  std::function<void(const BufferPointers&)> native;
  // Checks the buffers after the last run; returns an empty string when correct.
  std::function<std::string(const BufferPointers&)> verify;
};

// The benchmark's kernels, in table order; each factory builds inputs and its reference.
using WorkloadFactory = std::function<std::unique_ptr<Workload>(bool quick)>;
std::vector<WorkloadFactory> workloadFactories();

struct Timing {
  double best = 0.0;    // seconds per launch
  double median = 0.0;  // seconds per launch
  int reps = 0;
};

struct MeasureOptions {
  int reps = 7;
  // Stop repeating (after at least 3 repetitions) once the timed runs exceed this many seconds.
  double budgetSeconds = 4.0;
};

// What one way of running one workload produced.
struct RunResult {
  bool ran = false;
  std::string error;        // set when it could not run (setup or launch failure)
  std::string verifyError;  // set when it ran and the output is wrong
  Timing timing;
};

// Times `run` (one warm-up, then repetitions); `prepare` runs before each, untimed. Either
// returns an error message, or empty on success.
using Step = std::function<std::string()>;
std::string measure(const MeasureOptions& options, int launchesPerRun, const Step& prepare,
                    const Step& run, Timing& timing);

// The three ways. Each returns ran = false with `error` set when the way is unavailable.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  // Set after construction when the backend cannot run at all.
  virtual std::string unavailable() const = 0;
  // One line about the one-time setup (module load / program build time), for the report.
  virtual std::string setupNote() const { return {}; }
  virtual RunResult run(const Workload& workload, const MeasureOptions& options) = 0;
};

std::unique_ptr<Backend> makeRocudaBackend(const std::string& libcudaPath);
std::unique_ptr<Backend> makeOpenClBackend();
std::unique_ptr<Backend> makeNativeBackend();

// native_kernels.cpp: STREAM triad (a = b + s*c on floats) on `threads` OpenMP threads, bytes
// per second (12 per element, STREAM's count), best of `reps`.
double streamTriadBytesPerSecond(std::size_t n, int reps, int threads);

}  // namespace rocuda::bench
