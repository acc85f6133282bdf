// Linking the relocatable object into an executable (shared) code object with lld, in process.
// lld reads and writes files and keeps global state, so links run one at a time through
// temporary files.
#include <lld/Common/Driver.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "compiler/amdgpu/amdgpu_lowering.h"

LLD_HAS_DRIVER(elf)

namespace rocuda::compiler::amdgpu {
namespace {

// Removes its file when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty()) llvm::sys::fs::remove(path);
  }
};

Status createTemp(const char* suffix, TempFile& file) {
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("rocuda-amdgpu", suffix, file.path))
    return makeError(ErrorCode::Internal, "cannot create a temporary file: " + ec.message());
  return Status::success();
}

}  // namespace

Result<std::vector<uint8_t>> linkCodeObject(const std::vector<uint8_t>& object) {
  TempFile input, output;
  ROCUDA_TRY(createTemp("o", input));
  ROCUDA_TRY(createTemp("co", output));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input.path, ec);
    if (ec) return makeError(ErrorCode::Internal, "cannot write " + input.path.str().str());
    os.write(reinterpret_cast<const char*>(object.data()), object.size());
    os.close();
    if (os.has_error())
      return makeError(ErrorCode::Internal, "cannot write " + input.path.str().str());
  }
  std::string log;
  llvm::raw_string_ostream logStream(log);
  const char* args[] = {"ld.lld",           "-shared", "--no-undefined",
                        input.path.c_str(), "-o",      output.path.c_str()};
  static std::mutex lldMutex;
  lld::Result linked;
  {
    std::lock_guard<std::mutex> lock(lldMutex);
    linked = lld::lldMain(args, logStream, logStream, {{lld::Gnu, &lld::elf::link}});
  }
  if (linked.retCode != 0 || !linked.canRunAgain)
    return makeError(ErrorCode::Internal, "lld could not link the AMD GPU code object: " + log);
  auto buffer = llvm::MemoryBuffer::getFile(output.path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) return makeError(ErrorCode::Internal, "lld wrote no code object");
  const auto* data = reinterpret_cast<const uint8_t*>((*buffer)->getBufferStart());
  return std::vector<uint8_t>(data, data + (*buffer)->getBufferSize());
}

}  // namespace rocuda::compiler::amdgpu
