// Green contexts (cuGreenCtxCreate): a share of a device's multiprocessors under the device's
// primary context. Everything but where kernels run is the primary context's (memory, modules,
// events, the sticky error); kernels queued on a green context's streams occupy at most its
// multiprocessors at once (backends::LaunchConfig::multiprocessors). Its CUcontext
// (cuCtxFromGreenCtx) is a handle of its own, contextHandle(), which the driver API resolves to
// the primary context while the thread's context stack remembers the green context.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/object.h"
#include "core/stream.h"
#include "support/result.h"

namespace rocuda::core {

class Context;

// cuDevResourceGenerateDesc's descriptor: multiprocessors of one device, to provision a green
// context with. The driver API has no call that frees one; they live as long as the process.
class ResourceDescriptor : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::ResourceDescriptor;
  ResourceDescriptor(int device, uint32_t multiprocessors)
      : Object(ObjectKind::ResourceDescriptor), device(device), multiprocessors(multiprocessors) {}
  const int device;
  const uint32_t multiprocessors;
};

class GreenContext : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::GreenContext;
  // `primary` was retained for it by the caller (cuGreenCtxCreate); destroy() does not release
  // it either.
  GreenContext(Context& primary, uint32_t multiprocessors);
  ~GreenContext() override;

  Context& primary() { return primary_; }
  uint32_t multiprocessors() const { return multiprocessors_; }
  // cuGreenCtxGetId: from the contexts' sequence, so unique among contexts and green contexts.
  uint64_t id() const { return id_; }

  // The CUcontext cuCtxFromGreenCtx hands out, and the green context such a handle names
  // (nullptr for any other pointer; never dereferences an unknown one).
  const void* contextHandle() const { return &view_; }
  static GreenContext* fromContextHandle(const void* handle);

  // Its default stream (CU_GREEN_CTX_DEFAULT_STREAM), what the NULL stream means while the green
  // context is current: a blocking stream of the primary context, made anew if a primary reset
  // destroyed it.
  Result<Stream*> defaultStream();
  // cuGreenCtxStreamCreate, and cuStreamCreate with the green context current.
  Result<Stream*> createStream(unsigned flags, int priority);

  // cuGreenCtxRecordEvent: `event` completes once the work queued now on the green context's
  // streams is done. cuGreenCtxWaitEvent: work queued on them from now waits for `event`'s
  // latest record. Both refuse (StreamCaptureUnsupported) while one of its streams captures.
  Status recordAllWork(Event& event);
  Status waitForEvent(const Event& event);
  // The waits of waitForEvent still pending, for a command queued on one of its streams.
  void appendWaits(std::vector<CompletionPtr>& dependencies);
  // cuCtxSynchronize with the green context current: its streams, then the primary's sticky
  // error.
  Status synchronize();

  // cuGreenCtxDestroy: its default stream goes and its handles stop being valid. The object
  // stays (leaked on purpose, a few bytes): the streams the application made in it still point
  // here and answer ContextIsDestroyed, as CUDA documents.
  void destroy();
  bool destroyed() const;

 private:
  // The object behind contextHandle().
  class View : public Object {
   public:
    explicit View(GreenContext& owner) : Object(ObjectKind::GreenContextView), owner(owner) {}
    GreenContext& owner;
  };
  std::vector<Stream*> streams();
  Status refuseWhileCapturing(const char* what);

  Context& primary_;
  uint32_t multiprocessors_;
  uint64_t id_;
  View view_;
  mutable std::mutex mutex_;
  Stream* defaultStream_ = nullptr;
  uint64_t defaultStreamId_ = 0;
  RecordStream records_;  // recordAllWork's
  EventWaits waits_;      // cuGreenCtxWaitEvent's
  bool destroyed_ = false;
};

}  // namespace rocuda::core
