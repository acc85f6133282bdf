// Streams and events with real asynchronous semantics: each stream has a worker thread that runs
// its commands in order; commands may wait for completions of other streams (legacy default-stream
// ordering, cuStreamWaitEvent). The host never blocks unless it asks to.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/device_backend.h"
#include "core/graph.h"
#include "core/object.h"
#include "support/fifo.h"
#include "support/result.h"
#include "support/short_lock.h"

namespace rocuda::core {

class Context;
class GreenContext;
class InterprocessEvent;

// The completion of one command: set once, waited on by hosts and by other streams.
class Completion {
 public:
  void complete(Status status);
  void wait() const;
  bool done() const;
  Status status() const;
  // When the command finished (valid once done()).
  std::chrono::steady_clock::time_point finishedAt() const;
  // A completion handed out for an operation recorded by stream capture: it is done at once
  // with `status`, and a host wait on it (a synchronous call) invalidates the capture.
  static std::shared_ptr<Completion> captured(CaptureStatePtr capture, Status status);

 private:
  CaptureStatePtr capturedBy_;
  mutable support::ShortLock mutex_;  // status_ and finishedAt_
  std::atomic<bool> done_{false};     // set after them; waiters poll it, then sleep on it
  Status status_;
  std::chrono::steady_clock::time_point finishedAt_;
};
using CompletionPtr = std::shared_ptr<Completion>;

enum class StreamKind : uint8_t { Created, Legacy, PerThread };

// What a stream's command does, for a device that queues work (backends::StreamQueue): a
// HostStep runs once the stream's earlier work has finished on the device (it reads results,
// measures time, waits, or calls the application); a DeviceStep only issues device work
// (kernels, copies, fills) and may leave it queued there, its completion reported once the
// device has finished it.
enum class CommandKind : uint8_t { HostStep, DeviceStep };

// A requested stream priority clamped into the device's range [greatestStreamPriority, 0], as CUDA
// clamps priorities outside cuCtxGetStreamPriorityRange's.
int clampStreamPriority(int priority, const backends::DeviceDescription& device);

class Stream : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Stream;
  // flags: CU_STREAM_DEFAULT (0) or CU_STREAM_NON_BLOCKING (1).
  Stream(Context& context, StreamKind kind, unsigned flags, int priority);
  ~Stream() override;  // drains the queue

  Context& context() { return context_; }
  StreamKind streamKind() const { return kind_; }
  // cuStreamGetId: unique for the life of the process, never reused by a later stream.
  uint64_t id() const { return id_; }
  unsigned flags() const { return flags_; }
  int priority() const { return priority_.load(); }
  void setPriority(int priority) { priority_.store(priority); }
  // True once the stream is being destroyed: blocking commands (memory waits) give up.
  bool stopping() const;
  // cuStreamSetAttribute's stored values (CUlaunchAttributeValue bytes), by attribute id.
  struct AttributeValue {
    unsigned char bytes[64] = {};
  };
  bool attribute(unsigned id, AttributeValue* out) const;  // false when never set
  void setAttribute(unsigned id, const AttributeValue& value);
  bool blocking() const { return (flags_ & 1u) == 0; }
  // The green context the stream was made in (its kernels run on its share of the device), or
  // nullptr. Set once, before the stream is handed out.
  GreenContext* greenContext() const { return green_; }
  void setGreenContext(GreenContext* green) { green_ = green; }

  // Queue `work` after everything already queued and after `dependencies`. Returns its completion.
  // A failed dependency does not stop `work`; errors surface through the context.
  // `skipAfterFailure`: once a kernel of the context has failed, the command completes with the
  // sticky error instead of running (Context::runUnlessFailed).
  CompletionPtr enqueue(std::string name, std::function<Status()> work,
                        std::vector<CompletionPtr> dependencies = {},
                        CommandKind kind = CommandKind::HostStep, bool skipAfterFailure = false);
  // cuStreamWaitEvent: a command that waits for `completion`, so later work runs after it and
  // the stream is not idle until it completes.
  void enqueueWait(CompletionPtr completion);
  // Completion of the last queued command (nullptr when nothing was ever queued).
  CompletionPtr tail() const;

  Status synchronize();  // wait for all queued work; the context's sticky error, if any
  // Wait for `command` (a completion of this stream's), running on the calling thread the device
  // work before it that the worker has not started (on devices whose device work runs on the
  // host: the CPU device).
  void waitFor(const CompletionPtr& command);
  // The same for all work queued so far.
  void finish();
  // Whether everything queued so far has finished (cuStreamQuery; what the legacy stream's work
  // need not wait for).
  bool idle() const;

  // Stream capture: while capture() is set, Context::enqueue records operations into its graph
  // instead of queueing them. setCapture(nullptr) ends it; returns the previous state.
  CaptureStatePtr capture() const;
  CaptureStatePtr setCapture(CaptureStatePtr capture);
  // The nodes the next captured operation depends on (cuStreamGetCaptureInfo's set).
  std::vector<GraphNode*> captureDependencies() const;
  void setCaptureDependencies(std::vector<GraphNode*> nodes);

 private:
  struct Command {
    std::string name;
    std::function<Status()> work;
    std::vector<CompletionPtr> dependencies;
    CompletionPtr completion;
    CommandKind kind = CommandKind::HostStep;
    bool skipAfterFailure = false;
    Status issued;  // a DeviceStep's own result, while its device work may still be queued
  };
  void workerLoop();
  // The front command, marked taken (under the lock); its slot keeps the completion.
  Command takeFront();
  // Pop the front command once it ran; `finished` (when not null) goes to finished_.
  void retireFront(Command* finished);
  // Run `command`'s work (or answer the sticky error); logs a failure.
  Status execute(Command& command);
  // Run the front command here if it is device work nobody has taken; otherwise false, with
  // the front's completion in `running` (nothing when the queue is empty).
  bool runFrontHere(CompletionPtr* running);
  // Nothing queued and nothing left on the device: every command queued so far has finished.
  // Two loads and no reference taken (an atomic shared_ptr's load takes a lock bit and a count):
  // synchronisations and the legacy stream's work ask it of every stream.
  bool drained() const;

  Context& context_;
  GreenContext* green_ = nullptr;
  StreamKind kind_;
  uint64_t id_;
  unsigned flags_;
  std::atomic<int> priority_;
  // The host enqueues while the worker takes the previous command: a lock that polls first.
  mutable support::ShortLock mutex_;
  std::map<unsigned, AttributeValue> attributes_;
  std::condition_variable_any cv_;
  support::Fifo<Command> queue_;
  // Commands the worker has finished, for the next enqueue to destroy (or the worker, once the
  // queue is empty): the enqueuing thread made a command's allocations (its closure, name and
  // completion), and frees on the worker would contend with that thread's next allocations for
  // the C library's arena lock, a sleep in the kernel for both.
  std::vector<Command> finished_;
  // Written under the lock by whoever queues, takes or retires a command, read without it by the
  // worker while it waits: one cache line of their own, so that a host thread's writes cost at
  // most a miss or two per command.
  struct alignas(64) QueueSignals {
    std::atomic<size_t> queued{0};        // queue_.size()
    std::atomic<bool> frontTaken{false};  // the front command runs (worker or synchronising thread)
    std::atomic<uint64_t> changes{0};     // commands queued and retired so far
    std::atomic<size_t> inFlight{0};      // retired DeviceSteps the device has yet to finish
    std::atomic<size_t> hostSteps{0};     // HostSteps queued (only the worker runs them)
  } signals_;
  // Device work may run on a synchronising thread: the device queues none of it (StreamQueue).
  bool hostRunsDeviceSteps_;
  // Read without the queue's lock: synchronisations and other streams' dependencies ask for it
  // while the worker holds the lock to take a command, and a contended lock sleeps in the kernel.
  std::atomic<CompletionPtr> tail_;
  std::atomic<CaptureStatePtr> capture_;  // read at every launch and copy: no lock either
  // Whether capture_ is set: loading an atomic shared_ptr takes its lock bit and a reference, a
  // cache line written per stream that the legacy stream's launches visit on every stream.
  std::atomic<bool> capturing_{false};
  std::vector<GraphNode*> captureDependencies_;
  bool stopping_ = false;
  std::thread worker_;
};

class Event : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Event;
  // flags: CU_EVENT_BLOCKING_SYNC 1, CU_EVENT_DISABLE_TIMING 2, CU_EVENT_INTERPROCESS 4.
  Event(Context& context, unsigned flags);

  Context& context() { return context_; }
  unsigned flags() const { return flags_; }
  bool timingDisabled() const { return (flags_ & 2u) != 0; }

  // On a capturing stream the record notes the capture and the stream's dependency set (a fork
  // point for cuStreamWaitEvent) instead of queueing anything.
  Status record(Stream& stream);
  // The completion of the latest record (nullptr when never recorded).
  CompletionPtr completion() const;
  // An event-record node of a launched graph: the event completes with `completion`.
  void recordCompletion(CompletionPtr completion);
  // The capture the latest record was made in, and the nodes it followed (null when none).
  CaptureStatePtr captureRecord(std::vector<GraphNode*>* nodes) const;
  // Both refuse an event whose latest record was made in a capture (CapturedEvent): it stands
  // for a graph node, which has no completion to wait for.
  Status synchronize() const;
  Result<bool> query() const;  // true when complete (or never recorded)

  // CU_EVENT_INTERPROCESS events keep their state in memory shared with other processes
  // (core/ipc.h), made at the first record or export; an event opened from another process's
  // handle adopts that process's state. interprocess() is null for other events.
  Result<std::shared_ptr<InterprocessEvent>> interprocessState();
  std::shared_ptr<InterprocessEvent> interprocess() const;
  void adoptInterprocess(std::shared_ptr<InterprocessEvent> state);

 private:
  Context& context_;
  unsigned flags_;
  mutable std::mutex mutex_;
  std::shared_ptr<InterprocessEvent> interprocess_;
  CompletionPtr completion_;
  CaptureStatePtr capturedIn_;
  std::vector<GraphNode*> capturedAfter_;
};

// The completion of the last work queued on each of `streams` now (streams with none left out).
std::vector<CompletionPtr> tailsOf(const std::vector<Stream*>& streams);

// Where context-wide event records go (cuCtxRecordEvent, cuGreenCtxRecordEvent): an internal
// stream of the context, made at the first record, that no application handle names.
class RecordStream {
 public:
  explicit RecordStream(Context& context) : context_(context) {}
  // `event` completes once every completion in `work` has.
  void record(Event& event, std::vector<CompletionPtr> work, const char* name);
  // The last record's completion (nullptr when none): the owner's synchronisations wait for it.
  CompletionPtr tail() const;
  // The stream, taken away to be destroyed (nullptr when never made).
  std::unique_ptr<Stream> release();

 private:
  Context& context_;
  mutable std::mutex mutex_;
  std::unique_ptr<Stream> stream_;
};

// The events a context waits for (cuCtxWaitEvent, cuGreenCtxWaitEvent): every command queued
// on its streams afterwards depends on each, until it completes.
class EventWaits {
 public:
  // The latest record of `event` (nothing when never recorded). Refuses an event recorded in a
  // capture still going on (StreamCaptureUnsupported, the capture invalidated).
  Status add(const Event& event);
  // Those still pending, appended to a command's dependencies (the completed ones dropped).
  void appendTo(std::vector<CompletionPtr>& dependencies);
  void clear();

 private:
  support::ShortLock mutex_;
  std::vector<CompletionPtr> pending_;
};

// ---- Stream memory operations (cuStreamWaitValue*/WriteValue*/BatchMemOp) ----
// The wait conditions of CUstreamWaitValue_flags, in their numbering.
enum class WaitCondition : uint8_t { Geq = 0, Eq = 1, And = 2, Nor = 3 };

struct MemoryOperation {
  enum class Kind : uint8_t { Wait, Write, Barrier } kind = Kind::Barrier;
  void* address = nullptr;
  uint64_t value = 0;
  bool is64 = false;
  WaitCondition condition = WaitCondition::Geq;
};

// Whether a wait on `current` for `value` is satisfied (GEQ is cyclic: (intN)(current - value)
// >= 0, as CUDA defines it).
bool waitConditionHolds(WaitCondition condition, uint64_t current, uint64_t value, bool is64);

// The name of the command enqueueMemoryOperations queues (a capture records a batch
// memory-operation node for it).
inline constexpr const char* kMemoryOperationsName = "stream memory operations";

// Queue `operations` on `stream` as one command, in order: a wait blocks the stream (and only
// it) until its condition holds, polling the memory through the device backend. Addresses must
// be validated by the caller.
Result<CompletionPtr> enqueueMemoryOperations(Stream& stream, std::vector<MemoryOperation> ops);

// Milliseconds between two completed records. Errors: NotReady (a record not finished),
// InvalidHandle (never recorded or timing disabled, as CUDA reports).
Result<float> elapsedMilliseconds(const Event& start, const Event& end);

}  // namespace rocuda::core
