#include "core/ipc.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "core/memory.h"
#include "core/memory_pool.h"
#include "core/platform.h"
#include "core/stream.h"
#include "support/log.h"

namespace rocuda::core {
namespace {

constexpr uint32_t kMemoryMagic = 0x4d434452;  // "RDCM"
constexpr uint32_t kEventMagic = 0x45434452;   // "RDCE"
constexpr uint32_t kPoolMagic = 0x50434452;     // "RDCP"
constexpr uint32_t kPoolPointerMagic = 0x41434452;  // "RDCA"
constexpr uint32_t kWireVersion = 1;

// What a handle carries: enough for another process to find the exporter's descriptor and to
// tell it from a later one with the same number (inode and device of the file).
struct WireHandle {
  uint32_t magic;
  uint32_t version;
  int32_t pid;
  int32_t fd;
  uint64_t inode;
  uint64_t device;
  uint64_t bytes;   // the allocation's size
  uint64_t mapped;  // bytes the descriptor covers (whole pages)
  uint64_t reserved[2];
};
static_assert(sizeof(WireHandle) == kIpcHandleBytes);

std::string osError(const std::string& what) { return what + ": " + std::strerror(errno); }

Result<IpcHandle> encode(uint32_t magic, int fd, uint64_t bytes, uint64_t mapped) {
  struct stat info {};
  if (fstat(fd, &info) != 0) return makeError(ErrorCode::MapFailed, osError("fstat"));
  WireHandle wire{magic, kWireVersion, static_cast<int32_t>(getpid()), fd,
                  static_cast<uint64_t>(info.st_ino), static_cast<uint64_t>(info.st_dev),
                  bytes, mapped, {0, 0}};
  IpcHandle handle{};
  std::memcpy(handle.data(), &wire, sizeof wire);
  return handle;
}

Result<WireHandle> decode(const IpcHandle& handle, uint32_t magic) {
  WireHandle wire;
  std::memcpy(&wire, handle.data(), sizeof wire);
  if (wire.magic != magic || wire.version != kWireVersion || wire.pid <= 0 || wire.fd < 0 ||
      wire.mapped < wire.bytes)
    return makeError(ErrorCode::InvalidHandle, "not an IPC handle made by Rocuda");
  return wire;
}

// The exporter's descriptor, reopened through /proc (same user, as CUDA IPC requires). A
// process that exited, or a descriptor now naming another file, is a handle gone stale.
Result<int> openPeerDescriptor(const WireHandle& wire) {
  std::string path = "/proc/" + std::to_string(wire.pid) + "/fd/" + std::to_string(wire.fd);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return makeError(ErrorCode::MapFailed,
                     osError("cannot open " + path + " (has the exporting process exited?)"));
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<uint64_t>(info.st_ino) != wire.inode ||
      static_cast<uint64_t>(info.st_dev) != wire.device ||
      static_cast<uint64_t>(info.st_size) < wire.mapped) {
    ::close(fd);
    return makeError(ErrorCode::MapFailed,
                     "the exported memory no longer exists (freed in the exporting process)");
  }
  return fd;
}

bool canShare(Context& context) {
  const backends::DeviceDescription& device = context.device().description();
  return device.sharesMemoryBetweenProcesses || device.ownIpcMemoryHandles;
}

bool backendHandles(Context& context) { return context.device().description().ownIpcMemoryHandles; }

// Memory opened from other processes: one mapping per (context, exporter's file, or the
// backend's own handle), counted.
struct OpenedKey {
  Context* context;
  int32_t pid;
  uint64_t inode, device;
  IpcHandle backendHandle;  // zeros for file descriptors
  bool operator<(const OpenedKey& o) const {
    return std::tie(context, pid, inode, device, backendHandle) <
           std::tie(o.context, o.pid, o.inode, o.device, o.backendHandle);
  }
};
struct Opened {
  OpenedKey key;
  backends::DeviceBackend* backend = nullptr;  // the device outlives the context
  size_t mapped = 0;                           // 0: opened by the backend's own handle
  unsigned references = 0;
};
struct OpenedTable {
  std::mutex mutex;
  std::map<OpenedKey, void*> byKey;
  std::map<void*, Opened> byPointer;
};
OpenedTable& opened() {
  static OpenedTable* table = new OpenedTable();  // used from atexit paths
  return *table;
}

}  // namespace

Result<IpcHandle> exportMemory(const void* pointer) {
  std::optional<Allocation> allocation = findAllocation(pointer);
  if (!allocation || allocation->kind != AllocationKind::Device || allocation->pool != nullptr ||
      allocation->mappedFrom != MappedFrom::None ||
      lookupHandle<Context>(allocation->context) == nullptr)
    return makeError(ErrorCode::InvalidValue,
                     "only device memory allocated by cuMemAlloc can be shared between processes");
  Context& context = *allocation->context;
  if (!canShare(context))
    return makeError(ErrorCode::NotSupported, "this device cannot share memory between processes");
  // The pages are copied when first shared: no queued work may write them meanwhile.
  (void)context.synchronize();
  void* base = reinterpret_cast<void*>(allocation->base);
  if (backendHandles(context)) return context.device().backend().exportIpcMemory(base);
  Result<backends::SharedAllocation> shared = context.device().backend().shareDevice(base);
  if (!shared) return shared.takeError();
  return encode(kMemoryMagic, shared->fd, allocation->size, shared->bytes);
}

namespace {
// A handle of the backend's own, opened once per context (its references counted).
Result<void*> openBackendHandle(Context& context, const IpcHandle& handle, unsigned flags) {
  OpenedTable& table = opened();
  std::lock_guard lock(table.mutex);
  OpenedKey key{&context, 0, 0, 0, handle};
  if (auto it = table.byKey.find(key); it != table.byKey.end()) {
    ++table.byPointer[it->second].references;
    return it->second;
  }
  backends::DeviceBackend& backend = context.device().backend();
  auto memory = backend.openIpcMemory(handle, flags);
  if (!memory) return memory.error();
  registerMapped(context, memory->pointer, memory->bytes, MappedFrom::Ipc);
  table.byKey[key] = memory->pointer;
  table.byPointer[memory->pointer] = Opened{key, &backend, 0, 1};
  return memory->pointer;
}
}  // namespace

Result<void*> openMemory(Context& context, const IpcHandle& handle, unsigned flags) {
  if (backendHandles(context)) return openBackendHandle(context, handle, flags);
  Result<WireHandle> wire = decode(handle, kMemoryMagic);
  if (!wire) return wire.takeError();
  if (wire->pid == static_cast<int32_t>(getpid()))
    return makeError(ErrorCode::InvalidContext,
                     "an IPC memory handle cannot be opened in the process that exported it");
  if (!canShare(context))
    return makeError(ErrorCode::NotSupported, "this device cannot share memory between processes");
  OpenedTable& table = opened();
  std::lock_guard lock(table.mutex);
  OpenedKey key{&context, wire->pid, wire->inode, wire->device, {}};
  if (auto it = table.byKey.find(key); it != table.byKey.end()) {
    ++table.byPointer[it->second].references;
    return it->second;
  }
  Result<int> fd = openPeerDescriptor(*wire);
  if (!fd) return fd.takeError();
  Result<void*> mapped = context.device().backend().mapShared(*fd, 0, wire->mapped);
  ::close(*fd);  // the mapping keeps the memory
  if (!mapped) return mapped.takeError();
  registerMapped(context, *mapped, wire->bytes, MappedFrom::Ipc);
  table.byKey[key] = *mapped;
  table.byPointer[*mapped] = Opened{key, &context.device().backend(), wire->mapped, 1};
  return *mapped;
}

Status closeMemory(const void* pointer) {
  OpenedTable& table = opened();
  std::lock_guard lock(table.mutex);
  auto it = table.byPointer.find(const_cast<void*>(pointer));
  if (it == table.byPointer.end())
    return makeError(ErrorCode::InvalidValue, "pointer was not returned by cuIpcOpenMemHandle");
  if (--it->second.references != 0) return Status::success();
  Opened entry = it->second;
  table.byPointer.erase(it);
  table.byKey.erase(entry.key);
  unregisterMapped(const_cast<void*>(pointer), MappedFrom::Ipc);
  if (entry.mapped == 0)
    entry.backend->closeIpcMemory(const_cast<void*>(pointer));
  else
    entry.backend->unmapShared(const_cast<void*>(pointer), entry.mapped);
  return Status::success();
}

// ---- Events ----

struct InterprocessEvent::Page {
  uint64_t magic;
  std::atomic<uint64_t> recorded;
  std::atomic<uint64_t> completed;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be address-free");

namespace {
constexpr size_t kEventPageBytes = 4096;
}

Result<std::shared_ptr<InterprocessEvent>> InterprocessEvent::create() {
  int fd = memfd_create("rocuda-interprocess-event", MFD_CLOEXEC);
  if (fd < 0) return makeError(ErrorCode::OutOfMemory, osError("memfd_create"));
  void* memory = MAP_FAILED;
  if (ftruncate(fd, kEventPageBytes) == 0)
    memory = mmap(nullptr, kEventPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) {
    Error error = makeError(ErrorCode::OutOfMemory, osError("interprocess event page"));
    ::close(fd);
    return error;
  }
  auto* page = new (memory) Page{kEventMagic, {0}, {0}};
  return std::shared_ptr<InterprocessEvent>(new InterprocessEvent(fd, page));
}

Result<std::shared_ptr<InterprocessEvent>> InterprocessEvent::open(const IpcHandle& handle) {
  Result<WireHandle> wire = decode(handle, kEventMagic);
  if (!wire) return wire.takeError();
  Result<int> fd = openPeerDescriptor(*wire);
  if (!fd) return fd.takeError();
  void* memory = mmap(nullptr, kEventPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
  ::close(*fd);
  if (memory == MAP_FAILED) return makeError(ErrorCode::MapFailed, osError("mmap"));
  auto* page = static_cast<Page*>(memory);
  if (page->magic != kEventMagic) {
    munmap(memory, kEventPageBytes);
    return makeError(ErrorCode::InvalidHandle, "the handle names no interprocess event");
  }
  return std::shared_ptr<InterprocessEvent>(new InterprocessEvent(-1, page));
}

InterprocessEvent::~InterprocessEvent() {
  munmap(page_, kEventPageBytes);
  if (fd_ >= 0) ::close(fd_);
}

IpcHandle InterprocessEvent::handle() const {
  Result<IpcHandle> handle = encode(kEventMagic, fd_, kEventPageBytes, kEventPageBytes);
  return handle ? *handle : IpcHandle{};
}

uint64_t InterprocessEvent::beginRecord() { return page_->recorded.fetch_add(1) + 1; }

void InterprocessEvent::finishRecord(uint64_t record) {
  uint64_t seen = page_->completed.load();
  while (seen < record && !page_->completed.compare_exchange_weak(seen, record)) {
  }
}

uint64_t InterprocessEvent::latestRecord() const { return page_->recorded.load(); }

bool InterprocessEvent::reached(uint64_t record) const { return page_->completed.load() >= record; }

bool InterprocessEvent::wait(uint64_t record, const std::function<bool()>& cancelled) const {
  // The other process cannot signal us: poll, yielding at first, then sleeping a little longer
  // each time (up to 200 us) so a long wait costs no core.
  auto pause = std::chrono::microseconds(0);
  for (unsigned round = 0; !reached(record); ++round) {
    if (cancelled && cancelled()) return false;
    if (round < 64) {
      std::this_thread::yield();
      continue;
    }
    pause = std::min(pause + std::chrono::microseconds(10), std::chrono::microseconds(200));
    std::this_thread::sleep_for(pause);
  }
  return true;
}

Result<IpcHandle> exportEvent(Event& event) {
  constexpr unsigned kNeeded = 2u | 4u;  // CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS
  if ((event.flags() & kNeeded) != kNeeded)
    return makeError(ErrorCode::InvalidValue,
                     "the event was not created with CU_EVENT_INTERPROCESS | "
                     "CU_EVENT_DISABLE_TIMING");
  Result<std::shared_ptr<InterprocessEvent>> state = event.interprocessState();
  if (!state) return state.takeError();
  IpcHandle handle = (*state)->handle();
  if (handle == IpcHandle{})
    return makeError(ErrorCode::MapFailed, "an interprocess event opened from another process "
                                           "cannot be exported again");
  return handle;
}

Result<Event*> openEvent(Context& context, const IpcHandle& handle) {
  Result<std::shared_ptr<InterprocessEvent>> state = InterprocessEvent::open(handle);
  if (!state) return state.takeError();
  Result<Event*> event = context.createEvent(2u | 4u);
  if (!event) return event.takeError();
  (*event)->adoptInterprocess(std::move(*state));
  return *event;
}

Status waitInterprocessEvent(Stream& stream, std::shared_ptr<InterprocessEvent> state) {
  uint64_t record = state->latestRecord();
  if (state->reached(record)) return Status::success();
  // The wait owns the state: the event may be destroyed before the wait runs.
  Stream* waiter = &stream;
  auto completion = stream.context().enqueue(
      stream, "wait for interprocess event", [state, record, waiter]() -> Status {
        if (!state->wait(record, [waiter] { return waiter->stopping(); }))
          return makeError(ErrorCode::NotReady, "stream destroyed while waiting for an event");
        return Status::success();
      });
  return completion ? Status::success() : Status(completion.error());
}

// ---- Memory pools ----

namespace {

// What a pool's descriptor holds: the exporting process and the pool's number there.
struct PoolRecord {
  uint32_t magic;
  int32_t pid;
  uint64_t id;
  int32_t device;  // the exporting pool's device ordinal, the imported pool's
  // A pool of page-locked host memory on this host NUMA node; -1: device memory.
  int32_t hostNumaNode;
};

struct PoolTable {
  std::mutex mutex;
  uint64_t nextId = 1;
  std::map<MemoryPool*, uint64_t> localIds;        // pools of this process, once shared
  std::map<MemoryPool*, PoolRecord> importedFrom;  // pools standing for another process's
};
PoolTable& pools() {
  static PoolTable* table = new PoolTable();
  return *table;
}

constexpr unsigned kPosixFdHandle = 1;  // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR

uint64_t localPoolId(MemoryPool* pool) {
  PoolTable& table = pools();
  std::lock_guard lock(table.mutex);
  auto [it, added] = table.localIds.try_emplace(pool, table.nextId);
  if (added) ++table.nextId;
  return it->second;
}

}  // namespace

Result<int> exportPool(MemoryPool& pool) {
  if (pool.imported() || (pool.handleTypes() & kPosixFdHandle) == 0)
    return makeError(ErrorCode::InvalidValue,
                     "the pool was not created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR");
  PoolRecord record{kPoolMagic, static_cast<int32_t>(getpid()), localPoolId(&pool),
                    pool.device().ordinal(),
                    pool.memory() == PoolMemory::PinnedHost ? pool.location().id : -1};
  int fd = memfd_create("rocuda-memory-pool", MFD_CLOEXEC);
  if (fd < 0) return makeError(ErrorCode::OutOfMemory, osError("memfd_create"));
  if (pwrite(fd, &record, sizeof record, 0) != static_cast<ssize_t>(sizeof record)) {
    Error error = makeError(ErrorCode::OutOfMemory, osError("pwrite"));
    ::close(fd);
    return error;
  }
  return fd;
}

Result<MemoryPool*> importPool(int fd) {
  PoolRecord record{};
  if (fd < 0 || pread(fd, &record, sizeof record, 0) != static_cast<ssize_t>(sizeof record) ||
      record.magic != kPoolMagic)
    return makeError(ErrorCode::InvalidValue, "the handle names no exported memory pool");
  Device* device = Platform::instance().device(record.device);
  if (device == nullptr)
    return makeError(ErrorCode::InvalidDevice,
                     "the pool's device " + std::to_string(record.device) + " is not visible here");
  auto* pool = record.hostNumaNode >= 0
                   ? new MemoryPool(*device, false, 0, PoolMemory::PinnedHost,
                                    {MemoryLocation::Type::HostNuma, record.hostNumaNode})
                   : new MemoryPool(*device, false, 0);
  pool->setHandleTypes(kPosixFdHandle);
  pool->setImported();
  PoolTable& table = pools();
  std::lock_guard lock(table.mutex);
  table.importedFrom[pool] = record;
  return pool;
}

Result<IpcHandle> exportPoolPointer(const void* pointer) {
  std::optional<Allocation> allocation = findAllocation(pointer);
  if (!allocation ||
      (allocation->kind != AllocationKind::Device && allocation->kind != AllocationKind::Host) ||
      allocation->pool == nullptr || allocation->base != reinterpret_cast<uintptr_t>(pointer) ||
      lookupHandle<MemoryPool>(allocation->pool) == nullptr ||
      lookupHandle<Context>(allocation->context) == nullptr ||
      (allocation->pool->handleTypes() & kPosixFdHandle) == 0)
    return makeError(ErrorCode::InvalidValue,
                     "not the start of an allocation from a pool shareable between processes");
  Context& context = *allocation->context;
  (void)context.synchronize();  // pages are copied when first shared
  // The pool's device made the block (a host pool's serves every device's streams).
  Result<backends::SharedAllocation> shared =
      allocation->pool->device().backend().shareDevice(reinterpret_cast<void*>(allocation->base));
  if (!shared) return shared.takeError();
  Result<IpcHandle> data = encode(kPoolPointerMagic, shared->fd, allocation->size, shared->bytes);
  if (!data) return data;
  WireHandle wire;
  std::memcpy(&wire, data->data(), sizeof wire);
  wire.reserved[0] = localPoolId(allocation->pool);
  std::memcpy(data->data(), &wire, sizeof wire);
  return data;
}

Result<void*> importPoolPointer(Context& context, MemoryPool& pool, const IpcHandle& data) {
  Result<WireHandle> wire = decode(data, kPoolPointerMagic);
  if (!wire) return makeError(ErrorCode::InvalidValue, wire.error().message);
  {
    PoolTable& table = pools();
    std::lock_guard lock(table.mutex);
    auto it = table.importedFrom.find(&pool);
    if (it == table.importedFrom.end())
      return makeError(ErrorCode::InvalidValue, "the pool was not imported from another process");
    if (it->second.pid != wire->pid || it->second.id != wire->reserved[0])
      return makeError(ErrorCode::InvalidValue, "the pointer belongs to another memory pool");
  }
  Result<int> fd = openPeerDescriptor(*wire);
  if (!fd) return makeError(ErrorCode::InvalidValue, fd.error().message);
  // A host pool's pages are host memory of its device: mapped into that device's contexts.
  if (pool.memory() == PoolMemory::PinnedHost && &pool.device() != &context.device()) {
    ::close(*fd);
    return makeError(ErrorCode::NotSupported,
                     "a host memory pool's pointers are imported into its device's context");
  }
  Result<void*> mapped = context.device().backend().mapShared(*fd, 0, wire->mapped);
  ::close(*fd);
  if (!mapped) return makeError(ErrorCode::OutOfMemory, mapped.error().message);
  registerMapped(context, *mapped, wire->bytes, MappedFrom::PoolImport);
  return *mapped;
}

void forgetPool(MemoryPool* pool) {
  PoolTable& table = pools();
  std::lock_guard lock(table.mutex);
  table.localIds.erase(pool);
  table.importedFrom.erase(pool);
}

// ---- External memory ----

ExternalMemory::ExternalMemory(Context& context, int fd, uint64_t bytes)
    : Object(ObjectKind::ExternalMemory), context_(context), fd_(fd), bytes_(bytes) {}

ExternalMemory::~ExternalMemory() { ::close(fd_); }

Result<ExternalMemory*> ExternalMemory::importFd(Context& context, int fd, uint64_t bytes) {
  if (!canShare(context))
    return makeError(ErrorCode::NotSupported, "this device cannot map external memory");
  if (fd < 0) return makeError(ErrorCode::InvalidValue, "the file descriptor is negative");
  if (bytes == 0) return makeError(ErrorCode::InvalidValue, "size is 0");
  struct stat info {};
  if (fstat(fd, &info) != 0)
    return makeError(ErrorCode::InvalidHandle, osError("not an open file descriptor (fstat)"));
  // memfd, shm and dma-buf descriptors report their size through lseek (dma-bufs have no
  // st_size); anything smaller than the claimed size cannot back it.
  off_t end = lseek(fd, 0, SEEK_END);
  if (end < 0 || static_cast<uint64_t>(end) < bytes)
    return makeError(ErrorCode::InvalidValue,
                     "the file descriptor holds " + std::to_string(end < 0 ? 0 : end) +
                         " bytes, fewer than the " + std::to_string(bytes) + " imported");
  return new ExternalMemory(context, fd, bytes);
}

Status ExternalMemory::destroy(ExternalMemory* memory) {
  delete memory;  // buffers mapped from it stay valid until cuMemFree, as mappings do
  return Status::success();
}

Result<void*> ExternalMemory::mapBuffer(uint64_t offset, uint64_t bytes) {
  if (bytes == 0 || offset > bytes_ || bytes > bytes_ - offset)
    return makeError(ErrorCode::InvalidValue, "the buffer does not lie inside the external memory");
  if (lookupHandle<Context>(&context_) == nullptr)
    return makeError(ErrorCode::InvalidContext, "the context that imported the memory is gone");
  Result<void*> mapped = context_.device().backend().mapShared(fd_, offset, bytes);
  if (!mapped) return mapped.takeError();
  registerMapped(context_, *mapped, bytes, MappedFrom::ExternalMemory);
  return *mapped;
}

}  // namespace rocuda::core
