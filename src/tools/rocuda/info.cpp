#include "tools/rocuda/info.h"

#include <cstdio>
#include <string>

#include "backends/hip/hip_backend.h"
#include "core/platform.h"
#include "support/env.h"

namespace rocuda::tools {
namespace {

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string uuidText(const std::array<uint8_t, 16>& uuid) {
  std::string out;
  char byte[3];
  for (size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(byte, sizeof byte, "%02x", uuid[i]);
    out += byte;
  }
  return out;
}

// Why AMD GPUs are not among the devices: the platform only asks HIP when ROCUDA_DEVICES lists
// it, so probe it here too (a diagnostic: the probe's devices are dropped).
std::string amdStatus(const core::Platform& platform) {
  for (int i = 0; i < platform.deviceCount(); ++i)
    if (const_cast<core::Platform&>(platform).device(i)->description().backendName == "hip")
      return {};
  backends::HipDiscovery probe = backends::discoverHipDevices();
  if (!probe.devices.empty())
    return std::to_string(probe.devices.size()) +
           " AMD GPU(s) found but not used: ROCUDA_DEVICES does not include 'hip'";
  return probe.unavailableReason;
}

void printText(core::Platform& platform, const std::string& amd) {
  std::printf("Rocuda %s, ROCUDA_DEVICES=%s\n", ROCUDA_VERSION,
              env::get("ROCUDA_DEVICES").value_or("cpu (default)").c_str());
  for (int i = 0; i < platform.deviceCount(); ++i) {
    const auto& d = platform.device(i)->description();
    std::printf("\nDevice %d: %s\n", i, d.name.c_str());
    std::printf("  CUDA:   compute capability %d.%d, %d multiprocessors, %.1f GiB, warp %d,\n",
                d.computeCapabilityMajor, d.computeCapabilityMinor, d.multiprocessorCount,
                static_cast<double>(d.totalMemory) / (1u << 30), d.warpSize);
    std::printf("          %d threads/block, shared memory %d KiB/block (%d KiB opt-in)\n",
                d.maxThreadsPerBlock, d.sharedMemPerBlock / 1024, d.sharedMemPerBlockOptin / 1024);
    std::printf("  native: %s backend, %s\n", d.backendName.c_str(), d.nativeTarget.c_str());
    std::printf("  UUID:   GPU-%s\n", uuidText(d.uuid).c_str());
  }
  std::printf("\nAMD GPUs: %s\n", amd.empty() ? "in use" : amd.c_str());
}

void printJson(core::Platform& platform, const std::string& amd) {
  std::printf("{\n  \"version\": %s,\n  \"devices\": [", jsonString(ROCUDA_VERSION).c_str());
  for (int i = 0; i < platform.deviceCount(); ++i) {
    const auto& d = platform.device(i)->description();
    std::printf(
        "%s\n    {\"ordinal\": %d, \"name\": %s, \"backend\": %s, \"native_target\": %s, "
        "\"uuid\": %s, \"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, "
        "\"total_memory\": %llu, \"warp_size\": %d, \"max_threads_per_block\": %d, "
        "\"shared_memory_per_block\": %d, \"shared_memory_per_block_optin\": %d}",
        i == 0 ? "" : ",", i, jsonString(d.name).c_str(), jsonString(d.backendName).c_str(),
        jsonString(d.nativeTarget).c_str(), jsonString(uuidText(d.uuid)).c_str(),
        d.computeCapabilityMajor, d.computeCapabilityMinor, d.multiprocessorCount,
        static_cast<unsigned long long>(d.totalMemory), d.warpSize, d.maxThreadsPerBlock,
        d.sharedMemPerBlock, d.sharedMemPerBlockOptin);
  }
  std::printf("\n  ],\n  \"amd\": {\"in_use\": %s, \"reason\": %s}\n}\n",
              amd.empty() ? "true" : "false", jsonString(amd).c_str());
}

}  // namespace

int commandInfo(const std::vector<std::string>& args) {
  bool json = false;
  for (const auto& arg : args) {
    if (arg == "--json") {
      json = true;
    } else {
      std::fprintf(stderr, "rocuda info: unknown option '%s' (usage: rocuda info [--json])\n",
                   arg.c_str());
      return 2;
    }
  }
  core::Platform& platform = core::Platform::instance();
  if (auto status = platform.initialize(); !status.ok()) {
    std::fprintf(stderr, "rocuda info: %s\n", status.error().message.c_str());
    return 1;
  }
  std::string amd = amdStatus(platform);
  if (json)
    printJson(platform, amd);
  else
    printText(platform, amd);
  return 0;
}

}  // namespace rocuda::tools
