// AMD GPU code generation: PTX -> target-neutral LLVM IR (the same module the CPU device runs)
// -> AMDGPU IR (kernel ABI, device runtime, address spaces) -> object -> code object (lld).
//
// Like compiler.h, this header exposes no LLVM type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compiler.h"
#include "support/result.h"

namespace rocuda::compiler {

struct AmdgpuTarget {
  std::string processor;      // "gfx1100", "gfx90a", ...
  std::string features;       // LLVM subtarget features: "+sramecc,-xnack" ("" = any)
  int codeObjectVersion = 5;  // 4 or 5
};

// Parse a HIP gcnArchName ("gfx90a:sramecc+:xnack-", "gfx1100"). Errors: InvalidValue for an
// unknown processor or malformed feature, NotSupported for a processor this slice does not target.
Result<AmdgpuTarget> parseGcnArchName(std::string_view gcnArchName);

// The processors this compiler targets (RDNA wave32 and CDNA wave64).
const std::vector<std::string>& supportedAmdgpuProcessors();

// Wavefront size kernels are compiled for on `processor` (32 on RDNA, 64 on CDNA); 0 if unknown.
int amdgpuWavefrontSize(std::string_view processor);

// Device printf on AMD GPUs. Each module that calls printf has a global pointer
// kAmdgpuPrintfBufferSymbol, which the host sets to a buffer in device memory that starts with
// an AmdgpuPrintfHeader; kernels append one record per call at `used` (atomically): a u32 of
// argument bytes, a u32 format index, then CUDA's argument buffer, padded to 8 bytes (or, for a
// format known only at run time, kAmdgpuPrintfFormatAddressIndex, below). A record
// that does not fit in `capacity` is counted in `dropped` instead. kAmdgpuPrintfFormatsSymbol
// holds the module's format strings, each ended by a NUL, in index order (a null buffer pointer
// makes printf do nothing).
inline constexpr const char* kAmdgpuPrintfBufferSymbol = "__rocuda_printf_buffer";
inline constexpr const char* kAmdgpuPrintfFormatsSymbol = "__rocuda_printf_formats";
struct AmdgpuPrintfHeader {
  uint64_t used = 0;      // bytes of records written after the header
  uint64_t capacity = 0;  // bytes available for records
  uint64_t dropped = 0;   // records that did not fit
};
inline constexpr size_t kAmdgpuPrintfRecordHeaderBytes = 8;
// The format index of a record whose format is not a string constant of the module: its first 8
// argument bytes are the format's device address (the host reads the string when it prints the
// record, as NVIDIA's driver does), the rest CUDA's argument buffer, as many bytes as the
// caller's buffer holds past its address.
inline constexpr uint32_t kAmdgpuPrintfFormatAddressIndex = 0xffffffffu;

// Device-side assert on AMD GPUs: a module whose kernels assert has a u32 kAmdgpuAssertFlagSymbol
// (0 at load). A failing assert prints CUDA's assertion message through device printf, sets the
// flag and ends its wavefront; the host fails the launch with CUDA_ERROR_ASSERT when it finds
// the flag set after the kernel, and clears it.
inline constexpr const char* kAmdgpuAssertFlagSymbol = "__rocuda_assert_failed";

// Cooperative groups' grid workspace on AMD GPUs: a module whose kernels read %envreg1/%envreg2
// (its address, high and low halves) has a u64 kAmdgpuGridWorkspaceSymbol (0 at load). The host
// points it at a workspace of CUDA's layout (a u32 size, then grid.sync()'s u32 arrival counter)
// for cooperative launches and sets it to 0 for the others, for which NVIDIA's driver provides no
// workspace either (grid_group::is_valid() is false).
inline constexpr const char* kAmdgpuGridWorkspaceSymbol = "__rocuda_grid_workspace";

// Device malloc on AMD GPUs: a module whose kernels call malloc or free has a u64
// kAmdgpuDeviceHeapSymbol (0 at load: malloc returns NULL), which the host points at its
// context's heap (cudaLimitMallocHeapSize bytes of device memory) before a launch. The heap starts
// with an AmdgpuDeviceHeapHeader; blocks of 2^(c + kAmdgpuDeviceHeapMinBlockLog2) bytes (size
// class c) follow, each a header of kAmdgpuDeviceHeapBlockHeaderBytes (u32 class, u32 the index
// of the next free block of its class) and then the bytes malloc returns. The free blocks of
// class c form a stack: freeLists[c] is tag << 32 | index, the index being the block's offset
// / 16 (0: empty) and the tag counted up by every change. `top` is the offset of the heap's
// never-used end. Indexes of 32 bits address at most kAmdgpuDeviceHeapMaxBytes.
inline constexpr const char* kAmdgpuDeviceHeapSymbol = "__rocuda_device_heap";
inline constexpr uint32_t kAmdgpuDeviceHeapSizeClasses = 32;
inline constexpr uint64_t kAmdgpuDeviceHeapMinBlockLog2 = 5;  // 32-byte blocks hold 16 bytes
inline constexpr uint64_t kAmdgpuDeviceHeapBlockHeaderBytes = 16;
inline constexpr uint64_t kAmdgpuDeviceHeapMaxBytes = uint64_t(1) << 36;
struct alignas(16) AmdgpuDeviceHeapHeader {
  uint64_t size = 0;  // bytes of the whole heap, this header included
  uint64_t top = 0;   // sizeof(AmdgpuDeviceHeapHeader) in a new heap
  uint64_t freeLists[kAmdgpuDeviceHeapSizeClasses] = {};
  uint64_t reserved[30] = {};
};
static_assert(sizeof(AmdgpuDeviceHeapHeader) == 512);

// Dynamic parallelism on AMD GPUs (kernels launching kernels): a module whose kernels call the
// device runtime's launch functions (__cudaCDP2GetParameterBufferV2, __cudaCDP2LaunchDeviceV2 and
// their first forms) has a u64 kAmdgpuDeviceLaunchesSymbol, which the host points at a buffer of
// device memory that starts with an AmdgpuDeviceLaunchHeader. A parameter buffer is handed out as
// an AmdgpuDeviceLaunchRecord followed by the kernel's parameters (CUDA's packed layout), the
// whole rounded up to 16 bytes, cut from the buffer by an atomic add to `used` (a request that
// does not fit gets NULL and cudaErrorLaunchPendingCountExceeded); a launch numbers its record
// (`sequence`, from 1) by an atomic add to `launched`. The host runs the numbered records after the
// launching grid has finished, in launch order, each followed by the grids it launches in turn,
// tail launches last: one of the orders CUDA allows. `depth` is the nesting depth of the grid
// running (0 for one the host launched); a launch past kAmdgpuMaxLaunchNesting fails with
// cudaErrorLaunchMaxDepthExceeded. Device-side stream and event handles are numbered by
// `handles`. Graphs launched from device code (cudaGraphLaunch) take a record without
// parameters: `kernelName` holds the CUgraphExec and `mode` kAmdgpuGraphLaunchMode plus the launch
// mode (the top byte of cudaStreamGraphTailLaunch 1, ...FireAndForget 2, ...AsSibling 3); the host
// hands them to the graph launch running the grid (backends::RunningGraph) after it, in launch
// order. `inGraph` is 1 when the grid runs in a graph launch (outside one, cudaGraphLaunch answers
// cudaErrorNotPermitted). Updates of device-updatable kernel nodes (cudaGraphKernelNodeSetParam,
// ...SetEnabled, ...SetGridDim, ...UpdatesApply) are records too: `kernelName` holds the
// CUgraphDeviceNode, `mode` kAmdgpuNodeUpdateMode plus cudaGraphKernelNodeField (1 grid: the
// dimensions in `grid`; 2 parameter: the offset's low and high words in grid[0..1], the bytes
// after the record; 3 enabled: grid[0]); the host applies them in launch order after the grid.
inline constexpr const char* kAmdgpuDeviceLaunchesSymbol = "__rocuda_device_launches";
inline constexpr uint32_t kAmdgpuMaxLaunchNesting = 24;   // CUDA's
inline constexpr uint32_t kAmdgpuPendingLaunches = 2048;  // cudaLimitDevRuntimePendingLaunchCount
struct AmdgpuDeviceLaunchHeader {
  uint64_t capacity = 0;  // bytes for records after this header
  uint64_t used = 0;      // bytes requested (past capacity: requests that did not fit)
  uint32_t launched = 0;  // records numbered so far
  uint32_t depth = 0;
  uint32_t handles = 0;
  uint32_t inGraph = 0;
};
static_assert(sizeof(AmdgpuDeviceLaunchHeader) == 32);
inline constexpr uint32_t kAmdgpuGraphLaunchMode = 0x10;
inline constexpr uint32_t kAmdgpuNodeUpdateMode = 0x20;
struct AmdgpuDeviceLaunchRecord {
  uint64_t kernelName = 0;  // device address of the kernel's name (0 until a launch names it)
  uint32_t grid[3] = {};
  uint32_t block[3] = {};
  uint32_t sharedBytes = 0;
  uint32_t paramBytes = 0;  // the parameter bytes that follow
  uint32_t sequence = 0;    // 0 until launched
  uint32_t mode = 0;  // 1: launched into cudaStreamTailLaunch; kAmdgpuGraphLaunchMode +: a graph
};
static_assert(sizeof(AmdgpuDeviceLaunchRecord) == 48);
// The bytes a record of `paramBytes` parameters takes in the buffer (the next starts after them).
constexpr uint64_t amdgpuDeviceLaunchRecordBytes(uint64_t paramBytes) {
  return (sizeof(AmdgpuDeviceLaunchRecord) + paramBytes + 15) / 16 * 16;
}

// cudaGraphSetConditional on AMD GPUs: a module whose kernels call it has a u64
// kAmdgpuGraphConditionsSymbol, which the host points at kAmdgpuGraphConditionSlots slots in
// device memory, zeroed before each launch. A call claims the slot of its handle (a
// compare-and-exchange from 0; handles are never 0) and writes the value there; after the kernel
// the host sets each claimed handle's condition of the graph launch running it.
inline constexpr const char* kAmdgpuGraphConditionsSymbol = "__rocuda_graph_conditions";
inline constexpr uint32_t kAmdgpuGraphConditionSlots = 64;
struct AmdgpuGraphConditionSlot {
  uint64_t handle = 0;
  uint32_t value = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(AmdgpuGraphConditionSlot) == 16);

// The special registers that depend on the launch, for kernels with
// KernelInfo::readsLaunchRegisters: the host passes them as one more kernel argument after the
// PTX parameters (hipModuleLaunchKernel's kernelParams), which the kernel copies into its LDS at
// entry for the code it calls to read.
struct AmdgpuLaunchRegisters {
  uint32_t dynamicSmemSize = 0;  // %dynamic_smem_size
  uint32_t totalSmemSize = 0;    // %total_smem_size: static and dynamic
  uint32_t aggrSmemSize = 0;     // %aggr_smem_size: with the driver's reserved region
  uint32_t isExplicitCluster = 0;
  uint64_t currentGraphExec = 0;  // %current_graph_exec (RunningGraph::currentGraphExec)
};
static_assert(sizeof(AmdgpuLaunchRegisters) == 24);

// What compileForAmdgpu returns: the linked code object, or for inspection (`rocuda compile
// --emit`, the FileCheck tests) the target's assembly or the optimised AMDGPU LLVM IR as text.
enum class AmdgpuOutput { CodeObject, Assembly, LlvmIr };

// How compileForAmdgpu compiles one module.
struct AmdgpuCompileOptions {
  AmdgpuOutput output = AmdgpuOutput::CodeObject;
  // Threads for one module's kernels (0: one per core). A code object is compiled as
  // partitions of its kernels, one per thread, each optimised and compiled apart and then
  // linked; the assembly and IR outputs always come from the whole module.
  unsigned threads = 0;
  // Modules with fewer LLVM instructions after lowering compile whole: a partition costs a
  // bitcode round trip and a link input, more than parallelism saves on small modules.
  size_t minimumInstructionsToPartition = 20000;
};

struct AmdgpuCompilation {
  ModuleInfo info;              // kernels and globals, exactly as compileForHost describes them
  std::vector<uint8_t> output;  // the code object (or the text asked for)
  unsigned partitions = 1;      // how many partitions compiled in parallel (not serialized)

  // The code cache's entry format (that of HostObject). deserialize checks every size.
  std::vector<uint8_t> serialize() const;
  static Result<AmdgpuCompilation> deserialize(const uint8_t* data, size_t size);
};

// Parse, translate, lower and link PTX into an executable AMD GPU code object (a shared ELF for
// amdgcn-amd-amdhsa) that hipModuleLoadData accepts. Each `.entry K` becomes kernel K whose
// explicit kernel arguments have exactly the offsets, sizes and alignments of CUDA's packed
// parameter buffer (KernelInfo::params), so a kernelParams array launches it unchanged.
// Errors: InvalidPtx, UnsupportedPtx (names the function or instruction the AMD lowering cannot
// handle yet), InvalidValue (bad target), Internal.
Result<AmdgpuCompilation> compileForAmdgpu(std::string_view ptx, std::string_view moduleName,
                                           const AmdgpuTarget& target,
                                           const AmdgpuCompileOptions& options = {});

// The AMD target as a cache-key component: processor, features, code object version.
std::string amdgpuTargetName(const AmdgpuTarget& target);

}  // namespace rocuda::compiler
