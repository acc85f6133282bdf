#include "core/stream.h"

#include "core/context.h"
#include "support/log.h"

namespace rocuda::core {

void Completion::complete(Status status) {
  {
    std::lock_guard lock(mutex_);
    status_ = std::move(status);
    finishedAt_ = std::chrono::steady_clock::now();
    done_ = true;
  }
  cv_.notify_all();
}

void Completion::wait() const {
  if (capturedBy_) capturedBy_->invalidated = true;
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [this] { return done_; });
}

bool Completion::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}

Status Completion::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}

std::chrono::steady_clock::time_point Completion::finishedAt() const {
  std::lock_guard lock(mutex_);
  return finishedAt_;
}

std::shared_ptr<Completion> Completion::captured(CaptureStatePtr capture, Status status) {
  auto completion = std::make_shared<Completion>();
  completion->capturedBy_ = std::move(capture);
  completion->complete(std::move(status));
  return completion;
}

Stream::Stream(Context& context, StreamKind kind, unsigned flags, int priority)
    : Object(ObjectKind::Stream), context_(context), kind_(kind), flags_(flags),
      priority_(priority) {}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

CompletionPtr Stream::enqueue(std::string name, std::function<Status()> work,
                              std::vector<CompletionPtr> dependencies) {
  auto completion = std::make_shared<Completion>();
  {
    std::lock_guard lock(mutex_);
    for (auto& pending : pendingDependencies_) dependencies.push_back(std::move(pending));
    pendingDependencies_.clear();
    queue_.push_back(Command{std::move(name), std::move(work), std::move(dependencies), completion});
    tail_ = completion;
    // The worker starts with the first command: streams that are never used cost no thread.
    if (!worker_.joinable()) worker_ = std::thread([this] { workerLoop(); });
  }
  cv_.notify_one();
  return completion;
}

CompletionPtr Stream::tail() const {
  std::lock_guard lock(mutex_);
  return tail_;
}

void Stream::addPendingDependency(CompletionPtr completion) {
  if (!completion) return;
  std::lock_guard lock(mutex_);
  pendingDependencies_.push_back(std::move(completion));
}

void Stream::workerLoop() {
  for (;;) {
    Command command;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      command = std::move(queue_.front());
    }
    for (const auto& dependency : command.dependencies) dependency->wait();
    Status status = command.work ? command.work() : Status::success();
    if (!status.ok()) log::error(command.name + " failed: " + status.error().message);
    {
      // Pop only after running, so that idle() is false while a command runs.
      std::lock_guard lock(mutex_);
      queue_.pop_front();
    }
    command.completion->complete(std::move(status));
  }
}

CaptureStatePtr Stream::capture() const {
  std::lock_guard lock(mutex_);
  return capture_;
}

CaptureStatePtr Stream::setCapture(CaptureStatePtr capture) {
  std::lock_guard lock(mutex_);
  std::swap(capture_, capture);
  return capture;
}

Status Stream::synchronize() {
  if (CaptureStatePtr active = capture()) {
    active->invalidated = true;
    return makeError(ErrorCode::StreamCaptureUnsupported, "synchronizing a capturing stream");
  }
  if (CompletionPtr last = tail()) last->wait();
  return context_.stickyError();
}

bool Stream::idle() const {
  CompletionPtr last = tail();
  return !last || last->done();
}

Event::Event(Context& context, unsigned flags)
    : Object(ObjectKind::Event), context_(context), flags_(flags) {}

Status Event::record(Stream& stream) {
  // Cross-stream capture (event nodes) is not implemented: a record on a capturing stream
  // invalidates the capture rather than producing an event that never completes.
  if (CaptureStatePtr active = stream.capture()) {
    active->invalidated = true;
    return makeError(ErrorCode::StreamCaptureUnsupported, "event record on a capturing stream");
  }
  auto completion = context_.enqueue(stream, "event record", [] { return Status::success(); });
  if (!completion.ok()) return completion.error();
  std::lock_guard lock(mutex_);
  completion_ = std::move(*completion);
  return Status::success();
}

CompletionPtr Event::completion() const {
  std::lock_guard lock(mutex_);
  return completion_;
}

Status Event::synchronize() const {
  if (CompletionPtr c = completion()) c->wait();
  return Status::success();
}

bool Event::query() const {
  CompletionPtr c = completion();
  return !c || c->done();
}

Result<float> elapsedMilliseconds(const Event& start, const Event& end) {
  if (start.timingDisabled() || end.timingDisabled())
    return makeError(ErrorCode::InvalidHandle, "an event was created with CU_EVENT_DISABLE_TIMING");
  CompletionPtr a = start.completion(), b = end.completion();
  if (!a || !b) return makeError(ErrorCode::InvalidHandle, "an event has not been recorded");
  if (!a->done() || !b->done()) return makeError(ErrorCode::NotReady, "an event has not completed");
  std::chrono::duration<float, std::milli> elapsed = b->finishedAt() - a->finishedAt();
  return elapsed.count();
}

}  // namespace rocuda::core
