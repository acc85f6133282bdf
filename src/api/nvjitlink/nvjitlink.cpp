// libnvJitLink.so.13: CUDA's run-time device linker (nvJitLink), as a thin C ABI over the
// PTX-level linker that cuLink* also uses (api/link/image_linker.h). Python CUDA clients
// (numba-cuda, cuda.core) and C++ programs link their PTX through it and load the result with
// cuModuleLoadData / cuLibraryLoadData. NVIDIA's library would hand them SASS, which Rocuda
// cannot run; this one hands out the linked PTX as the "cubin", which Rocuda's loader compiles
// for the device. LTO-IR (nvcc -dlto, NVVM's -gen-lto; numba-cuda's default) is an NVIDIA
// format: with -lto it is handed to NVIDIA's own nvJitLink, where installed, to become PTX
// (nvidia_lto.h); without that library it is refused with an explanation in the error log.
//
// Handles are checked against the set of live ones (api/link/live_handles.h), so a stale or
// invented handle is an error, not a dereference. One handle is not meant to be used by two threads
// at once (as NVIDIA documents); distinct handles are independent.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/link/image_linker.h"
#include "api/link/live_handles.h"
#include "api/nvjitlink/nvidia_lto.h"
#include "fatbin/fatbin.h"
#include "rocuda/nvjitlink_abi.h"
#include "support/log.h"
#include "support/platform.h"

#define ROCUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace rocuda::nvjitlink {
namespace {

struct LinkHandle {
  explicit LinkHandle(uint32_t arch) : arch(arch), linker(arch) {}
  uint32_t arch;                     // chooses among the PTX and LTO-IR entries of fatbins
  link::ImageLinker linker;
  std::string archOption;            // "sm_86", for the info log
  std::vector<std::string> options;  // as given, for NVIDIA's LTO link
  bool lto = false;
  std::vector<LtoInput> ltoInputs;  // linked at nvJitLinkComplete
  unsigned inputs = 0;
  std::optional<std::string> linked;  // the linked PTX, once nvJitLinkComplete succeeded
  std::string errorLog;
  std::string infoLog;
};

link::LiveHandles<LinkHandle>& liveHandles() {
  static link::LiveHandles<LinkHandle> instance;
  return instance;
}

LinkHandle* lookup(nvJitLinkHandle handle) { return liveHandles().find(handle); }

nvJitLinkResult fail(LinkHandle& h, nvJitLinkResult code, const std::string& message) {
  h.errorLog += "error   : " + message + "\n";
  log::warning("nvJitLink: " + message);
  return code;
}

// "sm_86", "sm_90a", "sm_100f", "compute_80": the compute capability as a number (86, 90...).
std::optional<uint32_t> parseArch(std::string_view value) {
  for (std::string_view prefix : {"sm_", "compute_", "lto_"}) {
    if (value.substr(0, prefix.size()) != prefix) continue;
    std::string_view digits = value.substr(prefix.size());
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
    if (digits.size() < 2 || digits.size() > 3) return std::nullopt;
    uint32_t arch = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      arch = arch * 10 + static_cast<uint32_t>(c - '0');
    }
    return arch;
  }
  return std::nullopt;
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The options nvJitLink documents. Those that tune code generation (register limits,
// optimisation level, ptxas flags, split compilation) have no effect here: the PTX is compiled
// when it is loaded, by Rocuda's compiler. The math flags (-ftz, -prec-div...) only steer NVVM
// for LTO-IR, which NVIDIA's nvJitLink links with every option as given (nvidia_lto.h); PTX
// already spells its rounding and flushing.
bool knownOption(std::string_view o) {
  static constexpr std::string_view kFlags[] = {"-time",
                                                "-verbose",
                                                "-lto",
                                                "-ptx",
                                                "-g",
                                                "-lineinfo",
                                                "-optimize-unused-variables",
                                                "-no-cache",
                                                "-device-stack-protector",
                                                "-O0",
                                                "-O1",
                                                "-O2",
                                                "-O3"};
  static constexpr std::string_view kValued[] = {"-maxrregcount=",
                                                 "-ftz=",
                                                 "-prec-div=",
                                                 "-prec-sqrt=",
                                                 "-fma=",
                                                 "-kernels-used=",
                                                 "-variables-used=",
                                                 "-Xptxas=",
                                                 "-split-compile=",
                                                 "-split-compile-extended=",
                                                 "-jump-table-density="};
  for (std::string_view f : kFlags)
    if (o == f) return true;
  for (std::string_view v : kValued)
    if (startsWith(o, v) && o.size() > v.size()) return true;
  return false;
}

nvJitLinkResult create(nvJitLinkHandle* out, uint32_t numOptions, const char** options) {
  if (out == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  *out = nullptr;
  if (numOptions > 0 && options == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  std::optional<uint32_t> arch;
  std::string archOption;
  bool lto = false;
  for (uint32_t i = 0; i < numOptions; ++i) {
    if (options[i] == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
    std::string_view o = options[i];
    if (startsWith(o, "-arch=")) {
      arch = parseArch(o.substr(6));
      if (!arch) {
        log::warning("nvJitLink: unrecognised architecture in " + std::string(o));
        return NVJITLINK_ERROR_UNRECOGNIZED_ARCH;
      }
      archOption = std::string(o.substr(6));
    } else if (o == "-lto") {
      lto = true;
    } else if (!knownOption(o)) {
      log::warning("nvJitLink: unrecognised option " + std::string(o));
      return NVJITLINK_ERROR_UNRECOGNIZED_OPTION;
    }
  }
  if (!arch) return NVJITLINK_ERROR_MISSING_ARCH;
  auto handle = std::make_unique<LinkHandle>(*arch);
  handle->archOption = archOption;
  handle->lto = lto;
  handle->options.assign(options, options + numOptions);
  *out = reinterpret_cast<nvJitLinkHandle>(liveHandles().add(std::move(handle)));
  return NVJITLINK_SUCCESS;
}

nvJitLinkResult destroy(nvJitLinkHandle* handle) {
  if (handle == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  if (!liveHandles().destroy(*handle)) return NVJITLINK_ERROR_INVALID_INPUT;
  *handle = nullptr;
  return NVJITLINK_SUCCESS;
}

// LTO-IR starts with the magic 0x7F4E43ED (little endian).
bool isLtoIr(const uint8_t* data, size_t size) {
  return size >= 4 && data[0] == 0xED && data[1] == 0x43 && data[2] == 0x4E && data[3] == 0x7F;
}

nvJitLinkResult addBytes(LinkHandle& h, nvJitLinkInputType type, const uint8_t* data, size_t size,
                         const std::string& name) {
  if (h.linked) return fail(h, NVJITLINK_ERROR_INVALID_INPUT, name + ": the link is complete");
  if (type == NVJITLINK_INPUT_ANY && isLtoIr(data, size)) type = NVJITLINK_INPUT_LTOIR;
  link::InputKind kind;
  switch (type) {
    case NVJITLINK_INPUT_CUBIN:
      kind = link::InputKind::Cubin;
      break;
    case NVJITLINK_INPUT_PTX:
      kind = link::InputKind::Ptx;
      break;
    case NVJITLINK_INPUT_FATBIN:
      kind = link::InputKind::Fatbin;
      break;
    case NVJITLINK_INPUT_OBJECT:
      kind = link::InputKind::Object;
      break;
    case NVJITLINK_INPUT_LIBRARY:
      kind = link::InputKind::Library;
      break;
    case NVJITLINK_INPUT_ANY:
      kind = link::InputKind::Any;
      break;
    case NVJITLINK_INPUT_LTOIR:
      if (!h.lto) return fail(h, NVJITLINK_ERROR_LTO_NOT_ENABLED, name + ": LTO-IR needs -lto");
      if (!isLtoIr(data, size))
        return fail(h, NVJITLINK_ERROR_INCORRECT_INPUT_TYPE, name + " is not LTO-IR");
      h.ltoInputs.push_back({name, std::vector<uint8_t>(data, data + size)});
      ++h.inputs;
      return NVJITLINK_SUCCESS;
    default:
      return fail(
          h, NVJITLINK_ERROR_INCORRECT_INPUT_TYPE,
          name + ": input type " + std::to_string(static_cast<int>(type)) + " cannot be linked");
  }
  // An input whose device code is LTO-IR without PTX (`nvcc -dc -arch=lto_NN`) goes whole to
  // NVIDIA's nvJitLink with the plain LTO-IR inputs.
  if (kind != link::InputKind::Ptx && kind != link::InputKind::Cubin) {
    Result<fatbin::ImageContents> contents = fatbin::isArchive(data, size)
                                                 ? fatbin::readArchive(data, size, h.arch)
                                                 : fatbin::readImageBytes(data, size, h.arch);
    if (contents && !contents->ltoIrOnly.empty()) {
      const std::string& unit = contents->ltoIrOnly.front();
      if (!h.lto)
        return fail(h, NVJITLINK_ERROR_LTO_NOT_ENABLED,
                    name + " carries LTO-IR without PTX (" + unit + "): link with -lto");
      if (!contents->ptx.empty())
        return fail(h, NVJITLINK_ERROR_INVALID_INPUT,
                    name + " mixes translation units of LTO-IR only (" + unit +
                        ") with PTX ones: Rocuda links either kind, not both in one input");
      // NVIDIA's nvJitLink reads the LTO-IR out of the input itself.
      h.ltoInputs.push_back({name, std::vector<uint8_t>(data, data + size), type});
      ++h.inputs;
      return NVJITLINK_SUCCESS;
    }
  }
  Status added = h.linker.add(kind, data, size, name);
  if (!added.ok()) {
    const Error& e = added.error();
    nvJitLinkResult code =
        e.code == ErrorCode::InvalidPtx       ? NVJITLINK_ERROR_PTX_COMPILE
        : e.code == ErrorCode::NoBinaryForGpu ? NVJITLINK_ERROR_ARCH_MISMATCH
        : kind != link::InputKind::Any && e.message.find(" was given as ") != std::string::npos
            ? NVJITLINK_ERROR_INCORRECT_INPUT_TYPE
            : NVJITLINK_ERROR_INVALID_INPUT;
    return fail(h, code, e.message);
  }
  ++h.inputs;
  return NVJITLINK_SUCCESS;
}

nvJitLinkResult addData(nvJitLinkHandle handle, nvJitLinkInputType type, const void* data,
                        size_t size, const char* name) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (data == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  if (size == 0) return fail(*h, NVJITLINK_ERROR_INVALID_INPUT, "empty input");
  return addBytes(*h, type, static_cast<const uint8_t*>(data), size,
                  name != nullptr ? name : "<data>");
}

nvJitLinkResult addFile(nvJitLinkHandle handle, nvJitLinkInputType type, const char* path) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (path == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  Result<std::vector<uint8_t>> bytes = platform::readFile(path);
  if (!bytes) return fail(*h, NVJITLINK_ERROR_INVALID_INPUT, bytes.error().message);
  if (bytes->empty())
    return fail(*h, NVJITLINK_ERROR_INVALID_INPUT, std::string(path) + " is empty");
  return addBytes(*h, type, bytes->data(), bytes->size(), path);
}

nvJitLinkResult complete(nvJitLinkHandle handle) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (h->linked) return NVJITLINK_SUCCESS;
  if (!h->ltoInputs.empty()) {
    Result<std::string> ptx = ltoToPtx(h->options, h->ltoInputs);
    if (!ptx) return fail(*h, NVJITLINK_ERROR_NVVM_COMPILE, ptx.error().message);
    h->ltoInputs.clear();
    Status added =
        h->linker.add(link::InputKind::Ptx, reinterpret_cast<const uint8_t*>(ptx->data()),
                      ptx->size(), "<LTO-IR linked by NVIDIA's nvJitLink>");
    if (!added.ok()) return fail(*h, NVJITLINK_ERROR_PTX_COMPILE, added.error().message);
  }
  if (h->linker.empty()) {
    // NVIDIA's completes an empty link too: its image holds no code (here a PTX module with
    // no functions, which loads as a module of nothing).
    h->linked = ".version 9.0\n.target " + h->archOption + "\n.address_size 64\n";
    return NVJITLINK_SUCCESS;
  }
  Result<std::string> linked = h->linker.complete();
  if (!linked) return fail(*h, NVJITLINK_ERROR_FINALIZE, linked.error().message);
  h->linked = std::move(*linked);
  h->infoLog += "info    : Rocuda linked " + std::to_string(h->inputs) + " input(s) for " +
                h->archOption + " at the PTX level; the PTX is compiled when it is loaded\n";
  return NVJITLINK_SUCCESS;
}

// The linked image (PTX text with its NUL) for both the cubin and the PTX queries.
nvJitLinkResult linkedSize(nvJitLinkHandle handle, size_t* size) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (size == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  if (!h->linked) return NVJITLINK_ERROR_INVALID_INPUT;
  *size = h->linked->size() + 1;
  return NVJITLINK_SUCCESS;
}

nvJitLinkResult linkedCopy(nvJitLinkHandle handle, void* out) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (out == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  if (!h->linked) return NVJITLINK_ERROR_INVALID_INPUT;
  std::memcpy(out, h->linked->c_str(), h->linked->size() + 1);
  return NVJITLINK_SUCCESS;
}

nvJitLinkResult logSize(nvJitLinkHandle handle, size_t* size, std::string LinkHandle::*which) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (size == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  *size = (h->*which).size() + 1;
  return NVJITLINK_SUCCESS;
}

nvJitLinkResult logCopy(nvJitLinkHandle handle, char* out, std::string LinkHandle::*which) {
  LinkHandle* h = lookup(handle);
  if (h == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  if (out == nullptr) return NVJITLINK_ERROR_NULL_INPUT;
  std::memcpy(out, (h->*which).c_str(), (h->*which).size() + 1);
  return NVJITLINK_SUCCESS;
}

}  // namespace
}  // namespace rocuda::nvjitlink

using namespace rocuda::nvjitlink;

// Each entry point under its plain name and under the versioned name NVIDIA's header calls.
#define ROCUDA_NVJITLINK(name, params, args)                             \
  ROCUDA_EXPORT nvJitLinkResult name params { return impl_##name args; } \
  ROCUDA_EXPORT nvJitLinkResult __##name##_13_0 params { return impl_##name args; }

namespace {
nvJitLinkResult impl_nvJitLinkCreate(nvJitLinkHandle* h, uint32_t n, const char** o) {
  return create(h, n, o);
}
nvJitLinkResult impl_nvJitLinkDestroy(nvJitLinkHandle* h) { return destroy(h); }
nvJitLinkResult impl_nvJitLinkAddData(nvJitLinkHandle h, nvJitLinkInputType t, const void* d,
                                      size_t s, const char* n) {
  return addData(h, t, d, s, n);
}
nvJitLinkResult impl_nvJitLinkAddFile(nvJitLinkHandle h, nvJitLinkInputType t, const char* f) {
  return addFile(h, t, f);
}
nvJitLinkResult impl_nvJitLinkComplete(nvJitLinkHandle h) { return complete(h); }
nvJitLinkResult impl_nvJitLinkGetLinkedCubinSize(nvJitLinkHandle h, size_t* s) {
  return linkedSize(h, s);
}
nvJitLinkResult impl_nvJitLinkGetLinkedCubin(nvJitLinkHandle h, void* c) {
  return linkedCopy(h, c);
}
nvJitLinkResult impl_nvJitLinkGetLinkedPtxSize(nvJitLinkHandle h, size_t* s) {
  return linkedSize(h, s);
}
nvJitLinkResult impl_nvJitLinkGetLinkedPtx(nvJitLinkHandle h, char* p) { return linkedCopy(h, p); }
nvJitLinkResult impl_nvJitLinkGetErrorLogSize(nvJitLinkHandle h, size_t* s) {
  return logSize(h, s, &LinkHandle::errorLog);
}
nvJitLinkResult impl_nvJitLinkGetErrorLog(nvJitLinkHandle h, char* l) {
  return logCopy(h, l, &LinkHandle::errorLog);
}
nvJitLinkResult impl_nvJitLinkGetInfoLogSize(nvJitLinkHandle h, size_t* s) {
  return logSize(h, s, &LinkHandle::infoLog);
}
nvJitLinkResult impl_nvJitLinkGetInfoLog(nvJitLinkHandle h, char* l) {
  return logCopy(h, l, &LinkHandle::infoLog);
}
}  // namespace

ROCUDA_NVJITLINK(nvJitLinkCreate,
                 (nvJitLinkHandle * handle, uint32_t numOptions, const char** options),
                 (handle, numOptions, options))
ROCUDA_NVJITLINK(nvJitLinkDestroy, (nvJitLinkHandle * handle), (handle))
ROCUDA_NVJITLINK(nvJitLinkAddData,
                 (nvJitLinkHandle handle, nvJitLinkInputType inputType, const void* data,
                  size_t size, const char* name),
                 (handle, inputType, data, size, name))
ROCUDA_NVJITLINK(nvJitLinkAddFile,
                 (nvJitLinkHandle handle, nvJitLinkInputType inputType, const char* fileName),
                 (handle, inputType, fileName))
ROCUDA_NVJITLINK(nvJitLinkComplete, (nvJitLinkHandle handle), (handle))
ROCUDA_NVJITLINK(nvJitLinkGetLinkedCubinSize, (nvJitLinkHandle handle, size_t* size),
                 (handle, size))
ROCUDA_NVJITLINK(nvJitLinkGetLinkedCubin, (nvJitLinkHandle handle, void* cubin), (handle, cubin))
ROCUDA_NVJITLINK(nvJitLinkGetLinkedPtxSize, (nvJitLinkHandle handle, size_t* size), (handle, size))
ROCUDA_NVJITLINK(nvJitLinkGetLinkedPtx, (nvJitLinkHandle handle, char* ptx), (handle, ptx))
ROCUDA_NVJITLINK(nvJitLinkGetErrorLogSize, (nvJitLinkHandle handle, size_t* size), (handle, size))
ROCUDA_NVJITLINK(nvJitLinkGetErrorLog, (nvJitLinkHandle handle, char* log), (handle, log))
ROCUDA_NVJITLINK(nvJitLinkGetInfoLogSize, (nvJitLinkHandle handle, size_t* size), (handle, size))
ROCUDA_NVJITLINK(nvJitLinkGetInfoLog, (nvJitLinkHandle handle, char* log), (handle, log))

ROCUDA_EXPORT nvJitLinkResult nvJitLinkVersion(unsigned int* major, unsigned int* minor) {
  if (major == nullptr || minor == nullptr) return NVJITLINK_ERROR_INVALID_INPUT;
  *major = kVersionMajor;
  *minor = kVersionMinor;
  return NVJITLINK_SUCCESS;
}
