// A context: one device's address space and work queues for the host threads that make it
// current. Owns its streams (including the legacy and per-thread default streams), events and
// modules; holds the sticky error left by a failed kernel.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/device_backend.h"
#include "compiler/compiler.h"
#include "core/object.h"
#include "core/stream.h"
#include "support/result.h"
#include "support/short_lock.h"

namespace rocuda::core {

class Device;
class GreenContext;

// The limits of cuCtxSetLimit, in CUlimit order.
enum class ContextLimit : uint8_t {
  StackSize = 0, PrintfFifoSize = 1, MallocHeapSize = 2, DevRuntimeSyncDepth = 3,
  DevRuntimePendingLaunchCount = 4, MaxL2FetchGranularity = 5, PersistingL2CacheSize = 6,
  ShmemSize = 7, CigEnabled = 8, CigShmemFallbackEnabled = 9, Count
};

class Context : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Context;
  Context(Device& device, unsigned flags, bool primary);
  ~Context() override;

  Device& device() { return device_; }
  unsigned flags() const { return flags_; }
  void setFlags(unsigned flags) { flags_ = flags; }
  bool isPrimary() const { return primary_; }
  uint64_t id() const { return id_; }

  // The NULL/legacy default stream, and this host thread's per-thread default stream.
  Stream& legacyStream();
  Stream& perThreadStream();
  // `green`: the green context the stream belongs to (its kernels run on its share).
  Result<Stream*> createStream(unsigned flags, int priority, GreenContext* green = nullptr);
  // The streams of the context that belong to `green`, created ones and retired ones.
  std::vector<Stream*> streamsOf(const GreenContext& green);
  Status destroyStream(Stream* stream);
  Result<Event*> createEvent(unsigned flags);
  Status destroyEvent(Event* event);

  // Queue work on `stream` with CUDA's implicit ordering: the legacy stream waits for every
  // blocking stream of the context, and every blocking stream waits for the legacy stream.
  // An error when the operation is refused (the legacy stream while a blocking stream of the
  // context is capturing): nothing is queued then. On a capturing stream the operation is
  // recorded into the capture's graph instead of queued.
  // Work queued after a kernel failure completes at once with the context's sticky error,
  // unless `runsAfterFailure` (cuStreamAddCallback's callbacks, which are documented to run
  // exactly once and learn the error). `after`: more work it must wait for, on any stream.
  Result<CompletionPtr> enqueue(Stream& stream, std::string name, std::function<Status()> work,
                                bool runsAfterFailure = false,
                                std::vector<CompletionPtr> after = {});
  // The same for work that only issues device operations through the backend (a kernel, a copy,
  // a fill) and reads nothing back on the host: it may stay queued on the device after its
  // command returns (CommandKind::DeviceStep).
  Result<CompletionPtr> enqueueDeviceWork(Stream& stream, std::string name,
                                          std::function<Status()> work);

  // Captures in progress on the context's blocking streams (which the legacy stream would
  // implicitly depend on); invalidateBlockingCaptures() marks them invalid, true if any.
  std::vector<CaptureStatePtr> blockingCaptures();
  // The completion of the last work queued on each of the context's streams now.
  std::vector<CompletionPtr> queuedWork();
  bool invalidateBlockingCaptures();
  // What work on the legacy stream implicitly waits for: the last work of each blocking stream,
  // appended to `into`. False when a blocking stream captures (its capture invalidated, as
  // invalidateBlockingCaptures does). One pass under the lock: it runs at every legacy launch.
  bool appendBlockingTails(std::vector<CompletionPtr>& into);

  // Wait for every stream of the context; then the sticky error, if any.
  Status synchronize();
  // Wait for the work queued on every stream, as synchronize does, but without refusing while a
  // stream captures (what the calls that free memory need: a capturing stream queues nothing,
  // and in relaxed capture mode they are permitted).
  void drain();

  // cuDevicePrimaryCtxReset: the context as NVIDIA's reset leaves it, a new context for the
  // application. Queued work is drained; the streams and events the application created are
  // destroyed; limits return to their defaults and the sticky error is cleared, so a program
  // recovers from a failed kernel as cudaDeviceReset documents. The object itself (and the
  // default streams) stay, so handles cudart cached for the primary context remain valid.
  void reset();

  // Peer access (cuCtxEnablePeerAccess): the contexts, by id, whose memory this context's
  // kernels were allowed to reach. A reset or the context's destruction disables them all.
  bool peerAccessEnabled(const Context& peer) const;
  size_t peersEnabled() const;
  void setPeerAccess(Context& peer, bool enabled);

  // A kernel failure is sticky: every later call on the context reports it (as CUDA does).
  // True when this is the context's first failure (the one it reports).
  bool setStickyError(const Error& error);
  // A kernel, or device work queued with kernels, failed: sticky, reported as the fault it was
  // (an illegal or misaligned address, an assert) or else as a launch failure. The first fault
  // writes the core dump its settings ask for (core/coredump.h).
  void noteDeviceFailure(const Error& error);
  Status stickyError() const;
  // `work`'s result, or the sticky error without running it: what queued work does once a
  // kernel has failed.
  Status runUnlessFailed(const std::function<Status()>& work) const;

  // cuCtxRecordEvent: `event` completes once all work queued in the context now is done.
  // cuCtxWaitEvent: all work queued in the context from now waits for `event`'s latest record.
  // Both refuse a context with a stream capture in progress (StreamCaptureUnsupported).
  Status recordAllWork(Event& event);
  Status waitForEvent(const Event& event);

  uint64_t limit(ContextLimit which) const;
  // Device malloc's heap (LaunchConfig::mallocHeap); reset() frees its blocks.
  backends::DeviceMallocHeap& mallocHeap() { return mallocHeap_; }
  // CU_LIMIT_PRINTF_FIFO_SIZE and CU_LIMIT_MALLOC_HEAP_SIZE cannot change (InvalidValue) once a
  // kernel that uses printf, or malloc/free, has been launched (noteLaunch).
  Status setLimit(ContextLimit which, uint64_t value);
  void noteLaunch(const compiler::KernelInfo& kernel);

 private:
  // Each of the context's streams but the legacy one, live or retired, with the per-thread
  // default streams (the caller holds mutex_).
  template <class Visit>
  void forEachStream(const Visit& visit);
  std::vector<Stream*> allStreams();
  Result<CompletionPtr> enqueueCommand(Stream& stream, std::string name,
                                       std::function<Status()> work, bool runsAfterFailure,
                                       std::vector<CompletionPtr> after, CommandKind kind);
  // StreamCaptureUnsupported (saying `what`) while a stream of the context is capturing, whose
  // capture it invalidates: context-wide waits and records (cuCtxSynchronize, cuCtxRecordEvent,
  // cuCtxWaitEvent) "invalidate all the conflicting captures".
  Status refuseWhileCapturing(const char* what);
  // Removes the idle retired streams from retiredStreams_ (the caller destroys them unlocked).
  std::vector<std::unique_ptr<Stream>> takeIdleRetiredStreams();
  void setDefaultLimits();
  void disableAllPeers();

  Device& device_;
  unsigned flags_;
  bool primary_;
  uint64_t id_;
  mutable support::ShortLock mutex_;  // taken by the host and by stream workers in turn
  std::unique_ptr<Stream> legacy_;
  // Per-thread default streams, by support::ThreadIdentity serial (ids of exited threads are
  // reused by new ones); the owner's liveness says when a stream can be retired.
  struct PerThreadStream {
    std::shared_ptr<const std::atomic<bool>> ownerAlive;
    std::unique_ptr<Stream> stream;
  };
  std::unordered_map<uint64_t, PerThreadStream> perThread_;
  std::vector<std::unique_ptr<Stream>> streams_;
  // Streams destroyed while work was queued on them: their handles are gone, their work still
  // runs (and is waited for by context-wide synchronisation); freed once idle.
  std::vector<std::unique_ptr<Stream>> retiredStreams_;
  RecordStream records_{*this};              // cuCtxRecordEvent's
  EventWaits eventWaits_;                    // cuCtxWaitEvent's
  std::vector<std::unique_ptr<Event>> events_;
  std::map<uint64_t, backends::DeviceBackend*> peers_;  // enabled peer context id -> its device
  // Read without the lock at every launch; written under it.
  std::atomic<bool> sticky_{false};
  Error stickyError_;
  std::array<std::atomic<uint64_t>, static_cast<int>(ContextLimit::Count)> limits_{};
  backends::DeviceMallocHeap mallocHeap_;
  bool launchedPrintf_ = false, launchedMalloc_ = false;  // see setLimit
};

// StreamCaptureUnsupported (saying `what`) when one of `streams` captures, whose capture it
// invalidates: what context-wide records, waits and synchronisations answer ("invalidate all
// the conflicting captures").
Status refuseWhileCapturing(const std::vector<Stream*>& streams, const std::string& what);
// StreamCaptureUnsupported when `event` was last recorded in a capture still in progress: it
// stands for a node of that capture, which is invalidated too.
Status refuseEventOfOngoingCapture(const Event& event);

// The next id of the sequence contexts and green contexts share (cuCtxGetId, cuGreenCtxGetId).
uint64_t newContextId();

// The calling thread's context stack (cuCtxPush/Pop/SetCurrent/GetCurrent). An entry made
// current through a green context's CUcontext holds the primary context and the green context.
struct CurrentContext {
  Context* context = nullptr;
  GreenContext* green = nullptr;
};
Context* currentContext();
GreenContext* currentGreenContext();  // of the top entry; nullptr when it is not green
// Replaces the top (or pushes onto an empty stack); a null context pops the top.
void setCurrentContext(Context* context, GreenContext* green = nullptr);
void pushContext(Context* context, GreenContext* green = nullptr);
CurrentContext popContext();  // {} when empty
// Remove a destroyed context, or green context, from this thread's stack.
void forgetContext(Context* context);
void forgetGreenContext(GreenContext* green);

}  // namespace rocuda::core
