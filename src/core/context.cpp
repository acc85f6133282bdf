#include "core/context.h"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <string>

#include "core/coredump.h"
#include "core/green_context.h"
#include "core/platform.h"
#include "support/thread_identity.h"

namespace rocuda::core {
namespace {

std::atomic<uint64_t> nextContextId{1};

thread_local std::vector<CurrentContext> contextStack;

}  // namespace

uint64_t newContextId() { return nextContextId++; }

Context::Context(Device& device, unsigned flags, bool primary)
    : Object(ObjectKind::Context),
      device_(device),
      flags_(flags),
      primary_(primary),
      id_(newContextId()) {
  setDefaultLimits();
  legacy_ = std::make_unique<Stream>(*this, StreamKind::Legacy, 0, 0);
}

void Context::setDefaultLimits() {
  const auto& description = device_.description();
  for (auto& limit : limits_) limit.store(0, std::memory_order_relaxed);
  launchedPrintf_ = launchedMalloc_ = false;
  auto set = [this](ContextLimit which, uint64_t value) {
    limits_[static_cast<int>(which)].store(value, std::memory_order_relaxed);
  };
  set(ContextLimit::StackSize, 1024);
  set(ContextLimit::PrintfFifoSize, 1 << 20);
  set(ContextLimit::MallocHeapSize, 8 << 20);
  set(ContextLimit::DevRuntimeSyncDepth, 2);
  set(ContextLimit::DevRuntimePendingLaunchCount, 2048);
  set(ContextLimit::MaxL2FetchGranularity, 64);
  set(ContextLimit::ShmemSize, static_cast<uint64_t>(description.sharedMemPerBlockOptin));
}

Context::~Context() {
  // Streams drain in their destructors; the legacy stream last, as it may wait on the others.
  streams_.clear();
  retiredStreams_.clear();
  records_.release().reset();
  perThread_.clear();
  legacy_.reset();
  events_.clear();
  disableAllPeers();
}

Stream& Context::legacyStream() { return *legacy_; }

Stream& Context::perThreadStream() {
  const support::ThreadIdentity& caller = support::currentThread();
  Stream* stream = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto found = perThread_.find(caller.serial);
    if (found != perThread_.end()) return *found->second.stream;
    // A thread's first use. The streams of threads that have exited since the last one are
    // retired: work they queued still runs (and context-wide waits see it), and each is freed
    // once idle.
    for (auto it = perThread_.begin(); it != perThread_.end();) {
      if (it->second.ownerAlive->load(std::memory_order_acquire)) {
        ++it;
        continue;
      }
      retiredStreams_.push_back(std::move(it->second.stream));
      it = perThread_.erase(it);
    }
    auto owned = std::make_unique<Stream>(*this, StreamKind::PerThread, 0, 0);
    stream = owned.get();
    perThread_.emplace(caller.serial, PerThreadStream{caller.alive, std::move(owned)});
  }
  takeIdleRetiredStreams().clear();  // destroyed outside the lock (they join their workers)
  return *stream;
}

Result<Stream*> Context::createStream(unsigned flags, int priority, GreenContext* green) {
  ROCUDA_TRY(stickyError());  // a context with a failed kernel makes nothing new
  takeIdleRetiredStreams().clear();
  auto stream = std::make_unique<Stream>(*this, StreamKind::Created, flags, priority);
  stream->setGreenContext(green);
  Stream* raw = stream.get();
  std::lock_guard lock(mutex_);
  streams_.push_back(std::move(stream));
  return raw;
}

Status Context::destroyStream(Stream* stream) {
  std::unique_ptr<Stream> owned;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(streams_.begin(), streams_.end(),
                           [stream](const auto& s) { return s.get() == stream; });
    if (it == streams_.end())
      return makeError(ErrorCode::InvalidHandle, "stream does not belong to this context");
    owned = std::move(*it);
    streams_.erase(it);
  }
  // Outside the context's lock: leaving a capture takes the graphs' lock, under which graph code
  // may call into the context (one order of the two locks everywhere).
  leaveCapture(*owned);
  // cuStreamDestroy returns at once; work still queued runs, and the stream's resources go
  // when it is done (the handle is invalid from now on).
  owned->retireHandle();
  if (auto tail = owned->tail(); tail && !tail->done()) {
    std::lock_guard lock(mutex_);
    retiredStreams_.push_back(std::move(owned));
  }
  owned.reset();
  takeIdleRetiredStreams().clear();  // destroyed here, outside the lock (they join a thread)
  return Status::success();
}

std::vector<std::unique_ptr<Stream>> Context::takeIdleRetiredStreams() {
  std::vector<std::unique_ptr<Stream>> idle;
  std::lock_guard lock(mutex_);
  for (auto it = retiredStreams_.begin(); it != retiredStreams_.end();) {
    auto tail = (*it)->tail();
    if (tail && !tail->done()) {
      ++it;
      continue;
    }
    idle.push_back(std::move(*it));
    it = retiredStreams_.erase(it);
  }
  return idle;
}

Result<Event*> Context::createEvent(unsigned flags) {
  ROCUDA_TRY(stickyError());
  auto event = std::make_unique<Event>(*this, flags);
  Event* raw = event.get();
  std::lock_guard lock(mutex_);
  events_.push_back(std::move(event));
  return raw;
}

Status Context::destroyEvent(Event* event) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(events_.begin(), events_.end(),
                         [event](const auto& e) { return e.get() == event; });
  if (it == events_.end())
    return makeError(ErrorCode::InvalidHandle, "event does not belong to this context");
  events_.erase(it);
  return Status::success();
}

std::vector<Stream*> Context::streamsOf(const GreenContext& green) {
  std::lock_guard lock(mutex_);
  std::vector<Stream*> streams;
  for (auto* list : {&streams_, &retiredStreams_})
    for (auto& s : *list)
      if (s->greenContext() == &green) streams.push_back(s.get());
  return streams;
}

template <class Visit>
void Context::forEachStream(const Visit& visit) {
  for (auto& stream : streams_) visit(*stream);
  for (auto& stream : retiredStreams_) visit(*stream);
  for (auto& [serial, perThread] : perThread_) visit(*perThread.stream);
}

std::vector<Stream*> Context::allStreams() {
  std::lock_guard lock(mutex_);
  std::vector<Stream*> all;
  forEachStream([&](Stream& stream) { all.push_back(&stream); });
  return all;
}

Result<CompletionPtr> Context::enqueue(Stream& stream, std::string name,
                                       std::function<Status()> work, bool runsAfterFailure,
                                       std::vector<CompletionPtr> after) {
  return enqueueCommand(stream, std::move(name), std::move(work), runsAfterFailure,
                        std::move(after), CommandKind::HostStep);
}

Result<CompletionPtr> Context::enqueueDeviceWork(Stream& stream, std::string name,
                                                 std::function<Status()> work) {
  return enqueueCommand(stream, std::move(name), std::move(work), false, {},
                        CommandKind::DeviceStep);
}

Result<CompletionPtr> Context::enqueueCommand(Stream& stream, std::string name,
                                              std::function<Status()> work, bool runsAfterFailure,
                                              std::vector<CompletionPtr> after, CommandKind kind) {
  // After a kernel failure the context runs nothing more (CUDA's sticky errors): new work is
  // refused with the error, queued work completes at once with it.
  if (!runsAfterFailure) ROCUDA_TRY(stickyError());
  // Stream capture: the operation becomes a node of the capture's graph and does not run now.
  if (CaptureStatePtr capture = stream.capture()) {
    if (!runsAfterFailure) work = [this, work = std::move(work)] { return runUnlessFailed(work); };
    Result<GraphNode*> node = recordCapturedNode(stream, capture, std::move(name), std::move(work));
    if (!node.ok()) return node.error();
    return Completion::captured(std::move(capture), makeError(ErrorCode::StreamCaptureUnsupported,
                                "operation not permitted when stream is capturing"));
  }
  std::vector<CompletionPtr> dependencies = std::move(after);
  if (stream.streamKind() == StreamKind::Legacy) {
    // The legacy stream would depend on a capture in progress: CUDA refuses the operation and
    // invalidates the capture (cudaErrorStreamCaptureImplicit).
    // The legacy default stream waits for all blocking streams...
    if (!appendBlockingTails(dependencies))
      return makeError(ErrorCode::StreamCaptureImplicit,
                       "legacy stream used while a blocking stream is capturing");
  } else if (stream.blocking()) {
    // ...and every blocking stream waits for the legacy default stream.
    if (auto tail = legacy_->tail()) dependencies.push_back(std::move(tail));
  }
  // Events the whole context waits for (cuCtxWaitEvent), and those its green context waits for
  // (cuGreenCtxWaitEvent).
  eventWaits_.appendTo(dependencies);
  if (GreenContext* green = stream.greenContext()) green->appendWaits(dependencies);
  return stream.enqueue(std::move(name), std::move(work), std::move(dependencies), kind,
                        !runsAfterFailure);
}

Status Context::runUnlessFailed(const std::function<Status()>& work) const {
  if (Status sticky = stickyError(); !sticky.ok()) return sticky;
  return work ? work() : Status::success();
}

Status refuseWhileCapturing(const std::vector<Stream*>& streams, const std::string& what) {
  bool capturing = false;
  for (Stream* stream : streams)
    if (CaptureStatePtr capture = stream->capture()) {
      capture->invalidated = true;
      capturing = true;
    }
  if (capturing)
    return makeError(ErrorCode::StreamCaptureUnsupported,
                     what + " while a stream captures (its capture is invalidated)");
  return Status::success();
}

Status refuseEventOfOngoingCapture(const Event& event) {
  if (CaptureStatePtr capture = event.captureRecord(nullptr);
      capture && capture->origin != nullptr && capture->origin->capture() == capture) {
    capture->invalidated = true;
    return makeError(ErrorCode::StreamCaptureUnsupported,
                     "the event is part of an ongoing capture (the capture is invalidated)");
  }
  return Status::success();
}

Status Context::refuseWhileCapturing(const char* what) {
  return core::refuseWhileCapturing(allStreams(), what);
}

std::vector<CompletionPtr> Context::queuedWork() {
  std::vector<Stream*> streams = allStreams();
  streams.push_back(legacy_.get());
  return tailsOf(streams);
}

Status Context::recordAllWork(Event& event) {
  ROCUDA_TRY(refuseWhileCapturing("a context-wide event record"));
  records_.record(event, queuedWork(), "context event record");
  return Status::success();
}

Status Context::waitForEvent(const Event& event) {
  ROCUDA_TRY(refuseWhileCapturing("a context-wide event wait"));
  return eventWaits_.add(event);
}

std::vector<CaptureStatePtr> Context::blockingCaptures() {
  std::vector<CaptureStatePtr> captures;
  for (Stream* other : allStreams())
    if (other->blocking())
      if (CaptureStatePtr capture = other->capture()) captures.push_back(std::move(capture));
  return captures;
}

bool Context::appendBlockingTails(std::vector<CompletionPtr>& into) {
  std::lock_guard lock(mutex_);
  bool capturing = false;
  forEachStream([&](Stream& stream) {
    if (!stream.blocking()) return;
    if (CaptureStatePtr capture = stream.capture()) {
      capture->invalidated = true;
      capturing = true;
    } else if (!stream.idle()) {  // an idle stream's last work needs no waiting for
      if (CompletionPtr tail = stream.tail()) into.push_back(std::move(tail));
    }
  });
  return !capturing;
}

bool Context::invalidateBlockingCaptures() {
  std::vector<CaptureStatePtr> captures = blockingCaptures();
  for (const CaptureStatePtr& capture : captures) capture->invalidated = true;
  return !captures.empty();
}

Status Context::synchronize() {
  // A context-wide wait during a capture is a prohibited synchronous call.
  ROCUDA_TRY(refuseWhileCapturing("synchronizing the context"));
  drain();
  takeIdleRetiredStreams().clear();
  device().trimMemPools();  // CUDA's pools release memory at synchronisations
  return stickyError();
}

void Context::drain() {
  for (Stream* stream : allStreams()) stream->finish();
  legacy_->finish();
  // cuCtxRecordEvent's records are work of the context too (they follow everything above).
  if (auto tail = records_.tail()) tail->wait();
}

void Context::reset() {
  drain();
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Event>> events;
  {
    std::lock_guard lock(mutex_);
    streams.swap(streams_);
    for (auto& retired : retiredStreams_) streams.push_back(std::move(retired));
    retiredStreams_.clear();
    if (auto records = records_.release()) streams.push_back(std::move(records));
    eventWaits_.clear();
    events.swap(events_);
    sticky_.store(false, std::memory_order_release);
    stickyError_ = Error();
    setDefaultLimits();
  }
  // Outside the lock: a stream's destructor drains it through this context.
  streams.clear();
  events.clear();
  mallocHeap_.release();  // every kernel has finished (drain)
  disableAllPeers();
}

bool Context::setStickyError(const Error& error) {
  std::lock_guard lock(mutex_);
  if (sticky_.load(std::memory_order_relaxed)) return false;  // the first one is reported
  stickyError_ = error;
  sticky_.store(true, std::memory_order_release);
  return true;
}

bool Context::peerAccessEnabled(const Context& peer) const {
  std::lock_guard lock(mutex_);
  return peers_.count(peer.id()) != 0;
}

size_t Context::peersEnabled() const {
  std::lock_guard lock(mutex_);
  return peers_.size();
}

void Context::setPeerAccess(Context& peer, bool enabled) {
  std::lock_guard lock(mutex_);
  if (enabled)
    peers_[peer.id()] = &peer.device().backend();
  else
    peers_.erase(peer.id());
}

void Context::disableAllPeers() {
  std::map<uint64_t, backends::DeviceBackend*> peers;
  {
    std::lock_guard lock(mutex_);
    peers.swap(peers_);
  }
  for (auto& [id, backend] : peers) device_.backend().disablePeerAccess(*backend);
}

void Context::noteDeviceFailure(const Error& error) {
  ErrorCode code = error.code;
  bool fault = code == ErrorCode::IllegalAddress || code == ErrorCode::MisalignedAddress ||
               code == ErrorCode::LaunchFailed || code == ErrorCode::Assert;
  Error sticky = fault ? error : Error{ErrorCode::LaunchFailed, error.message};
  if (setStickyError(sticky) && fault) Coredumps::instance().onException(*this, sticky);
}

Status Context::stickyError() const {
  if (!sticky_.load(std::memory_order_acquire)) return Status::success();
  std::lock_guard lock(mutex_);  // the error is copied under the lock (a reset may clear it)
  if (sticky_.load(std::memory_order_relaxed)) return stickyError_;
  return Status::success();
}

uint64_t Context::limit(ContextLimit which) const {
  return limits_[static_cast<int>(which)].load(std::memory_order_relaxed);
}

Status Context::setLimit(ContextLimit which, uint64_t value) {
  if (which >= ContextLimit::Count) return makeError(ErrorCode::InvalidValue, "unknown limit");
  // CU_LIMIT_SHMEM_SIZE and CU_LIMIT_CIG_ENABLED "can only be queried, cannot be set".
  if (which == ContextLimit::ShmemSize || which == ContextLimit::CigEnabled)
    return makeError(ErrorCode::InvalidValue, "this limit can only be queried");
  // A GPU reserves the stack of every thread it can hold at once: a size whose reservation
  // exceeds the device's memory fails as on NVIDIA's driver (OUT_OF_MEMORY).
  if (which == ContextLimit::StackSize) {
    const auto& description = device_.description();
    uint64_t residentThreads = uint64_t(std::max(description.maxThreadsPerMultiprocessor, 1)) *
                               uint64_t(std::max(description.multiprocessorCount, 1));
    if (value > description.totalMemory / residentThreads)
      return makeError(ErrorCode::OutOfMemory, "a stack of " + std::to_string(value) +
                                                   " bytes for each of the " +
                                                   std::to_string(residentThreads) +
                                                   " threads the device holds exceeds its memory");
  }
  std::lock_guard lock(mutex_);
  if (which == ContextLimit::PrintfFifoSize && launchedPrintf_)
    return makeError(ErrorCode::InvalidValue,
                     "the printf FIFO size is fixed once a kernel using printf was launched");
  if (which == ContextLimit::MallocHeapSize && launchedMalloc_)
    return makeError(ErrorCode::InvalidValue,
                     "the malloc heap size is fixed once a kernel using malloc was launched");
  // "can be set up the maximum launch depth of 24"; the L2 fetch granularity "can range from 0B
  // to 128B ... ignored or clamped".
  if (which == ContextLimit::DevRuntimeSyncDepth && value > 24)
    return makeError(ErrorCode::InvalidValue, "the device runtime's sync depth is at most 24");
  if (which == ContextLimit::MaxL2FetchGranularity) value = std::min<uint64_t>(value, 128);
  limits_[static_cast<int>(which)].store(value, std::memory_order_relaxed);
  return Status::success();
}

void Context::noteLaunch(const compiler::KernelInfo& kernel) {
  if (!kernel.usesPrintf && !kernel.usesDeviceMalloc) return;
  std::lock_guard lock(mutex_);
  launchedPrintf_ |= kernel.usesPrintf;
  launchedMalloc_ |= kernel.usesDeviceMalloc;
}

Context* currentContext() { return contextStack.empty() ? nullptr : contextStack.back().context; }

GreenContext* currentGreenContext() {
  return contextStack.empty() ? nullptr : contextStack.back().green;
}

void setCurrentContext(Context* context, GreenContext* green) {
  if (contextStack.empty()) {
    if (context != nullptr) contextStack.push_back({context, green});
  } else if (context == nullptr) {
    contextStack.pop_back();
  } else {
    contextStack.back() = {context, green};
  }
}

void pushContext(Context* context, GreenContext* green) {
  contextStack.push_back({context, green});
}

CurrentContext popContext() {
  if (contextStack.empty()) return {};
  CurrentContext top = contextStack.back();
  contextStack.pop_back();
  return top;
}

void forgetContext(Context* context) {
  std::erase_if(contextStack, [context](const CurrentContext& e) { return e.context == context; });
}

void forgetGreenContext(GreenContext* green) {
  std::erase_if(contextStack, [green](const CurrentContext& e) { return e.green == green; });
}

}  // namespace rocuda::core
