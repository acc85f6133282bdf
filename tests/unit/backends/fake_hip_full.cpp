// An in-process HIP double for ordering and error-path tests only (never for attribute values:
// those come from recorded data of real GPUs). Behaviour follows environment variables read on
// every call: FAKE_HIP_VERSION, FAKE_HIP_INIT_ERROR, FAKE_HIP_COUNT, FAKE_HIP_ARCH,
// FAKE_HIP_MALLOC_ERROR, FAKE_HIP_REGISTER_ERROR, FAKE_HIP_LOAD_ERROR, FAKE_HIP_LAUNCH_ERROR,
// FAKE_HIP_SYNC_ERROR (the error a kernel fault reports), a launch hook standing in for kernels
// (fakeHipSetLaunchHook), FAKE_HIP_NO_PEERS (no peer links), FAKE_HIP_NO_VMM (no virtual memory
// management), FAKE_HIP_PARAM_SIZES (e.g. "8,4": how
// many bytes of each kernelParams entry a launch records), FAKE_HIP_NO_PRIORITIES (a range of [0,
// 0]; else ROCm's [1, -1]), FAKE_HIP_SYNC_RENDEZVOUS=N (hipStreamSynchronize returns only once N
// callers are inside it at the same time, or fails after 5 s: proof that operations overlap).
// Streams are numbered in creation order ("s1", "s2"...; from 1 again whenever none is alive), and
// each asynchronous call names its stream; fakeHipLiveStreams counts those not destroyed. Built
// twice: ROCm 5's exports, and (FAKE_HIP_ROCM6) ROCm 6/7's. Every call is appended to a log the
// test reads (fakeHipCallLog).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {
std::recursive_mutex callMutex;  // streams and the log are shared by the backend's threads
std::string callLog;
int current = -1;
int streamsCreated = 0;
std::map<void*, int> liveStreams;  // handle -> number
std::map<void*, size_t> allocations;  // hipMalloc'ed, for hipMemGetAddressRange

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}
void note(const char* call) {
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  callLog += call;
  callLog += ';';
}
// "name(s2)": an asynchronous call on a stream.
void noteOn(const char* call, void* stream) {
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  auto it = liveStreams.find(stream);
  std::string text = std::string(call) + "(" +
                     (stream == nullptr         ? std::string("null")
                      : it == liveStreams.end() ? std::string("destroyed")
                                                : "s" + std::to_string(it->second)) +
                     ")";
  note(text.c_str());
}
}  // namespace

// What the last hipModuleLoadData saw and the last launch passed.
struct FakeModule {
  std::map<std::string, int> functions;
  std::map<std::string, std::vector<uint8_t>> globals;  // 256 bytes each
};
FakeModule* lastModule = nullptr;
std::string lastImage;  // "elf machine=224 abi=3" or "not an AMD GPU ELF"
std::string lastLaunch;

// What a test runs in place of a kernel (fakeHipSetLaunchHook): the kernel's name and
// kernelParams, at each hipModuleLaunchKernel.
using LaunchHook = void (*)(const char* kernel, void** params, void* context);
LaunchHook launchHook = nullptr;
void* launchHookContext = nullptr;

extern "C" {
void fakeHipSetLaunchHook(LaunchHook hook, void* context) {
  launchHook = hook;
  launchHookContext = context;
}
const char* fakeHipCallLog() { return callLog.c_str(); }
const char* fakeHipLastImage() { return lastImage.c_str(); }
const char* fakeHipLastLaunch() { return lastLaunch.c_str(); }
// The storage of a global of the last module loaded (null before it was looked up).
void* fakeHipGlobal(const char* name) {
  if (lastModule == nullptr || !lastModule->globals.count(name)) return nullptr;
  return lastModule->globals[name].data();
}
int fakeHipLiveStreams() { return static_cast<int>(liveStreams.size()); }
void fakeHipResetLog() {
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  callLog.clear();
  current = -1;
  if (liveStreams.empty()) streamsCreated = 0;
}

// FAKE_HIP_UUID: every device's UUID bytes (what ROCr gives GPUs without a unique id); unset,
// the call fails as on runtimes without it.
int hipDeviceGetUuid(char* uuid, int) {
  const char* text = std::getenv("FAKE_HIP_UUID");
  if (text == nullptr) return 801;
  std::memset(uuid, 0, 16);
  std::memcpy(uuid, text, std::min<size_t>(std::strlen(text), 16));
  return 0;
}
int hipRuntimeGetVersion(int* version) {
  note("hipRuntimeGetVersion");
  *version = envInt("FAKE_HIP_VERSION", 60200000);
  return 0;
}
const char* hipGetErrorString(int error) {
  return error == 2 ? "out of memory" : error == 101 ? "invalid device ordinal" : "fake error";
}
const char* hipGetErrorName(int error) {
  return error == 2     ? "hipErrorOutOfMemory"
         : error == 100 ? "hipErrorNoDevice"
         : error == 101 ? "hipErrorInvalidDevice"
                        : "hipErrorUnknown";
}
int hipInit(unsigned) {
  note("hipInit");
  return envInt("FAKE_HIP_INIT_ERROR", 0);
}
int hipGetDeviceCount(int* count) {
  note("hipGetDeviceCount");
  *count = envInt("FAKE_HIP_INIT_ERROR", 0) != 0 ? 0 : envInt("FAKE_HIP_COUNT", 1);
  return *count == 0 ? 100 : 0;
}
int hipDeviceGetAttribute(int* value, int attribute, int) {
  *value = attribute == 87 ? 32 : attribute == 63 ? 48 : 0;  // warp size, multiprocessors
  return attribute == 87 || attribute == 63 ? 0 : 1;
}
int hipDeviceGetName(char* name, int length, int ordinal) {
  note("hipDeviceGetName");
  std::string text = "Fake GPU " + std::to_string(ordinal);
  std::strncpy(name, text.c_str(), static_cast<size_t>(length));
  return 0;
}
int hipDeviceTotalMem(size_t* bytes, int) {
  *bytes = size_t(1) << 30;
  return 0;
}
int hipDeviceGetPCIBusId(char* text, int length, int ordinal) {
  std::string id = "0000:0" + std::to_string(ordinal + 3) + ":00.0";
  std::strncpy(text, id.c_str(), static_cast<size_t>(length));
  return 0;
}
int hipGetDeviceProperties(void* properties, int) {
  note("hipGetDeviceProperties");
  const char* arch = std::getenv("FAKE_HIP_ARCH");
  std::strcpy(static_cast<char*>(properties) + 396, arch != nullptr ? arch : "gfx1100");
  return 0;
}
#ifdef FAKE_HIP_ROCM6
// ROCm 6 and 7 export the R0000 layout under its own name too, and their new R0600 layout (UUID
// and LUID inserted after the name, so gcnArchName sits elsewhere) under R0600.
int hipGetDevicePropertiesR0000(void* properties, int ordinal) {
  note("hipGetDevicePropertiesR0000");
  const char* arch = std::getenv("FAKE_HIP_ARCH");
  std::strcpy(static_cast<char*>(properties) + 396, arch != nullptr ? arch : "gfx1100");
  return 0;
}
int hipGetDevicePropertiesR0600(void* properties, int) {
  note("hipGetDevicePropertiesR0600");
  std::memset(properties, 'x', 1472);
  return 0;
}
#endif
int hipSetDevice(int ordinal) {
  note("hipSetDevice");
  current = ordinal;
  return 0;
}
// Peer links between the double's GPUs: FAKE_HIP_NO_PEERS=1 reports none.
int hipDeviceCanAccessPeer(int* can, int device, int peer) {
  note(("hipDeviceCanAccessPeer(" + std::to_string(device) + ", " + std::to_string(peer) + ")")
           .c_str());
  *can = device != peer && envInt("FAKE_HIP_NO_PEERS", 0) == 0 ? 1 : 0;
  return 0;
}
int hipDeviceEnablePeerAccess(int peer, unsigned) {
  note(("hipDeviceEnablePeerAccess(" + std::to_string(peer) + ")").c_str());
  return 0;
}
int hipDeviceDisablePeerAccess(int peer) {
  note(("hipDeviceDisablePeerAccess(" + std::to_string(peer) + ")").c_str());
  return 0;
}
int hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
  bool none = envInt("FAKE_HIP_NO_PRIORITIES", 0) != 0;
  *least = none ? 0 : 1;
  *greatest = none ? 0 : -1;
  return 0;
}
int hipStreamCreateWithPriority(void** stream, unsigned flags, int priority) {
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  *stream = new int(0);
  liveStreams[*stream] = ++streamsCreated;
  std::string text = "hipStreamCreateWithPriority(s" + std::to_string(streamsCreated) + ", flags " +
                     std::to_string(flags) + ", priority " + std::to_string(priority) + ")";
  note(text.c_str());
  return 0;
}
int hipStreamDestroy(void* stream) {
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  noteOn("hipStreamDestroy", stream);
  liveStreams.erase(stream);
  delete static_cast<int*>(stream);
  return 0;
}
int hipStreamSynchronize(void* stream) {
  noteOn("hipStreamSynchronize", stream);
  if (int expected = envInt("FAKE_HIP_SYNC_RENDEZVOUS", 0); expected > 0) {
    static std::mutex mutex;
    static std::condition_variable arrived;
    static int inside = 0;
    std::unique_lock<std::mutex> lock(mutex);
    ++inside;
    arrived.notify_all();
    bool met = arrived.wait_for(lock, std::chrono::seconds(5), [&] { return inside >= expected; });
    if (!met) {
      --inside;
      return 999;  // hipErrorUnknown: the callers never overlapped
    }
  }
  return envInt("FAKE_HIP_SYNC_ERROR", 0);
}
int hipMalloc(void** pointer, size_t bytes) {
  note("hipMalloc");
  int error = envInt("FAKE_HIP_MALLOC_ERROR", 0);
  if (error != 0) return error;
  *pointer = std::malloc(bytes);
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  allocations[*pointer] = bytes;
  return 0;
}
// Virtual memory management on host pages (FAKE_HIP_NO_VMM=1: the granularity query fails, as
// on a GPU without it): reservations are inaccessible pages, physical memory a memfd (its handle
// the descriptor + 1), mappings and access mmap and mprotect, as the CPU device does.
int hipMemGetAllocationGranularity(size_t* granularity, const void* prop, int option) {
  const int* fields = static_cast<const int*>(prop);  // type, handle type, location {type, id}
  note(("hipMemGetAllocationGranularity(device " + std::to_string(fields[3]) + ", " +
        (option == 0 ? "minimum" : "recommended") + ")")
           .c_str());
  if (envInt("FAKE_HIP_NO_VMM", 0) != 0) return 801;  // hipErrorNotSupported
  *granularity = option == 0 ? 4096 : 2 << 20;
  return 0;
}
int hipMemAddressReserve(void** base, size_t bytes, size_t, void*, unsigned long long) {
  note("hipMemAddressReserve");
  void* mapped =
      mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapped == MAP_FAILED) return 2;
  *base = mapped;
  return 0;
}
int hipMemAddressFree(void* base, size_t bytes) {
  note("hipMemAddressFree");
  return munmap(base, bytes) == 0 ? 0 : 1;
}
int hipMemCreate(void** handle, size_t bytes, const void* prop, unsigned long long) {
  const int* fields = static_cast<const int*>(prop);
  note(("hipMemCreate(type " + std::to_string(fields[0]) + ", handle type " +
        std::to_string(fields[1]) + ", device " + std::to_string(fields[3]) + ")")
           .c_str());
  int fd = memfd_create("fake-hip-physical", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) return 2;
  *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(fd) + 1);
  return 0;
}
static int fdOf(void* handle) { return static_cast<int>(reinterpret_cast<uintptr_t>(handle) - 1); }
int hipMemRelease(void* handle) {
  note("hipMemRelease");
  return close(fdOf(handle)) == 0 ? 0 : 400;
}
int hipMemExportToShareableHandle(void* shareable, void* handle, int type, unsigned long long) {
  note(("hipMemExportToShareableHandle(type " + std::to_string(type) + ")").c_str());
  *static_cast<int*>(shareable) = fcntl(fdOf(handle), F_DUPFD_CLOEXEC, 0);
  return 0;
}
int hipMemImportFromShareableHandle(void** handle, void* osHandle, int type) {
  note(("hipMemImportFromShareableHandle(type " + std::to_string(type) + ")").c_str());
  int fd = fcntl(static_cast<int>(reinterpret_cast<intptr_t>(osHandle)), F_DUPFD_CLOEXEC, 0);
  *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(fd) + 1);
  return 0;
}
int hipMemMap(void* address, size_t bytes, size_t offset, void* handle, unsigned long long) {
  note("hipMemMap");
  void* mapped = mmap(address, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, fdOf(handle),
                      static_cast<off_t>(offset));
  return mapped == MAP_FAILED ? 1 : 0;
}
int hipMemUnmap(void* address, size_t bytes) {
  note("hipMemUnmap");
  void* reserved = mmap(address, bytes, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  return reserved == MAP_FAILED ? 1 : 0;
}
// Every descriptor is noted; the pages get the union of the access given (one process).
int hipMemSetAccess(void* address, size_t bytes, const void* desc, size_t count) {
  const int* fields = static_cast<const int*>(desc);  // {location {type, id}, flags} each
  std::string text = "hipMemSetAccess(";
  int flags = 0;
  for (size_t i = 0; i < count; ++i) {
    text += (i ? ", device " : "device ") + std::to_string(fields[3 * i + 1]) + " flags " +
            std::to_string(fields[3 * i + 2]);
    flags |= fields[3 * i + 2];
  }
  note((text + ")").c_str());
  int protection = (flags & 1 ? PROT_READ : 0) | (flags & 2 ? PROT_WRITE : 0);
  return mprotect(address, bytes, protection) == 0 ? 0 : 1;
}
int hipFree(void* pointer) {
  note("hipFree");
  {
    std::lock_guard<std::recursive_mutex> lock(callMutex);
    allocations.erase(pointer);
  }
  std::free(pointer);
  return 0;
}
int hipMemGetAddressRange(void** base, size_t* bytes, void* pointer) {
  note("hipMemGetAddressRange");
  std::lock_guard<std::recursive_mutex> lock(callMutex);
  auto it = allocations.upper_bound(pointer);
  if (it == allocations.begin()) return 1;
  --it;
  if (static_cast<char*>(pointer) >= static_cast<char*>(it->first) + it->second) return 1;
  *base = it->first;
  *bytes = it->second;
  return 0;
}
// IPC handles of the double: "fakeipc" and the allocation's address (opened in the same process,
// as a unit test can).
struct FakeIpcHandle {
  char reserved[64];
};
int hipIpcGetMemHandle(FakeIpcHandle* handle, void* pointer) {
  note("hipIpcGetMemHandle");
  std::memset(handle->reserved, 0, sizeof handle->reserved);
  std::memcpy(handle->reserved, "fakeipc", 8);
  std::memcpy(handle->reserved + 8, &pointer, sizeof pointer);
  return 0;
}
int hipIpcOpenMemHandle(void** pointer, FakeIpcHandle handle, unsigned flags) {
  note(("hipIpcOpenMemHandle(flags " + std::to_string(flags) + ")").c_str());
  if (std::memcmp(handle.reserved, "fakeipc", 8) != 0) return 400;
  std::memcpy(pointer, handle.reserved + 8, sizeof *pointer);
  return 0;
}
int hipIpcCloseMemHandle(void*) {
  note("hipIpcCloseMemHandle");
  return 0;
}
int hipHostMalloc(void** pointer, size_t bytes, unsigned) {
  *pointer = std::malloc(bytes);
  return 0;
}
int hipHostFree(void* pointer) {
  std::free(pointer);
  return 0;
}
// Registered host memory is mapped at another address, as HIP documents it may be:
// kFakeRegisteredOffset above the host's. FAKE_HIP_REGISTER_ERROR makes registration fail.
constexpr uintptr_t kFakeRegisteredOffset = uintptr_t(1) << 44;
int hipHostRegister(void*, size_t bytes, unsigned flags) {
  std::string text =
      "hipHostRegister(" + std::to_string(bytes) + ", flags " + std::to_string(flags) + ")";
  note(text.c_str());
  return envInt("FAKE_HIP_REGISTER_ERROR", 0);
}
int hipHostGetDevicePointer(void** device, void* host, unsigned) {
  note("hipHostGetDevicePointer");
  *device = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(host) + kFakeRegisteredOffset);
  return 0;
}
int hipHostUnregister(void*) {
  note("hipHostUnregister");
  return 0;
}
int hipMallocManaged(void** pointer, size_t bytes, unsigned flags) {
  std::string text = "hipMallocManaged(flags " + std::to_string(flags) + ")";
  note(text.c_str());
  *pointer = std::malloc(bytes);
  return 0;
}
int hipMemPrefetchAsync(const void*, size_t bytes, int device, void* stream) {
  std::string text =
      "hipMemPrefetchAsync(" + std::to_string(bytes) + " to " + std::to_string(device) + ")";
  noteOn(text.c_str(), stream);
  return 0;
}
int hipMemAdvise(const void*, size_t bytes, int advice, int device) {
  std::string text = "hipMemAdvise(" + std::to_string(bytes) + ", advice " +
                     std::to_string(advice) + ", device " + std::to_string(device) + ")";
  note(text.c_str());
  return 0;
}
int hipMemGetInfo(size_t* freeBytes, size_t* total) {
  *freeBytes = 1;
  *total = 2;
  return 0;
}
int hipMemcpy(void* destination, const void* source, size_t bytes, int kind) {
  note(kind == 4 ? "hipMemcpy(default)" : "hipMemcpy(other)");
  std::memmove(destination, source, bytes);
  return 0;
}
int hipMemcpyAsync(void* destination, const void* source, size_t bytes, int kind, void* stream) {
  noteOn(kind == 4 ? "hipMemcpyAsync" : "hipMemcpyAsync(other kind)", stream);
  std::memmove(destination, source, bytes);
  return 0;
}
int hipMemcpy2DAsync(void*, size_t, const void*, size_t, size_t, size_t, int, void* stream) {
  noteOn("hipMemcpy2DAsync", stream);
  return 0;
}
int hipMemsetD8Async(void*, unsigned char, size_t, void* stream) {
  noteOn("hipMemsetD8Async", stream);
  return 0;
}
int hipMemsetD16Async(void*, unsigned short, size_t, void* stream) {
  noteOn("hipMemsetD16Async", stream);
  return 0;
}
int hipMemsetD32Async(void*, int, size_t, void* stream) {
  noteOn("hipMemsetD32Async", stream);
  return 0;
}
int hipModuleLoadData(void** module, const void* image) {
  note("hipModuleLoadData");
  const auto* bytes = static_cast<const uint8_t*>(image);
  bool elf = std::memcmp(bytes, "\x7f" "ELF", 4) == 0;
  lastImage = elf ? "elf machine=" + std::to_string(bytes[18] | (bytes[19] << 8)) +
                        " abi=" + std::to_string(bytes[8])
                  : "not an AMD GPU ELF";
  int error = envInt("FAKE_HIP_LOAD_ERROR", 0);
  if (error != 0) return error;
  if (!elf) return 200;  // hipErrorInvalidImage
  *module = lastModule = new FakeModule;
  return 0;
}
int hipModuleUnload(void* module) {
  note("hipModuleUnload");
  if (module == lastModule) lastModule = nullptr;
  delete static_cast<FakeModule*>(module);
  return 0;
}
int hipModuleGetFunction(void** function, void* module, const char* name) {
  note((std::string("hipModuleGetFunction(") + name + ")").c_str());
  auto* m = static_cast<FakeModule*>(module);
  int& slot = m->functions[name];
  *function = &slot;
  return 0;
}
int hipModuleGetGlobal(void** address, size_t* bytes, void* module, const char* name) {
  note((std::string("hipModuleGetGlobal(") + name + ")").c_str());
  std::vector<uint8_t>& storage = static_cast<FakeModule*>(module)->globals[name];
  storage.resize(256);
  *address = storage.data();
  *bytes = storage.size();
  return 0;
}
int hipModuleLaunchKernel(void* function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, void* stream, void** params,
                          void** extra) {
  noteOn("hipModuleLaunchKernel", stream);
  if (launchHook != nullptr && lastModule != nullptr)
    for (auto& [name, slot] : lastModule->functions)
      if (&slot == function) launchHook(name.c_str(), params, launchHookContext);
  std::ostringstream out;
  out << "grid " << gx << "," << gy << "," << gz << " block " << bx << "," << by << "," << bz
      << " shared " << shared << " stream " << (stream ? "lane" : "null") << " extra "
      << (extra ? "set" : "null") << " params";
  const char* sizes = std::getenv("FAKE_HIP_PARAM_SIZES");
  std::stringstream list(sizes ? sizes : "");
  std::string size;
  for (int i = 0; std::getline(list, size, ','); ++i) {
    out << " [";
    const auto* bytes = static_cast<const uint8_t*>(params[i]);
    for (int b = 0; b < std::atoi(size.c_str()); ++b) out << (b ? " " : "") << int(bytes[b]);
    out << "]";
  }
  lastLaunch = out.str();
  return envInt("FAKE_HIP_LAUNCH_ERROR", 0);
}
#ifdef FAKE_HIP_ROCM6
int hipModuleLaunchCooperativeKernel(void*, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                     unsigned by, unsigned bz, unsigned shared, void* stream,
                                     void**) {
  noteOn("hipModuleLaunchCooperativeKernel", stream);
  std::ostringstream out;
  out << "cooperative grid " << gx << "," << gy << "," << gz << " block " << bx << "," << by << ","
      << bz << " shared " << shared;
  lastLaunch = out.str();
  return envInt("FAKE_HIP_LAUNCH_ERROR", 0);
}
#endif
// A kernel of 40 VGPRs, 16 bytes of scratch, 1040 bytes of LDS, at most 256 threads.
int hipFuncGetAttribute(int* value, int attribute, void*) {
  switch (attribute) {
    case 0: *value = 256; return 0;
    case 1: *value = 1040; return 0;
    case 3: *value = 16; return 0;
    case 4: *value = 40; return 0;
    default: return 1;
  }
}
}
