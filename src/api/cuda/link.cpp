// The JIT linker (cuLinkCreate/AddData/AddFile/Complete/Destroy) over the PTX-level linker
// shared with nvJitLink (api/link/image_linker.h). cuLinkComplete hands out the linked PTX text,
// an image cuModuleLoadData accepts.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/cuda/boundary.h"
#include "api/link/image_linker.h"
#include "api/link/live_handles.h"
#include "core/context.h"
#include "core/platform.h"
#include "support/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

struct LinkState {
  explicit LinkState(uint32_t arch) : linker(arch) {}
  link::ImageLinker linker;  // arch: the context's device, to choose PTX in fatbins
  std::string image;  // the linked PTX, valid until cuLinkDestroy
  // cuLinkCreate's log buffers; the *_SIZE_BYTES entries of its optionValues array (which CUDA
  // requires to stay valid for the life of the state) receive the bytes written, as NVIDIA's
  // driver does at cuLinkComplete (PyCUDA reads them back).
  struct Log {
    char* buffer = nullptr;
    size_t capacity = 0;
    void** sizeValue = nullptr;  // &optionValues[i] of the *_SIZE_BYTES option
    void write(const std::string& text) {
      size_t n = 0;
      if (buffer != nullptr && capacity > 0) {
        n = std::min(text.size(), capacity - 1);
        std::memcpy(buffer, text.data(), n);
        buffer[n] = '\0';
      }
      if (sizeValue != nullptr) *sizeValue = reinterpret_cast<void*>(static_cast<uintptr_t>(n));
    }
  };
  Log errorLog, infoLog;
  void** wallTimeValue = nullptr;  // &optionValues[i] of CU_JIT_WALL_TIME
  float milliseconds = 0;          // spent adding and linking inputs so far
};

link::LiveHandles<LinkState>& states() {
  static link::LiveHandles<LinkState> instance;
  return instance;
}

Result<LinkState*> lookupState(CUlinkState handle) {
  LinkState* state = states().find(handle);
  if (state == nullptr) return makeError(ErrorCode::InvalidHandle, "not a link state");
  return state;
}

Outcome checkOptions(unsigned numOptions, const CUjit_option* options, void** values) {
  if (numOptions > 0 && (options == nullptr || values == nullptr))
    return invalidValue("options or optionValues is NULL");
  return checkJitOptions(numOptions, options);
}

// cuLinkAddData / cuLinkAddFile: the link's outputs and target belong to cuLinkCreate, and the
// inputs "do not accept" them.
Outcome checkInputOptions(unsigned numOptions, const CUjit_option* options, void** values) {
  if (Outcome checked = checkOptions(numOptions, options, values); !checked.ok()) return checked;
  for (unsigned i = 0; i < numOptions; ++i) {
    switch (options[i]) {
      case CU_JIT_WALL_TIME:
      case CU_JIT_INFO_LOG_BUFFER:
      case CU_JIT_ERROR_LOG_BUFFER:
      case CU_JIT_TARGET_FROM_CUCONTEXT:
      case CU_JIT_TARGET:
        return {CUDA_ERROR_INVALID_VALUE, "option " + std::to_string(static_cast<int>(options[i])) +
                                              " belongs to cuLinkCreate, not to a link input"};
      default:
        break;
    }
  }
  return {};
}

// The failure, also written to the CU_JIT_ERROR_LOG_BUFFER given to cuLinkCreate.
Outcome fail(LinkState& state, CUresult code, const std::string& message) {
  state.errorLog.write(message);
  state.infoLog.write("");
  return {code, message};
}

Outcome create(unsigned numOptions, CUjit_option* options, void** values, CUlinkState* stateOut) {
  if (stateOut == nullptr) return invalidValue("stateOut is NULL");
  if (Outcome checked = checkOptions(numOptions, options, values); !checked.ok()) return checked;
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  const auto& d = (*context)->device().description();
  auto state = std::make_unique<LinkState>(
      static_cast<uint32_t>(d.computeCapabilityMajor * 10 + d.computeCapabilityMinor));
  for (unsigned i = 0; i < numOptions; ++i) {
    auto size = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i]));
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER:
        state->errorLog.buffer = static_cast<char*>(values[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        state->errorLog.capacity = size;
        state->errorLog.sizeValue = &values[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER:
        state->infoLog.buffer = static_cast<char*>(values[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        state->infoLog.capacity = size;
        state->infoLog.sizeValue = &values[i];
        break;
      case CU_JIT_WALL_TIME:
        state->wallTimeValue = &values[i];
        break;
      default:
        break;
    }
  }
  *stateOut = reinterpret_cast<CUlinkState>(states().add(std::move(state)));
  return {};
}

Outcome addBytes(LinkState& state, CUjitInputType type, const uint8_t* data, size_t size,
                 const std::string& name) {
  if (type == CU_JIT_INPUT_NVVM)
    return fail(state, CUDA_ERROR_INVALID_IMAGE,
                name + ": NVVM IR cannot be linked by Rocuda (it compiles PTX)");
  if (type < CU_JIT_INPUT_CUBIN || type > CU_JIT_INPUT_NVVM)
    return invalidValue("unknown input type");
  link::InputKind kind = type == CU_JIT_INPUT_CUBIN       ? link::InputKind::Cubin
                        : type == CU_JIT_INPUT_PTX       ? link::InputKind::Ptx
                        : type == CU_JIT_INPUT_FATBINARY ? link::InputKind::Fatbin
                        : type == CU_JIT_INPUT_OBJECT    ? link::InputKind::Object
                                                         : link::InputKind::Library;
  auto start = std::chrono::steady_clock::now();
  Status added = state.linker.add(kind, data, size, name);
  state.milliseconds += millisecondsSince(start);
  if (added.ok()) return {};
  const Error& e = added.error();
  CUresult code = e.code == ErrorCode::NoBinaryForGpu ? CUDA_ERROR_NO_BINARY_FOR_GPU
                  : e.code == ErrorCode::InvalidPtx   ? CUDA_ERROR_INVALID_PTX
                                                      : CUDA_ERROR_INVALID_IMAGE;
  return fail(state, code, e.message);
}

Outcome addData(CUlinkState handle, CUjitInputType type, void* data, size_t size, const char* name,
                unsigned numOptions, CUjit_option* options, void** values) {
  Result<LinkState*> state = lookupState(handle);
  if (!state) return state.error();
  if (data == nullptr || size == 0) return invalidValue("data is NULL or size 0");
  if (Outcome checked = checkInputOptions(numOptions, options, values); !checked.ok())
    return checked;
  return addBytes(**state, type, static_cast<const uint8_t*>(data), size,
                  name != nullptr ? name : "<data>");
}

Outcome addFile(CUlinkState handle, CUjitInputType type, const char* path, unsigned numOptions,
                CUjit_option* options, void** values) {
  Result<LinkState*> state = lookupState(handle);
  if (!state) return state.error();
  if (path == nullptr) return invalidValue("path is NULL");
  if (Outcome checked = checkInputOptions(numOptions, options, values); !checked.ok())
    return checked;
  Result<std::vector<uint8_t>> bytes = platform::readFile(path);
  if (!bytes) return {CUDA_ERROR_FILE_NOT_FOUND, bytes.error().message};
  if (bytes->empty())
    return fail(**state, CUDA_ERROR_INVALID_IMAGE, std::string(path) + " is empty");
  return addBytes(**state, type, bytes->data(), bytes->size(), path);
}

Outcome complete(CUlinkState handle, void** cubinOut, size_t* sizeOut) {
  Result<LinkState*> found = lookupState(handle);
  if (!found) return found.error();
  if (cubinOut == nullptr) return invalidValue("cubinOut is NULL");
  LinkState& state = **found;
  if (state.linker.empty()) return invalidValue("nothing was added to link");
  auto start = std::chrono::steady_clock::now();
  Result<std::string> linked = state.linker.complete();
  state.milliseconds += millisecondsSince(start);
  if (state.wallTimeValue != nullptr) writeJitWallTime(state.wallTimeValue, state.milliseconds);
  if (!linked) return fail(state, CUDA_ERROR_INVALID_PTX, linked.error().message);
  state.image = std::move(*linked);
  state.errorLog.write("");
  state.infoLog.write("");
  *cubinOut = state.image.data();  // NUL-terminated: PTX text for cuModuleLoadData
  if (sizeOut != nullptr) *sizeOut = state.image.size() + 1;
  return {};
}

Outcome destroy(CUlinkState handle) {
  if (!states().destroy(handle)) return {CUDA_ERROR_INVALID_HANDLE, "not a link state"};
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuLinkCreate(unsigned int numOptions, CUjit_option* options,
                                    void** optionValues, CUlinkState* stateOut) {
  return ROCUDA_API((numOptions, options, optionValues, stateOut),
                    [&] { return api::create(numOptions, options, optionValues, stateOut); });
}

ROCUDA_EXPORT CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options,
                                       void** optionValues, CUlinkState* stateOut) {
  return ROCUDA_API((numOptions, options, optionValues, stateOut),
                    [&] { return api::create(numOptions, options, optionValues, stateOut); });
}

ROCUDA_EXPORT CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data,
                                     size_t size, const char* name, unsigned int numOptions,
                                     CUjit_option* options, void** optionValues) {
  return ROCUDA_API((state, type, data, size, name, numOptions), [&] {
    return api::addData(state, type, data, size, name, numOptions, options, optionValues);
  });
}

ROCUDA_EXPORT CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data,
                                        size_t size, const char* name, unsigned int numOptions,
                                        CUjit_option* options, void** optionValues) {
  return ROCUDA_API((state, type, data, size, name, numOptions), [&] {
    return api::addData(state, type, data, size, name, numOptions, options, optionValues);
  });
}

ROCUDA_EXPORT CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path,
                                     unsigned int numOptions, CUjit_option* options,
                                     void** optionValues) {
  return ROCUDA_API((state, type, path, numOptions), [&] {
    return api::addFile(state, type, path, numOptions, options, optionValues);
  });
}

ROCUDA_EXPORT CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path,
                                        unsigned int numOptions, CUjit_option* options,
                                        void** optionValues) {
  return ROCUDA_API((state, type, path, numOptions), [&] {
    return api::addFile(state, type, path, numOptions, options, optionValues);
  });
}

ROCUDA_EXPORT CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  return ROCUDA_API((state, cubinOut, sizeOut),
                    [&] { return api::complete(state, cubinOut, sizeOut); });
}

ROCUDA_EXPORT CUresult cuLinkDestroy(CUlinkState state) {
  return ROCUDA_API((state), [&] { return api::destroy(state); });
}

}  // extern "C"
}  // namespace rocuda::cuda
