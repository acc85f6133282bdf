// rocuda ptx-check: the PTX front end as a command-line checker. Text files are parsed as they
// are; ELF files and fatbins go through the fatbin reader, which hands back the PTX of every
// translation unit (the highest compute_XX of each), and each program is checked on its own.
#include "tools/rocuda/ptx_check.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/neutral_ir.h"
#include "fatbin/fatbin.h"
#include "ptx/parser.h"
#include "support/platform.h"

namespace rocuda::tools {
namespace {

constexpr const char* kUsage =
    "usage: rocuda ptx-check [-v] [--extract DIR] FILE...\n"
    "\n"
    "Parses and checks the PTX in each FILE: PTX text, an ELF executable, shared library or\n"
    "object built by nvcc, or a fatbin (nvcc -fatbin). Diagnostics are printed as\n"
    "FILE:LINE:COLUMN: error: MESSAGE with the source line and a caret.\n"
    "\n"
    "  -t, --translate   also translate the PTX as Rocuda's compiler does and report each kernel\n"
    "                    that reaches an instruction Rocuda does not support (it would fail at\n"
    "                    launch with CUDA_ERROR_NOT_SUPPORTED)\n"
    "  -v, --verbose     also print 'FILE: OK (N functions, M instructions)' for valid PTX\n"
    "  --extract DIR     also write the PTX found in binaries to DIR, one file per program:\n"
    "                    NAME.compute_XX.ptx, or NAME.unitN.compute_XX.ptx with several units\n"
    "  -h, --help        this text\n"
    "\n"
    "Exit status: 0 all valid, 1 errors (or a file without PTX), 2 usage error or unreadable "
    "file.\n";

// Take the highest PTX of each translation unit: it is the one a newest device would JIT.
constexpr uint32_t kHighestArch = 1000;

// Enough of a file's start to tell text from binary when no format was recognised.
constexpr size_t kSniffBytes = 4096;

struct Options {
  bool verbose = false;
  bool translate = false;
  std::string extractDirectory;  // empty: nothing written
  std::vector<std::string> files;
};

enum class FileStatus { Ok, Errors, Unreadable };

struct Counts {
  size_t functions = 0;  // functions with a body (declarations such as vprintf not counted)
  size_t instructions = 0;
};

Counts countModule(const ptx::Module& module) {
  Counts counts;
  for (const auto& function : module.functions) {
    if (function.isDeclaration) continue;
    ++counts.functions;
    for (const auto& statement : function.body)
      if (!statement.isLabel()) ++counts.instructions;
  }
  return counts;
}

// Translates a valid PTX program (--translate) and prints what Rocuda cannot run; true when it
// can run every kernel.
bool checkTranslation(std::string_view text, const std::string& name) {
  Result<compiler::ModuleInfo> info = compiler::checkTranslation(text, name);
  if (!info.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", name.c_str(), info.error().message.c_str());
    return false;
  }
  bool ok = true;
  for (const compiler::KernelInfo& kernel : info->kernels) {
    if (kernel.unsupported.empty()) continue;
    std::fprintf(stderr, "%s: error: kernel '%s' cannot run: %s\n", name.c_str(),
                 kernel.name.c_str(), kernel.unsupported.c_str());
    ok = false;
  }
  return ok;
}

// Parses one PTX program and prints its diagnostics; true when it has no errors.
bool checkProgram(std::string_view text, const std::string& name, const Options& options) {
  bool verbose = options.verbose;
  ptx::ParseResult result = ptx::parseModule(text, name);
  std::string diagnostics = result.formatDiagnostics();
  if (!diagnostics.empty()) std::fputs(diagnostics.c_str(), stderr);
  if (result.hasErrors()) return false;
  if (options.translate && !checkTranslation(text, name)) return false;
  if (verbose) {
    Counts counts = countModule(result.module);
    std::printf("%s: OK (%zu functions, %zu instructions)\n", name.c_str(), counts.functions,
                counts.instructions);
    std::fflush(stdout);  // keeps OK lines and diagnostics in order on one pipe
  }
  return true;
}

void reportFileError(const std::string& path, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", path.c_str(), message.c_str());
}

std::string noPtxMessage(const std::vector<uint32_t>& sassArchs) {
  if (sassArchs.empty()) return "no PTX in this file: it carries no CUDA device code";
  uint32_t highest = sassArchs.back();
  return "no PTX in this file: it carries only SASS (" + fatbin::sassArchList(sassArchs) +
         "); rebuild with -gencode arch=compute_" + std::to_string(highest) + ",code=compute_" +
         std::to_string(highest) + " to include PTX";
}

// ELF files and fatbins: every PTX program found, named "FILE (PTX compute_XX)".
// The file a binary's PTX program is extracted to: DIR/NAME[.unitN].compute_XX.ptx.
std::string extractedPath(const Options& options, const std::string& path, size_t unit,
                          size_t units, uint32_t arch) {
  std::string name = path.substr(path.find_last_of("/\\") + 1);
  if (units > 1) name += ".unit" + std::to_string(unit + 1);
  return options.extractDirectory + "/" + name + ".compute_" + std::to_string(arch) + ".ptx";
}

bool checkBinary(const std::string& path, const std::string& data, const Options& options) {
  auto contents = fatbin::readImageBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size(),
                                         kHighestArch);
  if (!contents.ok()) {
    reportFileError(path, contents.error().message);
    return false;
  }
  if (contents->ptx.empty()) {
    reportFileError(path, noPtxMessage(contents->sassArchs));
    return false;
  }
  bool ok = true;
  size_t units = contents->ptx.size();
  for (size_t i = 0; i < units; ++i) {
    const fatbin::PtxProgram& program = contents->ptx[i];
    std::string name = path + " (PTX compute_" + std::to_string(program.arch);
    if (units > 1) name += ", unit " + std::to_string(i + 1) + " of " + std::to_string(units);
    name += ")";
    ok = checkProgram(program.text, name, options) && ok;
    if (!options.extractDirectory.empty()) {
      std::string out = extractedPath(options, path, i, units, program.arch);
      Status written = platform::createDirectories(options.extractDirectory);
      if (written.ok())
        written = platform::writeFileAtomically(
            out, reinterpret_cast<const uint8_t*>(program.text.data()), program.text.size());
      if (!written.ok()) {
        reportFileError(path, "cannot extract its PTX: " + written.error().message);
        ok = false;
      }
    }
  }
  return ok;
}

bool looksBinary(std::string_view data) {
  return data.substr(0, kSniffBytes).find('\0') != std::string_view::npos;
}

FileStatus checkFile(const std::string& path, const Options& options) {
  auto bytes = platform::readFile(path);
  if (!bytes.ok()) {
    std::fprintf(stderr, "rocuda ptx-check: %s\n", bytes.error().message.c_str());
    return FileStatus::Unreadable;
  }
  std::string data(bytes->begin(), bytes->end());
  if (data.empty()) {
    reportFileError(path, "empty file: no PTX");
    return FileStatus::Errors;
  }
  auto kind = fatbin::detectImageBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size());
  bool ok = false;
  switch (kind) {
    case fatbin::ImageKind::FatbinWrapper:
    case fatbin::ImageKind::FatbinContainer:
    case fatbin::ImageKind::Elf:
      ok = checkBinary(path, data, options);
      break;
    case fatbin::ImageKind::PtxText:
      ok = checkProgram(data, path, options);
      break;
    case fatbin::ImageKind::Unknown:
      // Text that does not start with a directive is still parsed: the parser says what is
      // wrong far better than "unrecognised". Binary junk is refused outright.
      if (looksBinary(data)) {
        reportFileError(path,
                        "not PTX text, an ELF file or a fatbin (binary data of an unknown "
                        "format)");
      } else {
        ok = checkProgram(data, path, options);
      }
      break;
  }
  return ok ? FileStatus::Ok : FileStatus::Errors;
}

// Returns false (after printing why) on a usage error.
bool parseOptions(const std::vector<std::string>& args, Options& options, bool& help) {
  bool endOfOptions = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!endOfOptions && arg == "--extract") {
      if (i + 1 == args.size() || args[i + 1].empty()) {
        std::fprintf(stderr, "rocuda ptx-check: --extract needs a directory\n%s", kUsage);
        return false;
      }
      options.extractDirectory = args[++i];
    } else if (!endOfOptions && arg == "--") {
      endOfOptions = true;
    } else if (!endOfOptions && (arg == "-t" || arg == "--translate")) {
      options.translate = true;
    } else if (!endOfOptions && (arg == "-v" || arg == "--verbose")) {
      options.verbose = true;
    } else if (!endOfOptions && (arg == "-h" || arg == "--help")) {
      help = true;
    } else if (!endOfOptions && arg.size() > 1 && arg[0] == '-') {
      std::fprintf(stderr, "rocuda ptx-check: unknown option '%s'\n%s", arg.c_str(), kUsage);
      return false;
    } else {
      options.files.push_back(arg);
    }
  }
  if (!help && options.files.empty()) {
    std::fprintf(stderr, "rocuda ptx-check: no input files\n%s", kUsage);
    return false;
  }
  return true;
}

}  // namespace

int commandPtxCheck(const std::vector<std::string>& args) {
  Options options;
  bool help = false;
  if (!parseOptions(args, options, help)) return 2;
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  bool errors = false;
  bool unreadable = false;
  for (const std::string& path : options.files) {
    FileStatus status = checkFile(path, options);
    errors = errors || status == FileStatus::Errors;
    unreadable = unreadable || status == FileStatus::Unreadable;
  }
  if (unreadable) return 2;
  return errors ? 1 : 0;
}

}  // namespace rocuda::tools
