// Linking relocatable objects into an executable (shared) code object with lld, in process.
// lld reads and writes files and keeps global state, so links run one at a time through
// temporary files.
//
// The objects of one module's partitions each carry a metadata note (NT_AMDGPU_METADATA) for
// their own kernels; lld would put them side by side, and loaders older than ROCm 7 read only
// one. So the notes are merged first: the first object's note lists every kernel, the others lose
// theirs.
#include <lld/Common/Driver.h>
#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/ObjCopy/ConfigManager.h>
#include <llvm/ObjCopy/ObjCopy.h>
#include <llvm/Object/ELFObjectFile.h>
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

Status writeFile(const TempFile& file, const std::vector<uint8_t>& bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream os(file.path, ec);
  if (ec) return makeError(ErrorCode::Internal, "cannot write " + file.path.str().str());
  os.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  os.close();
  if (os.has_error())
    return makeError(ErrorCode::Internal, "cannot write " + file.path.str().str());
  return Status::success();
}

constexpr llvm::StringRef kNoteSection = ".note";
constexpr llvm::StringRef kNoteName = "AMDGPU";

// The msgpack of `object`'s AMDGPU metadata note (pointing into `object`).
Result<llvm::StringRef> metadataOf(const std::vector<uint8_t>& object) {
  llvm::StringRef bytes(reinterpret_cast<const char*>(object.data()), object.size());
  auto elf = llvm::object::ELF64LEFile::create(bytes);
  if (!elf) return makeError(ErrorCode::Internal, "partition object: " + toString(elf.takeError()));
  auto sections = elf->sections();
  if (!sections) return makeError(ErrorCode::Internal, toString(sections.takeError()));
  for (const auto& section : *sections) {
    if (section.sh_type != llvm::ELF::SHT_NOTE) continue;
    llvm::Error error = llvm::Error::success();
    for (const auto& note : elf->notes(section, error))
      if (note.getName() == kNoteName && note.getType() == llvm::ELF::NT_AMDGPU_METADATA)
        return note.getDescAsStringRef(section.sh_addralign);
    if (error) return makeError(ErrorCode::Internal, toString(std::move(error)));
  }
  return makeError(ErrorCode::Internal, "a partition object has no AMDGPU metadata note");
}

// One note section whose metadata lists the kernels of every object: the notes agree on
// everything else (target, version), their kernel lists are concatenated.
Result<std::string> mergedNoteSection(const std::vector<std::vector<uint8_t>>& objects) {
  llvm::msgpack::Document document;
  auto merge = [](llvm::msgpack::DocNode* destination, llvm::msgpack::DocNode source,
                  llvm::msgpack::DocNode key) -> int {
    if (destination->isArray() && source.isArray())
      return key.isString() && key.getString() == "amdhsa.kernels"
                 ? static_cast<int>(destination->getArray().size())
                 : 0;
    if (destination->isMap() && source.isMap()) return 0;
    return *destination == source ? 0 : -1;
  };
  for (const auto& object : objects) {
    auto metadata = metadataOf(object);
    if (!metadata.ok()) return metadata.error();
    if (!document.readFromBlob(*metadata, /*Multi=*/false, merge))
      return makeError(ErrorCode::Internal,
                       "the partitions' AMDGPU metadata notes do not agree and cannot be merged");
  }
  std::string desc;
  document.writeToBlob(desc);
  // Elf64_Nhdr, then the name and the descriptor, each padded to 4 bytes.
  std::string section;
  auto word = [&](uint32_t value) { section.append(reinterpret_cast<const char*>(&value), 4); };
  word(kNoteName.size() + 1);
  word(desc.size());
  word(llvm::ELF::NT_AMDGPU_METADATA);
  section += kNoteName;
  section.resize(llvm::alignTo(section.size() + 1, 4), '\0');
  section += desc;
  section.resize(llvm::alignTo(section.size(), 4), '\0');
  return section;
}

// `object` with its note section replaced by `note`, or removed when `note` is empty.
Result<std::vector<uint8_t>> withNote(const std::vector<uint8_t>& object, const std::string& note) {
  llvm::StringRef bytes(reinterpret_cast<const char*>(object.data()), object.size());
  auto binary =
      llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(bytes, "partition"));
  if (!binary) return makeError(ErrorCode::Internal, toString(binary.takeError()));
  llvm::objcopy::ConfigManager config;
  if (note.empty()) {
    llvm::Error added = config.Common.ToRemove.addMatcher(llvm::objcopy::NameOrPattern::create(
        kNoteSection, llvm::objcopy::MatchStyle::Literal, [](llvm::Error e) { return e; }));
    if (added) return makeError(ErrorCode::Internal, toString(std::move(added)));
  } else {
    config.Common.UpdateSection.emplace_back(
        kNoteSection, llvm::MemoryBuffer::getMemBufferCopy(note, kNoteSection));
  }
  llvm::SmallVector<char, 0> rewritten;
  llvm::raw_svector_ostream os(rewritten);
  if (llvm::Error error = llvm::objcopy::executeObjcopyOnBinary(config, **binary, os))
    return makeError(ErrorCode::Internal,
                     "cannot rewrite a partition's note: " + toString(std::move(error)));
  return std::vector<uint8_t>(rewritten.begin(), rewritten.end());
}

}  // namespace

Result<std::vector<uint8_t>> linkCodeObject(const std::vector<std::vector<uint8_t>>& objects) {
  std::vector<std::vector<uint8_t>> merged;
  if (objects.size() > 1) {
    auto note = mergedNoteSection(objects);
    if (!note.ok()) return note.error();
    for (size_t i = 0; i < objects.size(); ++i) {
      auto object = withNote(objects[i], i == 0 ? *note : std::string());
      if (!object.ok()) return object.error();
      merged.push_back(std::move(*object));
    }
  }
  const auto& inputs = objects.size() > 1 ? merged : objects;
  std::vector<TempFile> inputFiles(inputs.size());
  TempFile output;
  std::vector<const char*> args{"ld.lld", "-shared", "--no-undefined"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    ROCUDA_TRY(createTemp("o", inputFiles[i]));
    ROCUDA_TRY(writeFile(inputFiles[i], inputs[i]));
    args.push_back(inputFiles[i].path.c_str());
  }
  ROCUDA_TRY(createTemp("co", output));
  args.push_back("-o");
  args.push_back(output.path.c_str());
  std::string log;
  llvm::raw_string_ostream logStream(log);
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
