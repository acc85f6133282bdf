// LTO-IR (NVVM's -gen-lto output: numba-cuda's default, nvcc -dlto) is an NVIDIA format Rocuda
// cannot read. NVIDIA's own nvJitLink, where installed, can optimise it and emit PTX
// (-lto -ptx) on any machine, GPU or not; Rocuda then links and compiles that PTX like any other.
// This finds NVIDIA's library (never Rocuda's own) and runs one such link.
#pragma once

#include <string>
#include <vector>

#include "rocuda/nvjitlink_abi.h"
#include "support/result.h"

namespace rocuda::nvjitlink {

// LTO-IR, or an object, fatbin or library whose device code is LTO-IR (type as for nvJitLink).
struct LtoInput {
  std::string name;
  std::vector<uint8_t> bytes;
  nvJitLinkInputType type = NVJITLINK_INPUT_LTOIR;
};

// Links `inputs` with NVIDIA's nvJitLink under `options` (the caller's, -ptx added) and
// returns the PTX. NotFound when NVIDIA's library is not installed; InvalidPtx with NVIDIA's
// error log when its link fails.
Result<std::string> ltoToPtx(const std::vector<std::string>& options,
                             const std::vector<LtoInput>& inputs);

}  // namespace rocuda::nvjitlink
