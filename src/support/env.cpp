#include "support/env.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <strings.h>

#include "support/log.h"

namespace rocuda::env {

const std::vector<Variable>& variables() {
  static const std::vector<Variable> table = {
      {"ROCUDA_LOG", nullptr,
       "Log every driver API call with its arguments and result, and informational messages. "
       "`1` or `stderr` logs to standard error; any other value is a file path to append to; `0` "
       "or unset logs only warnings and errors (to standard error). A word that looks like a "
       "log level (`info`, `debug`, `error`...) logs to standard error with a warning: write "
       "`./info` for a file of that name."},
      {"ROCUDA_CACHE", "1",
       "`0` turns the persistent cache of compiled code off (everything is compiled each run)."},
      {"ROCUDA_CACHE_DIR", "$XDG_CACHE_HOME/rocuda, else $HOME/.cache/rocuda",
       "Directory of the persistent cache of compiled code. Created when missing."},
      {"ROCUDA_DUMP", nullptr,
       "Directory (created when missing) into which the compiler writes the LLVM IR of every "
       "module it compiles "
       "(`<module>.ll` target-neutral, `<module>.host.ll` optimised for the host, "
       "`<module>.block.ll` with the kernels in their block forms) and the object code the CPU "
       "device loads (`<module>.o`, for `objdump -d`). The CPU device compiles a "
       "module in units: `<module>.globals.*` (the whole module as translated, then its "
       "variables) at load and `<module>.<kernel>.*` at each kernel's first launch."},
      {"ROCUDA_PERF_MAP", "0",
       "`1` appends the address, size and name of every function of the CPU device's generated "
       "code to `/tmp/perf-<pid>.map` as it is loaded, so that `perf report` names the time "
       "spent in kernels (the step, round and block-loop functions of docs/ARCHITECTURE.md)."},
      {"ROCUDA_CPU_BLOCK_FORMS", "1",
       "`0` compiles every kernel for the CPU device as a function per CUDA thread, run as "
       "fibers when threads wait (the slow path), instead of work-item loops and "
       "continuations: for comparing the two and for isolating a suspected compiler fault."},
      {"ROCUDA_WARP_LOCKSTEP", "volatile",
       "Implicit warp synchronisation on the CPU device, for code written for GPUs before Volta "
       "whose warps exchange values through memory without `__syncwarp` (formally undefined "
       "since Volta, but NVIDIA's GPUs run it as expected). `volatile`: in kernels that never "
       "call `__syncwarp`, the volatile accesses that may reach shared memory (shared or "
       "generic addresses) and block-scope fences are lockstep points of the warp (the classic "
       "warp-synchronous reductions, scans and histograms). `memory`: every load and store "
       "outside the thread's own memory of every kernel is one (warp-synchronous code on global "
       "memory, such as CuPy's partition kernel; much slower). `off`: none."},
      {"ROCUDA_CPU_STREAMING_STORES", "16",
       "The fewest MiB a launch of a kernel that only loads and stores (no atomics, fences or "
       "calls) must store for the CPU device to run it with non-temporal stores, which write "
       "whole cache lines without reading them first and leave the caches to the inputs "
       "(elementwise kernels over large arrays: a quarter less memory traffic); smaller "
       "launches keep ordinary stores, whose data a later kernel may still find in the caches. "
       "`0`: every such launch; `off`: none."},
      {"ROCUDA_CPU_THREADS", "number of cores",
       "Worker threads of the CPU device's thread pool (blocks run in parallel on them)."},
      {"CUDA_MODULE_LOADING", "LAZY",
       "`EAGER` makes the CPU device compile every kernel of a module when the module is "
       "loaded. By default (`LAZY`, as NVIDIA's driver does since CUDA 12.2) it compiles a "
       "module's global variables when the module is loaded and each kernel on its first "
       "launch, so that a library of hundreds of kernels costs only the kernels a program "
       "launches (the module is still checked whole at load). NVIDIA's CUDA runtime reads it "
       "too."},
      {"ROCUDA_MEMCHECK", "0",
       "`1` checks every global, shared, local and generic memory access of kernels on the CPU "
       "device against the block's shared memory, the thread's local memory and the live "
       "allocations (a debugging aid, like compute-sanitizer): the first out-of-bounds access or "
       "use after free stops the kernel, whose launch fails with CUDA_ERROR_ILLEGAL_ADDRESS, "
       "after an error line naming the kernel, thread, block, PTX line (and CUDA line with "
       "`nvcc -lineinfo`) and the nearest allocation. `race` also checks shared memory for races: "
       "accesses by threads of different warps to the same bytes, at least one a write, with no "
       "barrier between are reported (the kernel goes on). Kernels run much slower, and memory "
       "pools give freed blocks back at once instead of keeping them for reuse, so that a use "
       "after cudaFreeAsync is reported."},
      {"CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "0",
       "`1`: a kernel that faults (an illegal or misaligned address, a trap, a failed assert) "
       "writes a core dump to `CUDA_COREDUMP_FILE`, as `cuCoredumpSetAttributeGlobal("
       "CU_COREDUMP_ENABLE_ON_EXCEPTION)` asks (cuda-gdb's variable; set before CUDA starts it "
       "takes precedence over the call). Rocuda's dump is a text report of the fault (kernel, "
       "block, thread, address, line), not NVIDIA's ELF core file, which cuda-gdb reads."},
      {"CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", "1",
       "With core dumps on exceptions, `1` also aborts the process after the dump "
       "(CU_COREDUMP_TRIGGER_HOST), so that the system writes the host's core file; `0` does "
       "not (the fault is reported as usual)."},
      {"CUDA_ENABLE_LIGHTWEIGHT_COREDUMP", "0",
       "`1`: core dumps leave out memory (CU_COREDUMP_LIGHTWEIGHT); Rocuda's report holds none "
       "anyway."},
      {"CUDA_ENABLE_USER_TRIGGERED_COREDUMP", "0",
       "Core dumps on a write to `CUDA_COREDUMP_PIPE` (CU_COREDUMP_ENABLE_USER_TRIGGER): not "
       "supported (enabling it is refused with CUDA_ERROR_NOT_PERMITTED and logged)."},
      {"CUDA_COREDUMP_FILE", "core.cuda.HOSTNAME.PID",
       "Where a core dump goes (CU_COREDUMP_FILE); `%h`, `%p` and `%t` become the host name, the "
       "process id and the time in seconds."},
      {"CUDA_COREDUMP_PIPE", "corepipe.cuda.HOSTNAME.PID",
       "The pipe of user-triggered core dumps (CU_COREDUMP_PIPE), kept as a setting."},
      {"CUDA_COREDUMP_GENERATION_FLAGS", nullptr,
       "What core dumps leave out (CU_COREDUMP_GENERATION_FLAGS), as comma-separated names: "
       "`skip_nonrelocated_elf_images`, `skip_global_memory`, `skip_shared_memory`, "
       "`skip_local_memory`, `skip_constbank_memory`, `skip_abort` (no abort after the dump)."},
      {"ROCUDA_DEVICES", "cpu",
       "Backends to use, in order, separated by commas: `hip` (AMD GPUs through ROCm's HIP "
       "runtime) and `cpu` (the CPU device). Device ordinals follow this order. `hip,cpu` opts "
       "in to AMD GPUs: kernels are compiled by the AMD code generator and run through HIP. The "
       "default stays `cpu` until that path has run on real AMD GPUs. Without `hip`, HIP is "
       "never loaded."},
      {"ROCUDA_AMDGPU_CODE_OBJECT", "5 on ROCm 6 and later, 4 on ROCm 5",
       "AMD code object version (`4` or `5`) that kernels for AMD GPUs are compiled to."},
      {"ROCUDA_HIP_LIBRARY", nullptr,
       "Path of the HIP runtime to use (libamdhip64.so / amdhip64_6.dll), or of the directory "
       "holding it; tried before $ROCM_PATH/lib, /opt/rocm/lib and the loader path."},
      {"ROCM_PATH", "/opt/rocm",
       "ROCm installation whose lib/ directory is searched for the HIP runtime (read, not set, by "
       "Rocuda)."},
      {"HIP_PATH", nullptr,
       "Windows: HIP SDK installation whose bin\\ directory is searched for amdhip64_*.dll."},
      {"ROCUDA_NVIDIA_NVJITLINK", nullptr,
       "Path of NVIDIA's libnvJitLink.so.13, which Rocuda's nvJitLink calls to turn LTO-IR "
       "(numba-cuda's default, `nvcc -dlto`) into PTX; tried before the directory of each "
       "library the process has loaded (the application's own toolkit: a Python wheel's "
       "`nvidia/cu13/lib`, whose libnvvm made the LTO-IR), $CUDA_HOME/lib64, $CUDA_HOME/lib, "
       "/usr/local/cuda/lib64 and /usr/local/cuda/lib."},
      {"ROCUDA_NVIDIA_NVRTC", nullptr,
       "Path of NVIDIA's libnvrtc.so.13, to which Rocuda's NVRTC forwards every call (asking it "
       "for PTX where the program asked for SASS); tried before the directory of each library "
       "the process has loaded, $CUDA_HOME/lib64, $CUDA_HOME/lib, /usr/local/cuda/lib64 and "
       "/usr/local/cuda/lib."},
      {"CUDA_HOME", nullptr,
       "CUDA toolkit installation searched for NVIDIA's libnvJitLink.so.13 and libnvrtc.so.13 "
       "(read, not set, by Rocuda)."},
      {"ROCUDA_CC", "8.6",
       "Compute capability reported by every device, as MAJOR.MINOR (e.g. `8.6`)."},
  };
  return table;
}

std::optional<std::string> get(std::string_view name) {
#ifndef NDEBUG
  bool declared = false;
  for (const auto& variable : variables()) declared = declared || name == variable.name;
  assert(declared && "environment variable not declared in support/env.cpp");
#endif
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool getFlag(std::string_view name, bool defaultValue) {
  auto value = get(name);
  if (!value) return defaultValue;
  for (const char* falseWord : {"0", "false", "off", "no"})
    if (strcasecmp(value->c_str(), falseWord) == 0) return false;
  return true;
}

bool eagerModuleLoading() {
  auto value = get("CUDA_MODULE_LOADING");
  return value && strcasecmp(value->c_str(), "EAGER") == 0;
}

ComputeCapability computeCapability() {
  auto value = get("ROCUDA_CC");
  if (!value) return {};
  int major = 0, minor = 0;
  char extra = 0;
  bool parsed = std::sscanf(value->c_str(), "%d.%d%c", &major, &minor, &extra) == 2;
  if (parsed && major >= 3 && major <= 12 && minor >= 0 && minor <= 9) return {major, minor};
  log::warning("ROCUDA_CC='" + *value + "' is " +
               (parsed ? "outside 3.0-12.9, the compute capabilities CUDA 13.0 knows"
                       : "not MAJOR.MINOR (e.g. 8.6)") +
               "; reporting 8.6");
  return {};
}

}  // namespace rocuda::env
