#include "core/stream.h"

#include <algorithm>
#include <thread>

#include "core/context.h"
#include "core/ipc.h"
#include "core/platform.h"
#include "support/log.h"
#include "support/spin_wait.h"

namespace rocuda::core {

namespace {

// How long device work queued on an idle stream waits for a synchronising host thread to run
// it (Stream::finish) before the stream's worker does: longer than a launch call takes to return
// and reach the synchronisation, far shorter than any kernel.
constexpr auto kLeftToSynchronizer = std::chrono::microseconds(2);

// Pauses between two looks of an idle worker at its stream's signals (about half a microsecond).
constexpr int kRelaxesPerLook = 48;

using support::spinUntil;

}  // namespace

void Completion::complete(Status status) {
  {
    std::lock_guard lock(mutex_);
    status_ = std::move(status);
    finishedAt_ = std::chrono::steady_clock::now();
  }
  done_.store(true, std::memory_order_release);
  done_.notify_all();
}

void Completion::wait() const {
  if (capturedBy_) capturedBy_->invalidated = true;
  if (spinUntil([this] { return done_.load(std::memory_order_acquire); })) return;
  while (!done_.load(std::memory_order_acquire)) done_.wait(false, std::memory_order_acquire);
}

bool Completion::done() const { return done_.load(std::memory_order_acquire); }

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

namespace {
uint64_t nextStreamId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

Stream::Stream(Context& context, StreamKind kind, unsigned flags, int priority)
    : Object(ObjectKind::Stream),
      context_(context),
      kind_(kind),
      id_(nextStreamId()),
      flags_(flags),
      priority_(priority),
      hostRunsDeviceSteps_(!context.device().backend().queuesStreamWork()) {}

Stream::~Stream() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

CompletionPtr Stream::enqueue(std::string name, std::function<Status()> work,
                              std::vector<CompletionPtr> dependencies, CommandKind kind,
                              bool skipAfterFailure) {
  auto completion = std::make_shared<Completion>();
  // The commands the worker has finished since, destroyed here, after unlocking: see finished_.
  // The vector's storage goes back to the stream in the swap (no allocation once it has grown).
  thread_local std::vector<Command> finished;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Command{std::move(name),
                             std::move(work),
                             std::move(dependencies),
                             completion,
                             kind,
                             skipAfterFailure,
                             {}});
    signals_.queued.fetch_add(1, std::memory_order_relaxed);
    if (kind == CommandKind::HostStep) signals_.hostSteps.fetch_add(1, std::memory_order_relaxed);
    signals_.changes.fetch_add(1, std::memory_order_release);
    tail_.store(completion, std::memory_order_release);
    // The worker starts with the first command: streams that are never used cost no thread.
    if (!worker_.joinable()) worker_ = std::thread([this] { workerLoop(); });
    finished.swap(finished_);
  }
  cv_.notify_one();
  finished.clear();
  return completion;
}

bool Stream::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

bool Stream::attribute(unsigned id, AttributeValue* out) const {
  std::lock_guard lock(mutex_);
  auto it = attributes_.find(id);
  if (it == attributes_.end()) return false;
  *out = it->second;
  return true;
}

void Stream::setAttribute(unsigned id, const AttributeValue& value) {
  std::lock_guard lock(mutex_);
  attributes_[id] = value;
}

// A pure wait reads nothing on the host: a device step, so that work queued on the device stays
// queued when the event has completed already (and is drained first when it has not).
void Stream::enqueueWait(CompletionPtr completion) {
  if (completion) enqueue("wait for event", {}, {std::move(completion)}, CommandKind::DeviceStep);
}

CompletionPtr Stream::tail() const { return tail_.load(std::memory_order_acquire); }

Stream::Command Stream::takeFront() {
  Command command = std::move(queue_.front());
  queue_.front().completion = command.completion;  // what a synchronising thread waits for
  signals_.frontTaken.store(true, std::memory_order_release);
  return command;
}

void Stream::retireFront(Command* finished) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.front().kind == CommandKind::HostStep)
      signals_.hostSteps.fetch_sub(1, std::memory_order_relaxed);
    queue_.pop_front();
    // Release: a thread that sees the queue empty (idle()) sees the command's effects.
    signals_.queued.fetch_sub(1, std::memory_order_release);
    signals_.frontTaken.store(false, std::memory_order_relaxed);
    signals_.changes.fetch_add(1, std::memory_order_release);
    if (finished != nullptr) finished_.push_back(std::move(*finished));
  }
  cv_.notify_one();  // a worker that found the front taken by another thread
}

Status Stream::execute(Command& command) {
  Status status = command.skipAfterFailure ? context_.runUnlessFailed(command.work)
                  : command.work           ? command.work()
                                           : Status::success();
  if (!status.ok()) log::error(command.name + " failed: " + status.error().message);
  return status;
}

bool Stream::runFrontHere(CompletionPtr* running) {
  Command command;
  {
    std::lock_guard lock(mutex_);
    if (queue_.empty()) return false;
    if (!hostRunsDeviceSteps_ || signals_.frontTaken.load(std::memory_order_relaxed) ||
        queue_.front().kind != CommandKind::DeviceStep) {
      *running = queue_.front().completion;
      return false;
    }
    command = takeFront();
  }
  for (const auto& dependency : command.dependencies) dependency->wait();
  command.completion->complete(execute(command));
  retireFront(&command);
  return true;
}

void Stream::waitFor(const CompletionPtr& command) {
  while (!command->done()) {
    CompletionPtr running;
    if (runFrontHere(&running)) continue;
    // The worker runs the front (or it is host work, or device work left queued on the device).
    (running ? running : command)->wait();
  }
}

void Stream::finish() {
  if (drained()) return;
  if (CompletionPtr last = tail()) waitFor(last);
}

void Stream::workerLoop() {
  // DeviceSteps whose work may still be queued on the device, in order. They complete at the
  // next drain: before a HostStep, before waiting for another stream (which might wait for one
  // of these), when the stream runs out of commands, and every kMaxInFlight commands.
  constexpr size_t kMaxInFlight = 1024;
  std::unique_ptr<backends::StreamQueue> deviceQueue;
  std::vector<Command> inFlight;
  auto drain = [&] {
    if (inFlight.empty()) return;
    Status drained = deviceQueue->drain();
    if (!drained.ok()) {
      log::error("work queued on the device failed: " + drained.error().message);
      context_.noteDeviceFailure(drained.error());
    }
    for (Command& done : inFlight)
      done.completion->complete(done.issued.ok() ? drained : std::move(done.issued));
    signals_.inFlight.fetch_sub(inFlight.size(), std::memory_order_release);
    std::lock_guard lock(mutex_);
    for (Command& done : inFlight) finished_.push_back(std::move(done));
    inFlight.clear();
  };
  auto runnable = [this] {
    return signals_.queued.load(std::memory_order_acquire) != 0 &&
           !signals_.frontTaken.load(std::memory_order_acquire);
  };
  for (;;) {
    Command command;
    {
      if (inFlight.empty()) {
        bool wasIdle = !runnable();
        // Spin while the stream is in use, even where synchronising threads run its work (a
        // worker asleep costs every enqueue a wake-up call), looking at the signals only now and
        // then: each look takes their cache line from the thread that writes them next.
        bool woken = false;
        for (uint64_t seen = signals_.changes.load(std::memory_order_acquire);;) {
          if (runnable()) {
            woken = true;
            break;
          }
          // While another thread runs the front command, the grid's pool threads need the
          // processors: yield from the start.
          bool othersRun = signals_.frontTaken.load(std::memory_order_relaxed);
          woken = spinUntil(
              [&] {
                for (int i = 0; i < kRelaxesPerLook; ++i) support::cpuRelax();
                return signals_.changes.load(std::memory_order_acquire) != seen;
              },
              support::kSpinBeforeSleep,
              othersRun ? std::chrono::nanoseconds(0) : support::kPollBeforeYield);
          if (!woken) break;
          seen = signals_.changes.load(std::memory_order_acquire);
        }
        // Device work queued on an idle stream is left to the host threads for a moment: one
        // that synchronises at once runs it itself (finish), without a hand-off to this thread
        // and back, each a few cache misses between cores. Later commands follow at once. Not
        // when host work is queued behind it (an event record that cuEventSynchronize waits
        // for): only this thread runs that, so it had better start on what comes first.
        if (woken && wasIdle && hostRunsDeviceSteps_) {
          spinUntil(
              [&] {
                return !runnable() || signals_.hostSteps.load(std::memory_order_relaxed) != 0;
              },
              kLeftToSynchronizer, kLeftToSynchronizer);
          if (!runnable()) continue;  // a synchronising thread took it
        }
      }
      std::unique_lock lock(mutex_);
      if (queue_.empty() && !inFlight.empty()) {
        lock.unlock();
        drain();
        continue;
      }
      if (queue_.empty()) {
        // Idle: nobody may enqueue for a while, so what finished is released now.
        std::vector<Command> finished;
        finished.swap(finished_);
        lock.unlock();
        finished.clear();
        lock.lock();
      }
      cv_.wait(lock, [this] {
        return (stopping_ && queue_.empty()) ||
               (!queue_.empty() && !signals_.frontTaken.load(std::memory_order_relaxed));
      });
      if (queue_.empty()) return;  // stopping, and drained
      command = takeFront();
    }
    if (command.kind == CommandKind::DeviceStep && !deviceQueue)
      deviceQueue = context_.device().backend().createStreamQueue();
    bool queues = command.kind == CommandKind::DeviceStep && deviceQueue != nullptr;
    bool dependenciesDone = std::all_of(command.dependencies.begin(), command.dependencies.end(),
                                        [](const CompletionPtr& c) { return c->done(); });
    if (!queues || !dependenciesDone || inFlight.size() >= kMaxInFlight) drain();
    for (const auto& dependency : command.dependencies) dependency->wait();
    Status status;
    {
      backends::StreamQueue::Activation active(queues ? deviceQueue.get() : nullptr);
      status = execute(command);
    }
    if (queues) {
      command.issued = std::move(status);
      signals_.inFlight.fetch_add(1, std::memory_order_relaxed);  // before the queue looks empty
      retireFront(nullptr);
      inFlight.push_back(std::move(command));
    } else {
      command.completion->complete(std::move(status));
      retireFront(&command);
    }
  }
}

CaptureStatePtr Stream::capture() const {
  if (!capturing_.load(std::memory_order_acquire)) return nullptr;
  return capture_.load(std::memory_order_acquire);
}

CaptureStatePtr Stream::setCapture(CaptureStatePtr capture) {
  std::lock_guard lock(mutex_);
  bool capturing = capture != nullptr;
  capture = capture_.exchange(std::move(capture), std::memory_order_acq_rel);
  capturing_.store(capturing, std::memory_order_release);
  if (!capturing) captureDependencies_.clear();
  return capture;
}

std::vector<GraphNode*> Stream::captureDependencies() const {
  std::lock_guard lock(mutex_);
  return captureDependencies_;
}

void Stream::setCaptureDependencies(std::vector<GraphNode*> nodes) {
  std::lock_guard lock(mutex_);
  captureDependencies_ = std::move(nodes);
}

Status Stream::synchronize() {
  if (CaptureStatePtr active = capture()) {
    active->invalidated = true;
    return makeError(ErrorCode::StreamCaptureUnsupported, "synchronizing a capturing stream");
  }
  finish();
  context_.device().trimMemPools();  // CUDA's pools release memory at synchronisations
  return context_.stickyError();
}

bool Stream::drained() const {
  return signals_.queued.load(std::memory_order_acquire) == 0 &&
         signals_.inFlight.load(std::memory_order_acquire) == 0;
}

bool Stream::idle() const {
  if (drained()) return true;  // else the last command may have finished, not yet retired
  CompletionPtr last = tail();
  return !last || last->done();
}

int clampStreamPriority(int priority, const backends::DeviceDescription& device) {
  return std::clamp(priority, device.greatestStreamPriority, 0);
}

bool waitConditionHolds(WaitCondition condition, uint64_t current, uint64_t value, bool is64) {
  if (!is64) {
    current &= 0xffffffffu;
    value &= 0xffffffffu;
  }
  switch (condition) {
    case WaitCondition::Geq:
      return is64 ? static_cast<int64_t>(current - value) >= 0
                  : static_cast<int32_t>(static_cast<uint32_t>(current - value)) >= 0;
    case WaitCondition::Eq:
      return current == value;
    case WaitCondition::And:
      return (current & value) != 0;
    case WaitCondition::Nor: {
      uint64_t nor = ~(current | value);
      return (is64 ? nor : nor & 0xffffffffu) != 0;
    }
  }
  return false;
}

namespace {

// Poll until the condition holds; false when the stream is destroyed first. Memory is read
// through the backend, so device memory that the host cannot address directly works too.
Result<bool> waitForValue(backends::DeviceBackend& backend, const MemoryOperation& op,
                          const Stream* cancelWith) {
  auto delay = std::chrono::microseconds(1);
  for (;;) {
    uint64_t current = 0;
    if (Status read = backend.copy(&current, op.address, op.is64 ? 8 : 4); !read.ok())
      return read.error();
    if (waitConditionHolds(op.condition, current, op.value, op.is64)) return true;
    if (cancelWith != nullptr && cancelWith->stopping()) return false;
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::microseconds(200));
  }
}

Status runMemoryOperations(backends::DeviceBackend& backend,
                           const std::vector<MemoryOperation>& ops, const Stream* cancelWith) {
  for (const MemoryOperation& op : ops) {
    if (op.kind == MemoryOperation::Kind::Write) {
      // Earlier work of the stream has completed: the write is ordered after it (the barrier
      // CU_STREAM_WRITE_VALUE_DEFAULT asks for).
      if (Status s = backend.copy(op.address, &op.value, op.is64 ? 8 : 4); !s.ok()) return s;
    } else if (op.kind == MemoryOperation::Kind::Wait) {
      Result<bool> satisfied = waitForValue(backend, op, cancelWith);
      if (!satisfied) return satisfied.error();
      if (!*satisfied) {
        log::warning("a stream was destroyed while waiting on a memory value; the wait ends");
        return Status::success();
      }
    }
    // Barriers and flushes: work runs in order and memory is coherent, nothing to do.
  }
  return Status::success();
}

}  // namespace

Result<CompletionPtr> enqueueMemoryOperations(Stream& stream, std::vector<MemoryOperation> ops) {
  backends::DeviceBackend* backend = &stream.context().device().backend();
  // A captured operation replays on another stream later, so it cannot be cancelled with this one.
  const Stream* cancelWith = stream.capture() ? nullptr : &stream;
  return stream.context().enqueue(stream, kMemoryOperationsName,
                                  [backend, ops = std::move(ops), cancelWith] {
                                    return runMemoryOperations(*backend, ops, cancelWith);
                                  });
}

Event::Event(Context& context, unsigned flags)
    : Object(ObjectKind::Event), context_(context), flags_(flags) {}

Status Event::record(Stream& stream) {
  if (CaptureStatePtr active = stream.capture()) {
    if (active->invalidated)
      return makeError(ErrorCode::StreamCaptureInvalidated,
                       "the stream's capture was invalidated by an earlier error");
    std::vector<GraphNode*> after = stream.captureDependencies();
    std::lock_guard lock(mutex_);
    capturedIn_ = std::move(active);
    capturedAfter_ = std::move(after);
    return Status::success();
  }
  std::shared_ptr<InterprocessEvent> shared;
  if ((flags_ & 4u) != 0) {
    auto state = interprocessState();
    if (!state.ok()) return state.error();
    shared = std::move(*state);
  }
  uint64_t number = shared ? shared->beginRecord() : 0;
  auto completion = context_.enqueue(stream, "event record", [shared, number] {
    if (shared) shared->finishRecord(number);
    return Status::success();
  });
  if (!completion.ok()) {
    if (shared) shared->finishRecord(number);  // nothing will finish it: waiters must not hang
    return completion.error();
  }
  std::lock_guard lock(mutex_);
  completion_ = std::move(*completion);
  capturedIn_.reset();
  capturedAfter_.clear();
  return Status::success();
}

Result<std::shared_ptr<InterprocessEvent>> Event::interprocessState() {
  std::lock_guard lock(mutex_);
  if (!interprocess_) {
    auto created = InterprocessEvent::create();
    if (!created.ok()) return created.takeError();
    interprocess_ = std::move(*created);
  }
  return interprocess_;
}

std::shared_ptr<InterprocessEvent> Event::interprocess() const {
  std::lock_guard lock(mutex_);
  return interprocess_;
}

void Event::adoptInterprocess(std::shared_ptr<InterprocessEvent> state) {
  std::lock_guard lock(mutex_);
  interprocess_ = std::move(state);
}

void Event::recordCompletion(CompletionPtr completion) {
  std::lock_guard lock(mutex_);
  completion_ = std::move(completion);
  capturedIn_.reset();
  capturedAfter_.clear();
}

CaptureStatePtr Event::captureRecord(std::vector<GraphNode*>* nodes) const {
  std::lock_guard lock(mutex_);
  if (nodes != nullptr) *nodes = capturedAfter_;
  return capturedIn_;
}

CompletionPtr Event::completion() const {
  std::lock_guard lock(mutex_);
  return completion_;
}

Status Event::synchronize() const {
  if (captureRecord(nullptr))
    return makeError(ErrorCode::CapturedEvent, "the event was last recorded in a stream capture");
  // An interprocess event's latest record may have been made by another process.
  if (auto shared = interprocess()) {
    shared->wait(shared->latestRecord());
    return Status::success();
  }
  if (CompletionPtr c = completion()) c->wait();
  context_.device().trimMemPools();
  return Status::success();
}

Result<bool> Event::query() const {
  if (captureRecord(nullptr))
    return makeError(ErrorCode::CapturedEvent, "the event was last recorded in a stream capture");
  if (auto shared = interprocess()) return shared->reached(shared->latestRecord());
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

std::vector<CompletionPtr> tailsOf(const std::vector<Stream*>& streams) {
  std::vector<CompletionPtr> tails;
  for (Stream* stream : streams)
    if (auto tail = stream->tail()) tails.push_back(std::move(tail));
  return tails;
}

void RecordStream::record(Event& event, std::vector<CompletionPtr> work, const char* name) {
  Stream* host = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (!stream_) {
      stream_ = std::make_unique<Stream>(context_, StreamKind::Created, 1u, 0);
      stream_->retireHandle();  // internal: no application handle names it
    }
    host = stream_.get();
  }
  event.recordCompletion(host->enqueue(
      name, [] { return Status::success(); }, std::move(work)));
}

CompletionPtr RecordStream::tail() const {
  std::lock_guard lock(mutex_);
  return stream_ ? stream_->tail() : nullptr;
}

Status EventWaits::add(const Event& event) {
  ROCUDA_TRY(refuseEventOfOngoingCapture(event));
  CompletionPtr completion = event.completion();
  if (!completion) return Status::success();  // never recorded: nothing to wait for
  std::lock_guard lock(mutex_);
  pending_.push_back(std::move(completion));
  return Status::success();
}

void EventWaits::appendTo(std::vector<CompletionPtr>& dependencies) {
  std::lock_guard lock(mutex_);
  std::erase_if(pending_, [](const CompletionPtr& c) { return c->done(); });
  dependencies.insert(dependencies.end(), pending_.begin(), pending_.end());
}

void EventWaits::clear() {
  std::lock_guard lock(mutex_);
  pending_.clear();
}

std::unique_ptr<Stream> RecordStream::release() {
  std::lock_guard lock(mutex_);
  return std::move(stream_);
}

}  // namespace rocuda::core
