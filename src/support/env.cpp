#include "support/env.h"

#include <cassert>
#include <cstdlib>
#include <strings.h>

namespace rocuda::env {

const std::vector<Variable>& variables() {
  static const std::vector<Variable> table = {
      {"ROCUDA_LOG", nullptr,
       "Log every driver API call with its arguments and result, and informational messages. "
       "`1` or `stderr` logs to standard error; any other value is a file path to append to; `0` "
       "or unset logs only warnings and errors (to standard error)."},
      {"ROCUDA_CACHE", "1",
       "`0` turns the persistent cache of compiled code off (everything is compiled each run)."},
      {"ROCUDA_CACHE_DIR", "$XDG_CACHE_HOME/rocuda, else $HOME/.cache/rocuda",
       "Directory of the persistent cache of compiled code. Created when missing."},
      {"ROCUDA_DUMP", nullptr,
       "Directory into which the compiler writes the LLVM IR of every module it compiles "
       "(`<module>.ll` target-neutral, `<module>.host.ll` optimised for the host)."},
      {"ROCUDA_CPU_THREADS", "number of cores",
       "Worker threads of the CPU device's thread pool (blocks run in parallel on them)."},
      {"ROCUDA_CC", "8.6",
       "Compute capability reported by every device, as MAJOR.MINOR (e.g. `8.6`)."},
  };
  return table;
}

std::optional<std::string> get(std::string_view name) {
#ifndef NDEBUG
  bool declared = false;
  for (const auto& variable : variables()) declared = declared || name == variable.name;
  assert(declared && "environment variable not declared in support/env.cpp");
#endif
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool getFlag(std::string_view name, bool defaultValue) {
  auto value = get(name);
  if (!value) return defaultValue;
  for (const char* falseWord : {"0", "false", "off", "no"})
    if (strcasecmp(value->c_str(), falseWord) == 0) return false;
  return true;
}

}  // namespace rocuda::env
