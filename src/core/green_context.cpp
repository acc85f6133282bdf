#include "core/green_context.h"

#include <algorithm>

#include "core/context.h"

namespace rocuda::core {

GreenContext::GreenContext(Context& primary, uint32_t multiprocessors)
    : Object(ObjectKind::GreenContext),
      primary_(primary),
      multiprocessors_(multiprocessors),
      id_(newContextId()),
      view_(*this),
      records_(primary) {}

GreenContext::~GreenContext() = default;

GreenContext* GreenContext::fromContextHandle(const void* handle) {
  Object* view = findObject(handle, ObjectKind::GreenContextView);
  return view == nullptr ? nullptr : &static_cast<View*>(view)->owner;
}

Result<Stream*> GreenContext::defaultStream() {
  std::lock_guard lock(mutex_);
  if (destroyed_)
    return makeError(ErrorCode::ContextIsDestroyed, "the green context was destroyed");
  // A reset of the primary context destroys every stream made in it, this one too (the id tells
  // a stream made later at the same address apart).
  Stream* live = lookupHandle<Stream>(defaultStream_);
  if (live != nullptr && live->id() == defaultStreamId_) return live;
  Result<Stream*> made = primary_.createStream(0, 0, this);
  if (!made.ok()) return made.error();
  defaultStream_ = *made;
  defaultStreamId_ = (*made)->id();
  return *made;
}

Result<Stream*> GreenContext::createStream(unsigned flags, int priority) {
  if (destroyed())
    return makeError(ErrorCode::ContextIsDestroyed, "the green context was destroyed");
  return primary_.createStream(flags, priority, this);
}

std::vector<Stream*> GreenContext::streams() { return primary_.streamsOf(*this); }

Status GreenContext::refuseWhileCapturing(const char* what) {
  return core::refuseWhileCapturing(streams(), what);
}

Status GreenContext::recordAllWork(Event& event) {
  ROCUDA_TRY(refuseWhileCapturing("a green context's event record"));
  records_.record(event, tailsOf(streams()), "green context event record");
  return Status::success();
}

Status GreenContext::waitForEvent(const Event& event) {
  ROCUDA_TRY(refuseWhileCapturing("a green context's event wait"));
  return waits_.add(event);
}

void GreenContext::appendWaits(std::vector<CompletionPtr>& dependencies) {
  waits_.appendTo(dependencies);
}

Status GreenContext::synchronize() {
  ROCUDA_TRY(refuseWhileCapturing("synchronizing the green context"));
  for (Stream* stream : streams()) stream->finish();
  if (auto tail = records_.tail()) tail->wait();
  return primary_.stickyError();
}

void GreenContext::destroy() {
  Stream* ownDefault = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (destroyed_) return;
    destroyed_ = true;
    Stream* live = lookupHandle<Stream>(defaultStream_);
    if (live != nullptr && live->id() == defaultStreamId_) ownDefault = live;
    defaultStream_ = nullptr;
  }
  waits_.clear();
  // Outside the lock: destroying a stream waits for its work (which may queue more here).
  if (ownDefault != nullptr) (void)primary_.destroyStream(ownDefault);
  records_.release().reset();
  view_.retireHandle();
  retireHandle();
}

bool GreenContext::destroyed() const {
  std::lock_guard lock(mutex_);
  return destroyed_;
}

}  // namespace rocuda::core
