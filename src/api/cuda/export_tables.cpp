// cuGetExportTable: the private ("dark API") tables cudart asks for by GUID. Rocuda offers the
// seven that CUDA 13's cudart needs (/work/shared/notes/cuda13-driver-contract.md), the tools'
// context table that cuDNN's runtime and cuBLASLt use and the module-functions table cuFFT
// uses: slots with a known meaning are
// implemented; every other slot refuses with CUDA_ERROR_NOT_SUPPORTED and a log line, so an
// unexpected call is visible rather than silently "successful".
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "api/cuda/boundary.h"
#include "api/cuda/context_state.h"
#include "api/cuda/integrity.h"
#include "core/context.h"
#include "core/module.h"
#include "core/platform.h"
#include "support/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

template <int Table, int Slot>
CUresult unsupportedSlot() {
  log::warning("export table " + std::to_string(Table) + " slot " + std::to_string(Slot) +
               " called: not supported");
  return CUDA_ERROR_NOT_SUPPORTED;
}

// Slots cudart calls in every program and whose result it ignores: table 1 slot 1 (seen after
// cudaSetDevice), table 6 slot 3 (once at initialisation, with (p, 0x40, 0, p, ...)), and the
// tools hooks of table 3 that graph calls go through (slots 1 and 4: twice per
// cudaGraphGetEdges or cudaGraphAddMemcpyNode; slot 3: cudaLaunchHostFunc in a stream capture;
// all of them succeed regardless).
// Refused quietly: a warning would be printed by every run.
template <int Table, int Slot>
CUresult quietSlot() {
  if (log::enabled(log::Level::Trace))
    log::trace("export table " + std::to_string(Table) + " slot " + std::to_string(Slot) +
               " called: refused");
  return CUDA_ERROR_NOT_SUPPORTED;
}

const void* sizeSlot(size_t slots) { return reinterpret_cast<const void*>(slots * sizeof(void*)); }

template <class F>
const void* fn(F* function) {
  return reinterpret_cast<const void*>(function);
}

// ---- Table 2: slot 2 gives cudart the device's primary context ----
CUresult primaryContextSlot(CUcontext* out, CUdevice dev) {
  return ROCUDA_API((out, dev), [&]() -> Outcome {
    if (out == nullptr) return invalidValue("out is NULL");
    Result<core::Device*> device = lookupDevice(dev);
    if (!device) return device.error();
    *out = reinterpret_cast<CUcontext>(&(*device)->primaryContext());
    return {};
  });
}

// Table 2 slot 12: CUDA 13.2's cudart (PyTorch's) calls it with no arguments while it starts and
// fails to start on any error (reading past a shorter table crashed it). Its opt-out variable,
// CUDA_8b3537d1=dc6ffd77, skips the call and cudart then goes on as after a success; nothing
// is known to depend on what the slot does.
CUresult startupCheckSlot() {
  if (log::enabled(log::Level::Trace)) log::trace("export table 2 slot 12 called: success");
  return CUDA_SUCCESS;
}

// ---- Table 4 slot 2: the calling thread's current context, as `(CUcontext* out)` ----
// cuBLASLt's heuristics ask for it, then key a per-context cache with table 8 slot 4 (they fail
// without it); cudart's graph calls ask too and go on either way.
CUresult currentContextSlot(CUcontext* out) {
  return ROCUDA_API((out), [&]() -> Outcome {
    if (out == nullptr) return invalidValue("out is NULL");
    core::Context* context = core::currentContext();
    *out = reinterpret_cast<CUcontext>(context);
    if (context == nullptr) return {CUDA_ERROR_INVALID_CONTEXT, "no current context"};
    return {};
  });
}

// ---- Table 8 (the tools' context table): what cuBLASLt asks of a context and its streams ----
// Slot 4 `(CUcontext, uint64_t* key)`: a key unique to the context for the life of the process
// (its id, as cuCtxGetId's; NULL is the current context).
CUresult contextKeySlot(CUcontext ctx, uint64_t* key) {
  return ROCUDA_API((ctx, key), [&]() -> Outcome {
    if (key == nullptr) return invalidValue("key is NULL");
    Result<core::Context*> context = ctx == nullptr ? currentContext() : lookupContext(ctx);
    if (!context) return context.error();
    *key = (*context)->id();
    return {};
  });
}

// Slot 51 `(CUcontext, CUstream, void** stream, int perThread)`: the stream a handle names (the
// NULL handle is the legacy stream, or the per-thread one when perThread is set), as the
// driver's own object, which slot 39 identifies.
CUresult streamObjectSlot(CUcontext ctx, CUstream handle, void** stream, int perThread) {
  return ROCUDA_API((ctx, handle, stream, perThread), [&]() -> Outcome {
    if (stream == nullptr) return invalidValue("stream is NULL");
    Result<core::Stream*> resolved =
        resolveStream(handle, perThread != 0 ? StreamVariant::PerThread : StreamVariant::Legacy);
    if (!resolved) return resolved.error();
    *stream = *resolved;
    return {};
  });
}

// Slot 39 `(CUcontext, const void* stream, uint64_t* id)`: the id of a stream from slot 51, as
// cuStreamGetId reports it.
CUresult streamIdSlot(CUcontext ctx, const void* stream, uint64_t* id) {
  return ROCUDA_API((ctx, stream, id), [&]() -> Outcome {
    if (stream == nullptr || id == nullptr) return invalidValue("NULL argument");
    core::Stream* live = core::lookupHandle<core::Stream>(stream);
    if (live == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not a live stream"};
    *id = live->id();
    return {};
  });
}

// ---- Table 3: slots 2 and 6 hand out buffers cudart requires (it never writes them) ----
alignas(16) uint8_t gBuffer2[1024];
alignas(16) uint8_t gBuffer6[64];

CUresult bufferSlot2(void** buffer, size_t* size) {
  return ROCUDA_API_NOINIT((buffer, size), [&]() -> Outcome {
    if (buffer == nullptr || size == nullptr) return invalidValue("NULL argument");
    *buffer = gBuffer2;
    *size = sizeof gBuffer2;
    return {};
  });
}

CUresult bufferSlot6(void** buffer, size_t* size) {
  return ROCUDA_API_NOINIT((buffer, size), [&]() -> Outcome {
    if (buffer == nullptr || size == nullptr) return invalidValue("NULL argument");
    *buffer = gBuffer6;
    *size = sizeof gBuffer6;
    return {};
  });
}

// ---- Table 5: context-local storage ----
Result<core::Context*> storageContext(CUcontext ctx) {
  return ctx == nullptr ? currentContext() : lookupContext(ctx);
}

CUresult storagePutSlot(CUcontext ctx, void* key, void* value, StorageDestructor destructor) {
  return ROCUDA_API((ctx, key, value, destructor), [&]() -> Outcome {
    markNextCallFromRuntime();
    Result<core::Context*> context = storageContext(ctx);
    if (!context) return context.error();
    return storagePut(*context, key, value, destructor);
  });
}

CUresult storageDeleteSlot(CUcontext ctx, void* key) {
  return ROCUDA_API((ctx, key), [&]() -> Outcome {
    Result<core::Context*> context = storageContext(ctx);
    if (!context) return context.error();
    return storageDelete(*context, key);
  });
}

CUresult storageGetSlot(void** value, CUcontext ctx, void* key) {
  return ROCUDA_API((value, ctx, key), [&]() -> Outcome {
    markNextCallFromRuntime();
    if (value == nullptr) return invalidValue("value is NULL");
    Result<core::Context*> context = storageContext(ctx);
    if (!context) return context.error();
    Result<void*> found = storageGet(*context, key);
    if (!found) return found.error();  // a miss: cudart then sets the value up with put
    *value = *found;
    return {};
  });
}

// ---- Table 6 ----
// Slot 2 is called during context set-up and by cudaDeviceSynchronize with (ctx, flag, out):
// cudart then passes *out to cuCtxSynchronize_v2, so it reads a context handle back (measured:
// leaving *out unwritten made cudart synchronize a stale stack value). The answer is the context
// given, or the current one when ctx is NULL: a green context's own handle when that is current,
// so that cudaDeviceSynchronize waits for the green context's work.
CUresult contextCheckSlot(CUcontext ctx, int* flag, CUcontext* out) {
  return ROCUDA_API((ctx, flag, out), [&]() -> Outcome {
    if (out == nullptr) return invalidValue("out is NULL");
    if (ctx != nullptr) {
      Result<core::CurrentContext> entry = lookupContextEntry(ctx);
      if (!entry) return makeError(ErrorCode::InvalidContext, "no valid context");
      *out = contextHandle(*entry);
      return {};
    }
    Result<core::Context*> current = currentContext();
    if (!current) return makeError(ErrorCode::InvalidContext, "no valid context");
    *out = contextHandle({*current, core::currentGreenContext()});
    return {};
  });
}

// ---- Table 7: the integrity check ----
CUresult integritySlot(uint32_t version, uint64_t unixSeconds, uint64_t* out);

extern const void* const kTable2[];
extern const void* const kTable7[];

CUresult integritySlot(uint32_t version, uint64_t unixSeconds, uint64_t* out) {
  return ROCUDA_API_NOINIT((version, unixSeconds, out), [&]() -> Outcome {
    if (out == nullptr) return invalidValue("out is NULL");
    IntegrityInputs inputs;
    inputs.driverVersion = static_cast<uint32_t>(kDriverVersion);
    inputs.version = version;
    inputs.processId = platform::processId();
    inputs.threadId = static_cast<uint32_t>(platform::currentThreadHandle());
    inputs.table2 = kTable2;
    inputs.table7 = kTable7;
    inputs.slot1 = kTable7[1];
    inputs.unixSeconds = unixSeconds;
    core::Platform& devices = core::Platform::instance();
    for (int i = 0; i < devices.deviceCount(); ++i) {
      const auto& d = devices.device(i)->description();
      IntegrityDevice device;
      device.uuid = d.uuid;
      device.pciDomain = d.pciDomain;
      device.pciBus = d.pciBus;
      device.pciDevice = d.pciDevice;
      inputs.devices.push_back(device);
    }
    std::array<uint64_t, 2> answer = integrityAnswer(inputs);
    out[0] = answer[0];
    out[1] = answer[1];
    return {};
  });
}

// ---- Table 9: a module's functions ----
// Slot 7 `int (CUcontext, CUmodule, void (*visit)(void* opaque, CUfunction, uint64_t),
// void* opaque)`: calls `visit` for each kernel of the module (the handles cuModuleGetFunction
// gives; the third argument, which cuFFT ignores, is the module) and returns how many there are,
// 0 for an unknown module. cuFFT calls it after each cuModuleLoadData to find the one kernel of
// the module it loaded, and fails unless the count is 1 and `visit` saw the kernel.
using FunctionVisitor = void (*)(void* opaque, CUfunction function, uint64_t owner);
int moduleFunctionsSlot(CUcontext /*ctx*/, CUmodule mod, FunctionVisitor visit, void* opaque) {
  std::vector<CUfunction> functions;
  Result<core::Module*> module = lookupModule(mod);
  if (!module) {
    log::warning("export table 9 slot 7: " + module.error().message);
    return 0;
  }
  for (core::Kernel* kernel : (*module)->kernels())
    functions.push_back(reinterpret_cast<CUfunction>(kernel));
  if (log::enabled(log::Level::Trace))
    log::trace("export table 9 slot 7: " + std::to_string(functions.size()) + " functions");
  if (visit != nullptr)
    for (CUfunction function : functions) visit(opaque, function, reinterpret_cast<uint64_t>(mod));
  return static_cast<int>(functions.size());
}

// ---- The tables (slot 0: size in bytes, except table 5) ----
const void* const kTable1[] = {sizeSlot(8),
                               fn(&quietSlot<1, 1>),
                               fn(&unsupportedSlot<1, 2>),
                               fn(&unsupportedSlot<1, 3>),
                               fn(&unsupportedSlot<1, 4>),
                               fn(&unsupportedSlot<1, 5>),
                               fn(&unsupportedSlot<1, 6>),
                               fn(&unsupportedSlot<1, 7>)};
const void* const kTable2[] = {sizeSlot(13),
                               fn(&unsupportedSlot<2, 1>),
                               fn(&primaryContextSlot),
                               fn(&unsupportedSlot<2, 3>),
                               fn(&unsupportedSlot<2, 4>),
                               fn(&unsupportedSlot<2, 5>),
                               fn(&unsupportedSlot<2, 6>),
                               fn(&unsupportedSlot<2, 7>),
                               fn(&unsupportedSlot<2, 8>),
                               fn(&unsupportedSlot<2, 9>),
                               fn(&unsupportedSlot<2, 10>),
                               fn(&unsupportedSlot<2, 11>),
                               fn(&startupCheckSlot)};
const void* const kTable3[] = {
    sizeSlot(7),          fn(&quietSlot<3, 1>),       fn(&bufferSlot2), fn(&quietSlot<3, 3>),
    fn(&quietSlot<3, 4>), fn(&unsupportedSlot<3, 5>), fn(&bufferSlot6)};
const void* const kTable4[] = {sizeSlot(4), fn(&unsupportedSlot<4, 1>), fn(&currentContextSlot),
                               fn(&unsupportedSlot<4, 3>)};
const void* const kTable5[] = {fn(&storagePutSlot), fn(&storageDeleteSlot), fn(&storageGetSlot)};
const void* const kTable6[] = {
    sizeSlot(6),          fn(&unsupportedSlot<6, 1>), fn(&contextCheckSlot),
    fn(&quietSlot<6, 3>), fn(&unsupportedSlot<6, 4>), fn(&unsupportedSlot<6, 5>)};
const void* const kTable7[] = {sizeSlot(3), fn(&integritySlot), fn(&unsupportedSlot<7, 2>)};
// The tools' context table: the runtime embedded in cuDNN 9.2x refuses to start without it,
// and cuBLASLt calls slots 4, 39 and 51 (above). 93 slots, as cuBLASLt reads them without looking
// at the size; the others refuse with a log line.
template <size_t... Slot>
std::array<const void*, sizeof...(Slot) + 1> toolsContextTable(std::index_sequence<Slot...>) {
  return {sizeSlot(sizeof...(Slot) + 1),
          (Slot + 1 == 4    ? fn(&contextKeySlot)
           : Slot + 1 == 39 ? fn(&streamIdSlot)
           : Slot + 1 == 51 ? fn(&streamObjectSlot)
                            : fn(&unsupportedSlot<8, int(Slot + 1)>))...};
}
const auto kTable8Slots = toolsContextTable(std::make_index_sequence<92>());
const void* const* const kTable8 = kTable8Slots.data();

// The module-functions table (cuFFT's): 56 slots, as far as other users are known to read it;
// cuFFT checks that the size reaches slot 7.
template <size_t... Slot>
std::array<const void*, sizeof...(Slot) + 1> moduleFunctionsTable(std::index_sequence<Slot...>) {
  return {sizeSlot(sizeof...(Slot) + 1),
          (Slot + 1 == 7 ? fn(&moduleFunctionsSlot) : fn(&unsupportedSlot<9, int(Slot + 1)>))...};
}
const auto kTable9Slots = moduleFunctionsTable(std::make_index_sequence<55>());
const void* const* const kTable9 = kTable9Slots.data();

struct ExportTable {
  uint8_t guid[16];
  const void* const* table;
};

const ExportTable kExportTables[] = {
    {{0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d,
      0xd9},
     kTable1},
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
      0xf9},
     kTable2},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a,
      0x66},
     kTable3},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
      0xdc},
     kTable4},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95,
      0x93},
     kTable5},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
      0x7e},
     kTable6},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1,
      0xf2},
     kTable7},
    {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
      0xf2},
     kTable8},
    {{0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99,
      0x1e},
     kTable9},
};

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  return ROCUDA_API_NOINIT((ppExportTable, pExportTableId), [&]() -> api::Outcome {
    if (ppExportTable == nullptr || pExportTableId == nullptr)
      return api::invalidValue("NULL argument");
    for (const api::ExportTable& entry : api::kExportTables) {
      if (std::memcmp(entry.guid, pExportTableId->bytes, sizeof entry.guid) == 0) {
        *ppExportTable = entry.table;
        return {};
      }
    }
    *ppExportTable = nullptr;
    return api::invalidValue("unknown export table");
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
