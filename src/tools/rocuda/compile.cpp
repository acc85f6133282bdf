#include "tools/rocuda/compile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/neutral_ir.h"
#include "core/module.h"
#include "fatbin/fatbin.h"
#include "support/platform.h"

namespace rocuda::tools {
namespace {

constexpr const char* kUsage =
    "usage: rocuda compile INPUT --target gfxNNNN[:features] [-o OUT] [--code-object-version 4|5]\n"
    "                      [--emit code-object|asm|llvm] [--jobs N]\n"
    "\n"
    "Compiles the PTX in INPUT (PTX text, an nvcc-built executable or object, or a fatbin) to an\n"
    "AMD GPU code object for the target (e.g. gfx1100, gfx90a:sramecc+:xnack-). One code object\n"
    "per translation unit (the units of an -rdc=true program linked into one): OUT, or OUT.1,\n"
    "OUT.2... when there are several (default OUT:\n"
    "INPUT's file name + .<target>.co in the current directory; '-o -' writes to stdout).\n"
    "Translation units are compiled in parallel, and the kernels of a large one in partitions\n"
    "on several threads: --jobs N threads in all (default: one per core).\n"
    "--emit asm writes the target's assembly instead, --emit llvm the optimised AMDGPU LLVM IR.\n"
    "--target neutral writes the target-neutral LLVM IR the translator makes of the PTX, before\n"
    "any target's lowering (default OUT: INPUT's file name + .neutral.ll).\n";

// Take the highest PTX of each translation unit.
constexpr uint32_t kHighestArch = 1000;

struct Options {
  std::string input, output, target;
  int codeObjectVersion = 5;
  unsigned jobs = 0;  // 0: one per core
  compiler::AmdgpuOutput emit = compiler::AmdgpuOutput::CodeObject;
};

const char* defaultExtension(compiler::AmdgpuOutput emit) {
  switch (emit) {
    case compiler::AmdgpuOutput::Assembly:
      return ".s";
    case compiler::AmdgpuOutput::LlvmIr:
      return ".ll";
    default:
      return ".co";
  }
}

bool parseOptions(const std::vector<std::string>& args, Options& options) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    bool hasValue = i + 1 < args.size();
    if ((arg == "--target" || arg == "-t") && hasValue) {
      options.target = args[++i];
    } else if (arg == "-o" && hasValue) {
      options.output = args[++i];
    } else if (arg == "--code-object-version" && hasValue) {
      const std::string& v = args[++i];
      if (v != "4" && v != "5") return false;
      options.codeObjectVersion = v[0] - '0';
    } else if (arg == "--jobs" && hasValue) {
      const std::string& n = args[++i];
      if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(n) == 0)
        return false;
      options.jobs = std::stoul(n);
    } else if (arg == "--emit" && hasValue) {
      const std::string& kind = args[++i];
      if (kind == "code-object")
        options.emit = compiler::AmdgpuOutput::CodeObject;
      else if (kind == "asm")
        options.emit = compiler::AmdgpuOutput::Assembly;
      else if (kind == "llvm")
        options.emit = compiler::AmdgpuOutput::LlvmIr;
      else
        return false;
    } else if (!arg.empty() && arg[0] != '-' && options.input.empty()) {
      options.input = arg;
    } else {
      return false;
    }
  }
  return !options.input.empty() && !options.target.empty();
}

std::string defaultOutput(const Options& options) {
  std::string name = options.input.substr(options.input.rfind('/') + 1);
  std::string processor = options.target.substr(0, options.target.find(':'));
  return name + "." + processor + defaultExtension(options.emit);
}

}  // namespace

int commandCompile(const std::vector<std::string>& args) {
  Options options;
  if (!parseOptions(args, options)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  bool neutral = options.target == "neutral";
  if (neutral) {
    if (options.emit != compiler::AmdgpuOutput::CodeObject &&
        options.emit != compiler::AmdgpuOutput::LlvmIr) {
      std::fputs("rocuda compile: --target neutral writes LLVM IR only\n", stderr);
      return 2;
    }
    options.emit = compiler::AmdgpuOutput::LlvmIr;
  }
  auto target = compiler::parseGcnArchName(neutral ? "gfx1100" : options.target);
  if (!target.ok()) {
    std::fprintf(stderr, "rocuda compile: %s\n", target.error().message.c_str());
    return 2;
  }
  target->codeObjectVersion = options.codeObjectVersion;
  auto bytes = platform::readFile(options.input);
  if (!bytes.ok()) {
    std::fprintf(stderr, "rocuda compile: %s\n", bytes.error().message.c_str());
    return 2;
  }
  auto contents = fatbin::readImageBytes(bytes->data(), bytes->size(), kHighestArch);
  if (!contents.ok()) {
    std::fprintf(stderr, "rocuda compile: %s: %s\n", options.input.c_str(),
                 contents.error().message.c_str());
    return 1;
  }
  if (contents->ptx.empty()) {
    std::fprintf(stderr, "rocuda compile: %s: no PTX in this file\n", options.input.c_str());
    return 1;
  }
  // The units of an -rdc=true program are one program: linked, as a module load links them (an
  // executable's other units stay apart).
  std::vector<fatbin::PtxProgram> relocatable, apart;
  for (fatbin::PtxProgram& unit : contents->ptx)
    (contents->relocatable || unit.relocatable ? relocatable : apart).push_back(std::move(unit));
  if (relocatable.size() > 1) {
    Result<fatbin::PtxProgram> linked = core::linkRelocatableUnits(relocatable);
    if (!linked.ok()) {
      std::fprintf(stderr, "%s: error: %s\n", options.input.c_str(),
                   linked.error().message.c_str());
      return 1;
    }
    relocatable = {std::move(*linked)};
  }
  contents->ptx = std::move(relocatable);
  for (fatbin::PtxProgram& unit : apart) contents->ptx.push_back(std::move(unit));
  std::string output = options.output.empty() ? defaultOutput(options) : options.output;
  // Translation units are independent: compile them on every core, report them in order.
  size_t units = contents->ptx.size();
  std::vector<std::optional<Result<compiler::AmdgpuCompilation>>> results(units);
  std::vector<std::string> names(units);
  for (size_t i = 0; i < units; ++i)
    names[i] = units == 1 ? options.input : options.input + " (" + contents->ptx[i].name + ")";
  unsigned jobs = options.jobs ? options.jobs : platform::hardwareThreads();
  size_t workers = std::min<size_t>(units, jobs);
  // Threads left over when there are fewer units than jobs partition each unit's kernels.
  compiler::AmdgpuCompileOptions compileOptions;
  compileOptions.output = options.emit;
  compileOptions.threads = std::max<unsigned>(1, jobs / workers);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < units; i = next++) {
      if (!neutral) {
        results[i].emplace(
            compiler::compileForAmdgpu(contents->ptx[i].text, names[i], *target, compileOptions));
        continue;
      }
      auto text = compiler::neutralIrText(contents->ptx[i].text, names[i]);
      if (!text.ok()) {
        results[i].emplace(text.error());
        continue;
      }
      compiler::AmdgpuCompilation ir;
      ir.output.assign(text->begin(), text->end());
      results[i].emplace(std::move(ir));
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& thread : threads) thread.join();

  int failures = 0;
  for (size_t i = 0; i < units; ++i) {
    auto& object = *results[i];
    if (!object.ok()) {
      // PTX diagnostics carry their file:line:column already; other errors get the input's name.
      if (object.error().code == ErrorCode::InvalidPtx)
        std::fprintf(stderr, "%s\n", object.error().message.c_str());
      else
        std::fprintf(stderr, "%s: error: %s\n", names[i].c_str(), object.error().message.c_str());
      ++failures;
      continue;
    }
    if (output == "-") {
      std::fwrite(object->output.data(), 1, object->output.size(), stdout);
      continue;
    }
    std::string path = units == 1 ? output : output + "." + std::to_string(i + 1);
    if (auto status =
            platform::writeFileAtomically(path, object->output.data(), object->output.size());
        !status.ok()) {
      std::fprintf(stderr, "rocuda compile: %s\n", status.error().message.c_str());
      return 2;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace rocuda::tools
