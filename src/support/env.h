// Every environment variable Rocuda reads is declared in env.cpp's table, which also produces
// docs/configuration.md (`rocuda config --markdown`). Read them only through these functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocuda::env {

struct Variable {
  const char* name;
  const char* defaultValue;  // as documented; nullptr when unset means "not set"
  const char* description;
};

// The table of every variable (for documentation and `rocuda config`).
const std::vector<Variable>& variables();

// The value of a declared variable, or nullopt when unset or empty. Asking for an undeclared
// name is a programming error (asserts in debug builds).
std::optional<std::string> get(std::string_view name);

// "0", "false", "off", "no" are false; any other non-empty value is true.
bool getFlag(std::string_view name, bool defaultValue);

// CUDA_MODULE_LOADING=EAGER: every kernel of a module compiled when the module is loaded (the
// default, LAZY, compiles each on its first launch).
bool eagerModuleLoading();

struct ComputeCapability {
  int major = 8;
  int minor = 6;
};
// ROCUDA_CC as MAJOR.MINOR (3.0 to 12.9); a malformed value is reported and the default (8.6,
// Ampere: new enough for what applications check, old enough that no one expects Hopper-only
// features) is used.
ComputeCapability computeCapability();

}  // namespace rocuda::env
