// GPU core dumps (cuCoredumpGetAttribute[Global] / cuCoredumpSetAttribute[Global] and cuda-gdb's
// CUDA_*COREDUMP* environment variables): the settings of the process and of each context, and
// what a kernel fault does with them. Rocuda's dump is a text report of the fault (the kernel,
// block, thread, address and line its error names) written where CU_COREDUMP_FILE says, not
// NVIDIA's ELF core file, which only cuda-gdb reads; the abort that follows it
// (CU_COREDUMP_TRIGGER_HOST, unless CU_COREDUMP_SKIP_ABORT) is NVIDIA's.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "support/result.h"

namespace rocuda::core {

class Context;

// CUcoredumpSettings' values.
enum class CoredumpSetting : uint8_t {
  EnableOnException = 1,
  TriggerHost = 2,
  Lightweight = 3,
  EnableUserTrigger = 4,
  File = 5,
  Pipe = 6,
  GenerationFlags = 7,
};
inline constexpr uint8_t kCoredumpSettingEnd = 8;

// CUCoredumpGenerationFlags' bits that change what Rocuda does.
inline constexpr uint32_t kCoredumpSkipAbort = 1u << 4;

// One setting's value: a flag (the four booleans), text (the file and pipe) or a number (the
// generation flags).
struct CoredumpValue {
  bool flag = false;
  std::string text;
  uint32_t number = 0;
};

class Coredumps {
 public:
  static Coredumps& instance();

  // The process's value of `setting` (`context` null), or the context's: its own when set,
  // else the process's.
  CoredumpValue get(CoredumpSetting setting, const Context* context) const;
  // NotPermitted when a CUDA_* environment variable fixed the setting before CUDA started, for
  // the pipe once user triggers are on, and for enabling user triggers (not supported).
  Status set(CoredumpSetting setting, CoredumpValue value, const Context* context);
  // The context is destroyed: its settings go.
  void forget(const Context& context);

  // A kernel of `context` failed with `error`: the report, and the abort, its settings ask for.
  void onException(const Context& context, const Error& error) const;

 private:
  Coredumps();
  bool fixedByEnvironment(CoredumpSetting setting) const;
  std::string dumpPath(const Context& context) const;

  mutable std::mutex mutex_;
  std::map<CoredumpSetting, CoredumpValue> process_;
  std::set<CoredumpSetting> fromEnvironment_;  // fixed by a CUDA_* variable
  std::map<uint64_t, std::map<CoredumpSetting, CoredumpValue>> contexts_;  // by context id
};

}  // namespace rocuda::core
