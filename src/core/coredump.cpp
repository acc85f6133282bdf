#include "core/coredump.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/context.h"
#include "core/platform.h"
#include "support/env.h"
#include "support/log.h"
#include "support/platform.h"

namespace rocuda::core {
namespace {

// CUDA_COREDUMP_GENERATION_FLAGS' names, as cuda-gdb documents them, and their bits.
uint32_t parseGenerationFlags(const std::string& names) {
  static const std::pair<const char*, uint32_t> kNames[] = {
      {"skip_nonrelocated_elf_images", 1u << 0}, {"skip_global_memory", 1u << 1},
      {"skip_shared_memory", 1u << 2},           {"skip_local_memory", 1u << 3},
      {"skip_abort", kCoredumpSkipAbort},        {"skip_constbank_memory", 1u << 5}};
  uint32_t flags = 0;
  std::stringstream list(names);
  for (std::string name; std::getline(list, name, ',');) {
    bool known = false;
    for (const auto& [spelling, bit] : kNames)
      if (name == spelling) {
        flags |= bit;
        known = true;
      }
    if (!known && !name.empty())
      log::warning("CUDA_COREDUMP_GENERATION_FLAGS: unknown flag '" + name + "' ignored");
  }
  return flags;
}

// %h, %p and %t of a dump's path: the host name, the process id and the time in seconds.
std::string expandPath(const std::string& pattern) {
  std::string path;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      path += pattern[i];
      continue;
    }
    char key = pattern[++i];
    if (key == 'h')
      path += platform::hostName();
    else if (key == 'p')
      path += std::to_string(platform::processId());
    else if (key == 't')
      path += std::to_string(std::time(nullptr));
    else
      path += std::string("%") + key;
  }
  return path;
}

}  // namespace

Coredumps& Coredumps::instance() {
  static Coredumps* coredumps = new Coredumps();
  return *coredumps;
}

Coredumps::Coredumps() {
  std::string host = platform::hostName(), pid = std::to_string(platform::processId());
  process_[CoredumpSetting::EnableOnException].flag = false;
  process_[CoredumpSetting::TriggerHost].flag = true;
  process_[CoredumpSetting::Lightweight].flag = false;
  process_[CoredumpSetting::EnableUserTrigger].flag = false;
  process_[CoredumpSetting::File].text = "core.cuda." + host + "." + pid;
  process_[CoredumpSetting::Pipe].text = "corepipe.cuda." + host + "." + pid;
  process_[CoredumpSetting::GenerationFlags].number = 0;
  // cuda-gdb's variables, read once: what they set the calls cannot change.
  auto flagFrom = [&](const char* name, CoredumpSetting setting) {
    if (!env::get(name)) return;
    process_[setting].flag = env::getFlag(name, process_[setting].flag);
    fromEnvironment_.insert(setting);
  };
  flagFrom("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", CoredumpSetting::EnableOnException);
  flagFrom("CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION", CoredumpSetting::TriggerHost);
  flagFrom("CUDA_ENABLE_LIGHTWEIGHT_COREDUMP", CoredumpSetting::Lightweight);
  if (env::getFlag("CUDA_ENABLE_USER_TRIGGERED_COREDUMP", false))
    log::warning(
        "CUDA_ENABLE_USER_TRIGGERED_COREDUMP: user-triggered core dumps are not "
        "supported; ignored");
  if (auto file = env::get("CUDA_COREDUMP_FILE")) {
    process_[CoredumpSetting::File].text = *file;
    fromEnvironment_.insert(CoredumpSetting::File);
  }
  if (auto pipe = env::get("CUDA_COREDUMP_PIPE")) {
    process_[CoredumpSetting::Pipe].text = *pipe;
    fromEnvironment_.insert(CoredumpSetting::Pipe);
  }
  if (auto flags = env::get("CUDA_COREDUMP_GENERATION_FLAGS")) {
    process_[CoredumpSetting::GenerationFlags].number = parseGenerationFlags(*flags);
    fromEnvironment_.insert(CoredumpSetting::GenerationFlags);
  }
}

bool Coredumps::fixedByEnvironment(CoredumpSetting setting) const {
  return fromEnvironment_.count(setting) != 0;
}

CoredumpValue Coredumps::get(CoredumpSetting setting, const Context* context) const {
  std::lock_guard lock(mutex_);
  if (context != nullptr && !fixedByEnvironment(setting)) {
    auto own = contexts_.find(context->id());
    if (own != contexts_.end())
      if (auto value = own->second.find(setting); value != own->second.end()) return value->second;
  }
  return process_.at(setting);
}

Status Coredumps::set(CoredumpSetting setting, CoredumpValue value, const Context* context) {
  std::lock_guard lock(mutex_);
  if (fixedByEnvironment(setting))
    return makeError(ErrorCode::NotPermitted,
                     "a CUDA_* core dump environment variable set this before CUDA started");
  if (setting == CoredumpSetting::EnableUserTrigger && value.flag) {
    log::warning("user-triggered core dumps (CU_COREDUMP_ENABLE_USER_TRIGGER) are not supported");
    return makeError(ErrorCode::NotPermitted, "user-triggered core dumps are not supported");
  }
  if (context == nullptr) {
    process_[setting] = std::move(value);
  } else {
    contexts_[context->id()][setting] = std::move(value);
  }
  return Status::success();
}

void Coredumps::forget(const Context& context) {
  std::lock_guard lock(mutex_);
  contexts_.erase(context.id());
}

std::string Coredumps::dumpPath(const Context& context) const {
  return expandPath(get(CoredumpSetting::File, &context).text);
}

void Coredumps::onException(const Context& context, const Error& error) const {
  if (!get(CoredumpSetting::EnableOnException, &context).flag) return;
  std::string path = dumpPath(context);
  std::ofstream dump(path, std::ios::trunc);
  if (!dump) {
    log::error("cannot write the core dump '" + path + "': " + std::strerror(errno));
  } else {
    auto& device = const_cast<Context&>(context).device();
    dump << "Rocuda GPU core dump: a text report of the fault (NVIDIA's ELF core file, which "
            "cuda-gdb reads, is not written)\n"
         << "time: " << std::time(nullptr) << "\n"
         << "process: " << platform::processId() << " on " << platform::hostName() << "\n"
         << "device: " << device.ordinal() << " (" << device.description().name << ")\n"
         << "context: " << context.id() << "\n"
         << "error: " << error.message << "\n"
         << "generation flags: 0x" << std::hex
         << get(CoredumpSetting::GenerationFlags, &context).number << std::dec
         << (get(CoredumpSetting::Lightweight, &context).flag ? " (lightweight)" : "") << "\n";
    dump.close();
    log::error("a kernel faulted: core dump written to '" + path + "'");
  }
  bool abortHost =
      get(CoredumpSetting::TriggerHost, &context).flag &&
      (get(CoredumpSetting::GenerationFlags, &context).number & kCoredumpSkipAbort) == 0;
  if (abortHost) {
    log::error(
        "aborting the process after the core dump, as CU_COREDUMP_TRIGGER_HOST asks "
        "(CU_COREDUMP_SKIP_ABORT or CUDA_ENABLE_CPU_COREDUMP_ON_EXCEPTION=0 would not)");
    std::abort();
  }
}

}  // namespace rocuda::core
