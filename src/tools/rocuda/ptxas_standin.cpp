// rocuda-ptxas: what `rocuda run` gives Triton (PyTorch's torch.compile) as its ptxas
// (TRITON_PTXAS_PATH). Triton compiles its kernels to PTX, assembles them with ptxas into a
// cubin of SASS and loads that with cuModuleLoadData; Rocuda runs PTX, not SASS. This stand-in
// "assembles" by writing the PTX itself (NUL-terminated) where the cubin was asked for, which
// cuModuleLoadData then compiles like any PTX image. `--version` answers as the ptxas of the CUDA
// version Rocuda reports, which is how Triton picks the PTX ISA version it emits.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

constexpr const char* kVersion =
    "ptxas: NVIDIA (R) Ptx optimizing assembler (stand-in: rocuda-ptxas passes PTX through to "
    "Rocuda)\n"
    "Cuda compilation tools, release 13.0, V13.0.88\n";

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string input, output;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--version" || arg == "-V") {
      std::fputs(kVersion, stdout);
      return 0;
    }
    if ((arg == "-o" || arg == "--output-file") && i + 1 < args.size()) {
      output = args[++i];
    } else if (arg.rfind("--output-file=", 0) == 0) {
      output = arg.substr(14);
    } else if (endsWith(arg, ".ptx")) {
      input = arg;
    }
  }
  if (input.empty() || output.empty()) {
    std::fprintf(stderr, "rocuda-ptxas: needs a .ptx input and -o OUTPUT\n");
    return 1;
  }
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "rocuda-ptxas: cannot read %s\n", input.c_str());
    return 1;
  }
  std::string ptx((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
  out.put('\0');
  if (!out) {
    std::fprintf(stderr, "rocuda-ptxas: cannot write %s\n", output.c_str());
    return 1;
  }
  return 0;
}
