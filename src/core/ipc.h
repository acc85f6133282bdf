// Sharing between processes: CUDA IPC (device memory and events handed to another process as a
// 64-byte handle) and external memory (a file descriptor imported as device memory). Both rest on
// file descriptors the backend can map (DeviceBackend::shareDevice / mapShared): the handle names
// the exporting process and its descriptor, which the importer opens through /proc/<pid>/fd.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/object.h"
#include "support/result.h"

namespace rocuda::core {

class Context;
class Device;
class Event;
class MemoryPool;
class Stream;

inline constexpr size_t kIpcHandleBytes = 64;
using IpcHandle = std::array<unsigned char, kIpcHandleBytes>;

// ---- Device memory ----
// A handle to the whole allocation containing `pointer`, which must be device memory from
// cuMemAlloc (InvalidValue otherwise). The first export makes the allocation shareable in place;
// work of its context is drained first, since pages are copied.
Result<IpcHandle> exportMemory(const void* pointer);
// Maps the allocation named by `handle` into `context` (InvalidContext for a handle exported by
// this very process, MapFailed when the exporter or its allocation is gone). Opening the same
// handle again in the same context returns the same pointer and counts a reference.
// `flags`: cuIpcOpenMemHandle's (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), for backends whose own
// handles take them. On a device whose IPC handles are the backend's own
// (DeviceDescription::ownIpcMemoryHandles), the handle is the backend's.
Result<void*> openMemory(Context& context, const IpcHandle& handle, unsigned flags = 0);
// Drops one reference of a pointer openMemory returned; the last one unmaps it.
Status closeMemory(const void* pointer);

// ---- Events ----
// The completion state of an interprocess event, in one shared page: records made in any
// process that holds it count, and every process sees their completion. Records are numbered;
// `completed` is the highest finished one, so an event is done when its latest record is.
class InterprocessEvent {
 public:
  static Result<std::shared_ptr<InterprocessEvent>> create();
  static Result<std::shared_ptr<InterprocessEvent>> open(const IpcHandle& handle);
  ~InterprocessEvent();
  InterprocessEvent(const InterprocessEvent&) = delete;
  InterprocessEvent& operator=(const InterprocessEvent&) = delete;

  IpcHandle handle() const;
  uint64_t beginRecord();              // the number of a new record
  void finishRecord(uint64_t record);  // its work is done
  uint64_t latestRecord() const;
  bool reached(uint64_t record) const;
  // Blocks until `record` finished; false when `cancelled` said to give up first.
  bool wait(uint64_t record, const std::function<bool()>& cancelled = {}) const;

 private:
  struct Page;
  InterprocessEvent(int fd, Page* page) : fd_(fd), page_(page) {}
  int fd_;  // the exporter's memfd, kept open for importers; -1 in importers
  Page* page_;
};

// A handle for `event`, which must have been created with CU_EVENT_INTERPROCESS and
// CU_EVENT_DISABLE_TIMING (InvalidValue otherwise).
Result<IpcHandle> exportEvent(Event& event);
// A new event of `context` sharing the state `handle` names (timing disabled).
Result<Event*> openEvent(Context& context, const IpcHandle& handle);
// cuStreamWaitEvent on an interprocess event: `stream` waits for the event's latest record,
// wherever it was made.
Status waitInterprocessEvent(Stream& stream, std::shared_ptr<InterprocessEvent> state);

// ---- Memory pools shared between processes (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ----
// A new descriptor naming `pool` for other processes (the caller owns it). InvalidValue unless
// the pool was created with POSIX file descriptor handles.
Result<int> exportPool(MemoryPool& pool);
// A pool standing for the pool `fd` names, of the same device (the descriptor stays the
// caller's; no context is needed); nothing can be allocated from it, only pointers imported.
Result<MemoryPool*> importPool(int fd);
// Data naming the allocation at `pointer` (the start of an allocation from a shareable pool).
Result<IpcHandle> exportPoolPointer(const void* pointer);
// Maps the allocation `data` names, which must come from the pool `pool` was imported from;
// cuMemFree / cuMemFreeAsync unmap it.
Result<void*> importPoolPointer(Context& context, MemoryPool& pool, const IpcHandle& data);
// cuMemPoolDestroy: the pool's identity for sharing goes with it.
void forgetPool(MemoryPool* pool);

// ---- External memory (cuImportExternalMemory) ----
class ExternalMemory : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::ExternalMemory;
  // Takes ownership of `fd` on success only (as CUDA does); `bytes` must not exceed what the
  // descriptor holds.
  static Result<ExternalMemory*> importFd(Context& context, int fd, uint64_t bytes);
  static Status destroy(ExternalMemory* memory);
  ~ExternalMemory() override;

  uint64_t size() const { return bytes_; }
  Context& context() { return context_; }
  // Device memory aliasing [offset, offset+bytes) of the external memory; cuMemFree unmaps it.
  Result<void*> mapBuffer(uint64_t offset, uint64_t bytes);

 private:
  ExternalMemory(Context& context, int fd, uint64_t bytes);
  Context& context_;
  int fd_;
  uint64_t bytes_;
};

}  // namespace rocuda::core
