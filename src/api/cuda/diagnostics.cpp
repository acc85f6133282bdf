// The driver's own diagnostics and notifications: the error log (cuLogs*, fed by Rocuda's log),
// device async notifications, the deprecated profiler initialisation, and the cluster occupancy
// queries of a device whose clusters are single blocks.
#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/module.h"
#include "core/platform.h"

namespace rocuda::cuda {
extern "C" CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                                int blockSize,
                                                                size_t dynamicSMemSize);
}

namespace rocuda::api {
namespace {

using namespace cuda;

// ---- Logs ----
// Every error and warning Rocuda logs is kept (the newest 25600 bytes, as NVIDIA's buffer) and
// handed to the registered callbacks. An iterator is the sequence number of a message.
constexpr size_t kLogCapacity = 25600;

struct LogCallback {
  CUlogsCallback function;
  void* userData;
};

struct LogBuffer {
  std::mutex mutex;
  std::deque<std::string> messages;  // each ends with '\n'
  unsigned firstSequence = 0;        // sequence number of messages.front()
  size_t bytes = 0;
  std::vector<std::unique_ptr<LogCallback>> callbacks;

  unsigned endSequence() const { return firstSequence + static_cast<unsigned>(messages.size()); }
};

LogBuffer& logBuffer() {
  static LogBuffer* instance = new LogBuffer();  // logged to from exit paths
  return *instance;
}

thread_local bool inLogCallback = false;

void observeLog(log::Level level, std::string_view message) {
  if (inLogCallback) return;  // a callback that calls the driver must not recurse
  LogBuffer& b = logBuffer();
  std::string text =
      std::string(level == log::Level::Error ? "error: " : "warning: ") + std::string(message);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::vector<LogCallback> callbacks;
  {
    std::lock_guard lock(b.mutex);
    b.messages.push_back(text + "\n");
    b.bytes += text.size() + 1;
    while (b.bytes > kLogCapacity && b.messages.size() > 1) {
      b.bytes -= b.messages.front().size();
      b.messages.pop_front();
      ++b.firstSequence;
    }
    for (const auto& c : b.callbacks) callbacks.push_back(*c);
  }
  inLogCallback = true;
  for (const LogCallback& c : callbacks)
    c.function(c.userData, level == log::Level::Error ? CU_LOG_LEVEL_ERROR : CU_LOG_LEVEL_WARNING,
               text.data(), text.size());
  inLogCallback = false;
}

// Installed when the library loads, so that messages before the first cuLogs* call are kept.
const bool kObserverInstalled = (log::setObserver(&observeLog), true);

// The messages from *iterator (all when NULL), and the iterator moved past them. `lost` tells
// whether older messages the iterator asked for were already overwritten.
std::vector<std::string> takeMessages(CUlogIterator* iterator, bool* lost) {
  LogBuffer& b = logBuffer();
  std::lock_guard lock(b.mutex);
  unsigned from = iterator != nullptr ? *iterator : b.firstSequence;
  *lost = from < b.firstSequence;
  from = std::max(from, b.firstSequence);
  std::vector<std::string> out;
  for (unsigned s = from; s < b.endSequence(); ++s) out.push_back(b.messages[s - b.firstSequence]);
  if (iterator != nullptr) *iterator = b.endSequence();
  return out;
}

const char kTruncated[] = "[rocuda] earlier log messages were overwritten or did not fit\n";

Outcome dumpToFile(CUlogIterator* iterator, const char* path, unsigned flags) {
  if (path == nullptr || flags != 0) return invalidValue("pathToFile is NULL or flags not 0");
  std::FILE* file = std::fopen(path, "a");
  if (file == nullptr) return invalidValue("cannot open pathToFile");
  bool lost = false;
  std::vector<std::string> messages = takeMessages(iterator, &lost);
  if (lost) std::fputs(kTruncated, file);
  for (const std::string& m : messages) std::fwrite(m.data(), 1, m.size(), file);
  return std::fclose(file) == 0 ? Outcome{} : invalidValue("cannot write pathToFile");
}

// The newest messages that fit, after a truncation notice when some do not (as NVIDIA's driver
// documents); always NUL-terminated.
Outcome dumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size, unsigned flags) {
  if (buffer == nullptr || size == nullptr || flags != 0)
    return invalidValue("buffer or size is NULL, or flags not 0");
  size_t capacity = *size;
  bool lost = false;
  std::vector<std::string> messages = takeMessages(iterator, &lost);
  *size = 0;
  if (messages.empty()) {
    if (capacity > 0) buffer[0] = '\0';
    return {};
  }
  if (capacity == 0 || messages.back().size() + 1 > capacity)
    return invalidValue("the buffer cannot hold a message");
  size_t total = 0, first = messages.size();
  while (first > 0 && total + messages[first - 1].size() + 1 <= capacity)
    total += messages[--first].size();
  std::string text;
  if (first > 0 || lost) {
    // Make room for the notice by dropping the oldest messages kept.
    size_t notice = sizeof kTruncated - 1;
    while (first < messages.size() - 1 && total + notice + 1 > capacity)
      total -= messages[first++].size();
    if (total + notice + 1 <= capacity) text = kTruncated;
  }
  for (size_t i = first; i < messages.size(); ++i) text += messages[i];
  std::copy(text.begin(), text.end(), buffer);
  buffer[text.size()] = '\0';
  *size = text.size();
  return {};
}

// ---- Async notifications ----
// The only notification CUDA defines is exceeding a device memory budget, which this platform
// does not impose: registrations are kept and validated, and never called.
struct AsyncRegistration {
  CUdevice device;
  CUasyncCallback function;
  void* userData;
};

struct AsyncRegistry {
  std::mutex mutex;
  std::vector<std::unique_ptr<AsyncRegistration>> entries;
};

AsyncRegistry& asyncRegistry() {
  static AsyncRegistry instance;
  return instance;
}

// ---- Cluster occupancy ----
// The device has no thread block clusters (CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH is 0): a cluster
// is one block, so the largest cluster is 1 and clusters co-exist as blocks do.
Result<int> blockCount(const CUlaunchConfig& config) {
  long long threads =
      static_cast<long long>(config.blockDimX) * config.blockDimY * config.blockDimZ;
  if (threads <= 0 || threads > 1 << 30) return makeError(ErrorCode::InvalidValue, "bad block");
  return static_cast<int>(threads);
}

// The cluster size config asks for (1 when it names none).
unsigned requestedClusterSize(const CUlaunchConfig& config, bool* named) {
  *named = false;
  for (unsigned i = 0; i < config.numAttrs && config.attrs != nullptr; ++i) {
    if (config.attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
    *named = true;
    const auto& d = config.attrs[i].value.clusterDim;
    return d.x * d.y * d.z;
  }
  return 1;
}

Outcome maxActiveClusters(int* numClusters, CUfunction func, const CUlaunchConfig* config) {
  if (numClusters == nullptr || config == nullptr) return invalidValue("NULL argument");
  Result<core::Kernel*> kernel = lookupKernel(func);
  if (!kernel) return kernel.error();
  bool named = false;
  unsigned clusterSize = requestedClusterSize(*config, &named);
  // "If the function has required cluster size already set ..., the cluster size from config
  // must either be unspecified or match the required size."
  unsigned required = 1;
  bool hasRequired = false;
  for (int d = 0; d < 3; ++d)
    if (uint32_t blocks = (*kernel)->requiredClusterDim(d); blocks != 0) {
      required *= blocks;
      hasRequired = true;
    }
  if (!named && !hasRequired) return invalidValue("config names no cluster size");
  if (named && hasRequired && clusterSize != required)
    return {CUDA_ERROR_INVALID_CLUSTER_SIZE, "the config's cluster size is not the kernel's"};
  if (!named) clusterSize = required;
  if (clusterSize != 1)
    return {CUDA_ERROR_INVALID_CLUSTER_SIZE, "the device runs clusters of one block only"};
  Result<int> threads = blockCount(*config);
  if (!threads) return threads.error();
  int perMultiprocessor = 0;
  CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&perMultiprocessor, func, *threads,
                                                           config->sharedMemBytes);
  if (r != CUDA_SUCCESS) return {r, "occupancy of the kernel"};
  const auto& d = (*kernel)->module().context().device().description();
  *numClusters = perMultiprocessor * d.multiprocessorCount;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData,
                                              CUlogsCallbackHandle* callback_out) {
  return ROCUDA_API_NOINIT((callbackFunc, userData, callback_out), [&]() -> api::Outcome {
    if (callbackFunc == nullptr) return api::invalidValue("callbackFunc is NULL");
    api::LogBuffer& b = api::logBuffer();
    std::lock_guard lock(b.mutex);
    b.callbacks.push_back(
        std::make_unique<api::LogCallback>(api::LogCallback{callbackFunc, userData}));
    if (callback_out != nullptr)
      *callback_out = reinterpret_cast<CUlogsCallbackHandle>(b.callbacks.back().get());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  return ROCUDA_API_NOINIT((callback), [&]() -> api::Outcome {
    api::LogBuffer& b = api::logBuffer();
    std::lock_guard lock(b.mutex);
    auto it = std::find_if(b.callbacks.begin(), b.callbacks.end(), [&](const auto& c) {
      return reinterpret_cast<CUlogsCallbackHandle>(c.get()) == callback;
    });
    if (callback == nullptr || it == b.callbacks.end())
      return api::invalidValue("not a registered log callback");
    b.callbacks.erase(it);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  return ROCUDA_API_NOINIT((iterator_out, flags), [&]() -> api::Outcome {
    if (iterator_out == nullptr || flags != 0)
      return api::invalidValue("iterator_out is NULL or flags not 0");
    api::LogBuffer& b = api::logBuffer();
    std::lock_guard lock(b.mutex);
    *iterator_out = b.endSequence();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuLogsDumpToFile(CUlogIterator* iterator, const char* pathToFile,
                                        unsigned int flags) {
  return ROCUDA_API_NOINIT((iterator, pathToFile, flags),
                           [&] { return api::dumpToFile(iterator, pathToFile, flags); });
}

ROCUDA_EXPORT CUresult cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size,
                                          unsigned int flags) {
  return ROCUDA_API_NOINIT((iterator, buffer, size, flags),
                           [&] { return api::dumpToMemory(iterator, buffer, size, flags); });
}

ROCUDA_EXPORT CUresult cuDeviceRegisterAsyncNotification(CUdevice device,
                                                         CUasyncCallback callbackFunc,
                                                         void* userData,
                                                         CUasyncCallbackHandle* callback) {
  return ROCUDA_API((device, callbackFunc, userData, callback), [&]() -> api::Outcome {
    Result<core::Device*> found = api::lookupDevice(device);
    if (!found) return found.error();
    if (callbackFunc == nullptr || callback == nullptr)
      return api::invalidValue("callbackFunc or callback is NULL");
    api::AsyncRegistry& r = api::asyncRegistry();
    std::lock_guard lock(r.mutex);
    r.entries.push_back(std::make_unique<api::AsyncRegistration>(
        api::AsyncRegistration{device, callbackFunc, userData}));
    *callback = reinterpret_cast<CUasyncCallbackHandle>(r.entries.back().get());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDeviceUnregisterAsyncNotification(CUdevice device,
                                                           CUasyncCallbackHandle callback) {
  return ROCUDA_API((device, callback), [&]() -> api::Outcome {
    Result<core::Device*> found = api::lookupDevice(device);
    if (!found) return found.error();
    api::AsyncRegistry& r = api::asyncRegistry();
    std::lock_guard lock(r.mutex);
    auto it = std::find_if(r.entries.begin(), r.entries.end(), [&](const auto& e) {
      return reinterpret_cast<CUasyncCallbackHandle>(e.get()) == callback && e->device == device;
    });
    if (callback == nullptr || it == r.entries.end())
      return api::invalidValue("not a callback registered on this device");
    r.entries.erase(it);
    return {};
  });
}

// Deprecated; CUDA 12.0 and later always answer CUDA_ERROR_NOT_SUPPORTED.
ROCUDA_EXPORT CUresult cuProfilerInitialize(const char* configFile, const char* outputFile,
                                            CUoutput_mode outputMode) {
  return ROCUDA_API((configFile, outputFile, outputMode), []() -> api::Outcome {
    return {CUDA_ERROR_NOT_SUPPORTED, "cuProfilerInitialize is not supported since CUDA 12.0"};
  });
}

ROCUDA_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func,
                                                          const CUlaunchConfig* config) {
  return ROCUDA_API((clusterSize, func, config), [&]() -> api::Outcome {
    if (clusterSize == nullptr || config == nullptr) return api::invalidValue("NULL argument");
    Result<core::Kernel*> kernel = api::lookupKernel(func);
    if (!kernel) return kernel.error();
    Result<int> threads = api::blockCount(*config);
    if (!threads) return threads.error();
    *clusterSize = 1;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                                    const CUlaunchConfig* config) {
  return ROCUDA_API((numClusters, func, config),
                    [&] { return api::maxActiveClusters(numClusters, func, config); });
}

}  // extern "C"
}  // namespace rocuda::cuda
