// A tiny device runtime for the compiler tests: the __rocuda_* symbols of the IR contract backed
// by thread-local state, and a launcher that runs every thread of a block (one host thread per
// CUDA thread when the kernel uses barriers, a plain loop otherwise).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compiler.h"

namespace rocuda::compiler::test {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// The runtime symbols to pass to loadHostCode.
RuntimeSymbols testRuntimeSymbols();

// Number of vprintf calls made by kernels so far, and trap calls.
int vprintfCalls();

// Compile PTX text and load it; fails the current test (returns nullptr) on error.
struct Loaded {
  HostObject object;
  std::unique_ptr<HostCode> code;
};
std::unique_ptr<Loaded> compileAndLoad(std::string_view ptx, std::string_view name = "test",
                                       int optLevel = 2);

// Build a parameter buffer as CUDA would from pointers to each argument.
std::vector<uint8_t> packParams(const KernelInfo& kernel, const std::vector<const void*>& args);

// Launch `kernel` over the grid; returns false when the kernel is not found.
bool launch(Loaded& loaded, const std::string& kernel, Dim3 grid, Dim3 block,
            const std::vector<const void*>& args, uint32_t dynamicShared = 0);

// Read a text file (for the nvcc-generated PTX).
std::string readFile(const std::string& path);

}  // namespace rocuda::compiler::test
