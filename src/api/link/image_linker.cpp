#include "api/link/image_linker.h"

#include <cstring>
#include <string_view>
#include <utility>

#include "fatbin/fatbin.h"
#include "ptx/link.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace rocuda::link {
namespace {

const char* kindName(InputKind kind) {
  switch (kind) {
    case InputKind::Any:
      break;
    case InputKind::Ptx:
      return "PTX";
    case InputKind::Cubin:
      return "a cubin";
    case InputKind::Fatbin:
      return "a fatbin";
    case InputKind::Object:
      return "an object file";
    case InputKind::Library:
      return "a library";
  }
  return "any input";
}

bool matches(InputKind kind, bool archive, fatbin::ImageKind detected) {
  switch (kind) {
    case InputKind::Any:
      return true;
    case InputKind::Ptx:
      return detected == fatbin::ImageKind::PtxText;
    case InputKind::Cubin:
      // Rocuda's NVRTC answers nvrtcGetCUBIN with the PTX (api/nvrtc/nvrtc.cpp), which the
      // module loader takes as a cubin too: so do the linkers.
      return detected == fatbin::ImageKind::Elf || detected == fatbin::ImageKind::PtxText;
    case InputKind::Object:
      return detected == fatbin::ImageKind::Elf;
    case InputKind::Fatbin:
      return detected == fatbin::ImageKind::FatbinContainer;
    case InputKind::Library:
      return archive;
  }
  return false;
}

}  // namespace

Status ImageLinker::add(InputKind kind, const uint8_t* data, size_t size, const std::string& name) {
  if (data == nullptr || size == 0) return makeError(ErrorCode::InvalidImage, name + " is empty");
  bool archive = fatbin::isArchive(data, size);
  fatbin::ImageKind detected = fatbin::detectImageBytes(data, size);
  if (kind == InputKind::Ptx && detected != fatbin::ImageKind::PtxText) {
    // Given as PTX: parsed as PTX whatever it looks like, so that bad input is a PTX error
    // with its diagnostics (CUDA_ERROR_INVALID_PTX), as with NVIDIA's JIT.
    std::string_view text(reinterpret_cast<const char*>(data),
                          strnlen(reinterpret_cast<const char*>(data), size));
    ptx::ParseResult result = ptx::parseModule(text, name);
    if (result.hasErrors()) return makeError(ErrorCode::InvalidPtx, result.formatDiagnostics());
    modules_.push_back(std::move(result.module));
    return {};
  }
  if (!matches(kind, archive, detected))
    return makeError(ErrorCode::InvalidImage,
                     name + " was given as " + kindName(kind) + " but holds " +
                         (archive ? "a library" : fatbin::imageKindName(detected)));
  Result<fatbin::ImageContents> contents =
      archive ? fatbin::readArchive(data, size, arch_) : fatbin::readImageBytes(data, size, arch_);
  if (!contents) return makeError(ErrorCode::InvalidImage, name + ": " + contents.error().message);
  if (contents->ptx.empty())
    return makeError(ErrorCode::NoBinaryForGpu,
                     name +
                         ": no PTX to link (SASS cannot be linked by Rocuda, which compiles "
                         "PTX; rebuild with PTX, e.g. -gencode arch=compute_XX,code=compute_XX)");
  std::vector<ptx::Module> parsed;
  for (const fatbin::PtxProgram& program : contents->ptx) {
    ptx::ParseResult result = ptx::parseModule(program.text, name);
    if (result.hasErrors()) return makeError(ErrorCode::InvalidPtx, result.formatDiagnostics());
    parsed.push_back(std::move(result.module));
  }
  for (ptx::Module& m : parsed) modules_.push_back(std::move(m));
  return {};
}

Result<std::string> ImageLinker::complete() {
  if (modules_.empty()) return makeError(ErrorCode::InvalidValue, "nothing was added to link");
  ptx::LinkResult linked = ptx::linkModules(std::move(modules_));
  modules_.clear();
  std::string message;
  for (const std::string& e : linked.errors) message += "error: " + e + "\n";
  if (linked.ok())
    for (const std::string& name : ptx::unresolvedFunctions(linked.module))
      message += "error: undefined reference to '" + name + "'\n";
  if (!message.empty()) return makeError(ErrorCode::InvalidPtx, message);
  return ptx::printModule(linked.module);
}

}  // namespace rocuda::link
