// Linking device code at the PTX level, for both of CUDA's run-time linkers: the driver's
// cuLink* (libcuda.so.1) and nvJitLink (libnvJitLink.so.13). Inputs are PTX text or binaries
// that carry PTX (fatbin containers, cubins, host objects with -rdc device code, static
// libraries of them); the output is the linked PTX, which is the image Rocuda's module loader
// compiles. SASS cannot be linked (Rocuda compiles PTX), nor can NVVM IR or LTO-IR.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ptx/ast.h"
#include "support/result.h"

namespace rocuda::link {

// What the caller says an input is (CUjitInputType, nvJitLinkInputType); Any lets the bytes
// decide. A cubin and a host object are both ELF files.
enum class InputKind { Any, Ptx, Cubin, Fatbin, Object, Library };

class ImageLinker {
 public:
  // `arch`: compute capability (e.g. 86) that chooses among the PTX entries of a fatbin.
  explicit ImageLinker(uint32_t arch) : arch_(arch) {}

  // Adds the PTX an input carries; on error nothing of this input is added. Errors:
  // InvalidImage (unreadable binary, or bytes that are not of `kind`), NoBinaryForGpu (a binary
  // without PTX), InvalidPtx (PTX that does not parse; the message holds every file:line:column
  // diagnostic).
  Status add(InputKind kind, const uint8_t* data, size_t size, const std::string& name);

  bool empty() const { return modules_.empty(); }

  // Links what was added into one module and prints it (no trailing NUL). The inputs are
  // consumed: a second call has nothing to link. Errors: InvalidValue (nothing added),
  // InvalidPtx (duplicate definitions, mismatched address sizes...).
  Result<std::string> complete();

 private:
  uint32_t arch_;
  std::vector<ptx::Module> modules_;
};

}  // namespace rocuda::link
