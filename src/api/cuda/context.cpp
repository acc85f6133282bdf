// Contexts: primary contexts, created contexts, the per-thread context stack, limits and
// preferences, and synchronisation.
#include "core/context.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "api/cuda/boundary.h"
#include "api/cuda/context_state.h"
#include "core/green_context.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

CUcontext toHandle(core::Context* context) { return reinterpret_cast<CUcontext>(context); }

// Contexts made by cuCtxCreate; the core owns primary contexts.
struct CreatedContexts {
  std::mutex mutex;
  std::unordered_map<core::Context*, std::unique_ptr<core::Context>> owned;
  // cuCtxAttach's usage counts beyond the creator's (absent: 0), for any context.
  std::unordered_map<core::Context*, unsigned> attached;
};

CreatedContexts& created() {
  static CreatedContexts* instance = new CreatedContexts();
  return *instance;
}

// Context flags: known bits only, and "only one of the scheduling flags can be set".
Outcome checkContextFlags(unsigned flags) {
  if ((flags & ~static_cast<unsigned>(CU_CTX_FLAGS_MASK)) != 0) return invalidValue("bad flags");
  unsigned schedule = flags & static_cast<unsigned>(CU_CTX_SCHED_MASK);
  if ((schedule & (schedule - 1)) != 0) return invalidValue("more than one scheduling flag");
  return {};
}

Outcome createContext(CUcontext* pctx, unsigned flags, CUdevice dev) {
  if (pctx == nullptr) return invalidValue("pctx is NULL");
  if (Outcome checked = checkContextFlags(flags); !checked.ok()) return checked;
  Result<core::Device*> device = lookupDevice(dev);
  if (!device) return device.error();
  auto context = std::make_unique<core::Context>(**device, flags, /*primary=*/false);
  core::Context* raw = context.get();
  {
    CreatedContexts& c = created();
    std::lock_guard lock(c.mutex);
    c.owned.emplace(raw, std::move(context));
  }
  core::pushContext(raw);
  *pctx = toHandle(raw);
  return {};
}

Outcome destroyContext(CUcontext ctx) {
  if (core::GreenContext::fromContextHandle(ctx) != nullptr)
    return {CUDA_ERROR_INVALID_CONTEXT, "a green context is destroyed with cuGreenCtxDestroy"};
  Result<core::Context*> context = lookupContext(ctx);
  if (!context) return context.error();
  std::unique_ptr<core::Context> owned;
  {
    CreatedContexts& c = created();
    std::lock_guard lock(c.mutex);
    auto it = c.owned.find(*context);
    if (it == c.owned.end())
      return {CUDA_ERROR_INVALID_CONTEXT,
              "a primary context cannot be destroyed with cuCtxDestroy"};
    owned = std::move(it->second);
    c.owned.erase(it);
    c.attached.erase(*context);
  }
  releaseContextState(owned.get());
  core::releaseContextResources(*owned);  // as the primary context's reset does
  core::forgetContext(owned.get());
  owned.reset();
  return {};
}

Outcome primaryRelease(CUdevice dev) {
  Result<core::Device*> device = lookupDevice(dev);
  if (!device) return device.error();
  return (*device)->releasePrimary();
}

Outcome primarySetFlags(CUdevice dev, unsigned flags, bool refuseWhenActive) {
  Result<core::Device*> device = lookupDevice(dev);
  if (!device) return device.error();
  if (Outcome checked = checkContextFlags(flags); !checked.ok()) return checked;
  if (refuseWhenActive && (*device)->primaryActive())
    return {CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "the primary context is active"};
  return (*device)->setPrimaryFlags(flags);
}

Outcome primaryReset(CUdevice dev) {
  Result<core::Device*> device = lookupDevice(dev);
  if (!device) return device.error();
  // A reset destroys the context as far as cudart can see: its storage goes with it.
  releaseContextState(&(*device)->primaryContext());
  return (*device)->resetPrimary();
}

// `ctx`, or the current context when ctx is NULL.
Result<core::Context*> contextOrCurrent(CUcontext ctx) {
  return ctx == nullptr ? currentContext() : lookupContext(ctx);
}

// The same with the green context `ctx` (or the current entry) names, if any.
Result<core::CurrentContext> contextEntryOrCurrent(CUcontext ctx) {
  if (ctx != nullptr) return lookupContextEntry(ctx);
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  return core::CurrentContext{*context, core::currentGreenContext()};
}

Outcome contextDevice(CUdevice* device, CUcontext ctx) {
  if (device == nullptr) return invalidValue("device is NULL");
  Result<core::Context*> context = contextOrCurrent(ctx);
  if (!context) return context.error();
  *device = (*context)->device().ordinal();
  return {};
}

// A green context waits for its own streams; the primary context for all of its streams, those
// of its green contexts included.
Outcome synchronizeContext(CUcontext ctx) {
  Result<core::CurrentContext> entry = contextEntryOrCurrent(ctx);
  if (!entry) return entry.error();
  if (entry->green != nullptr) return entry->green->synchronize();
  return entry->context->synchronize();
}

Result<core::ContextLimit> toLimit(CUlimit limit) {
  if (limit < 0 || limit >= CU_LIMIT_MAX)
    return makeError(ErrorCode::InvalidValue, "unknown CUlimit");
  return static_cast<core::ContextLimit>(limit);
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return ROCUDA_API((pctx, dev), [&]() -> api::Outcome {
    if (pctx == nullptr) return api::invalidValue("pctx is NULL");
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    core::Context* context = nullptr;
    Status status = (*device)->retainPrimary(&context);
    if (!status) return status;
    *pctx = api::toHandle(context);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return ROCUDA_API((dev), [&] { return api::primaryRelease(dev); });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return ROCUDA_API((dev), [&] { return api::primaryRelease(dev); });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return ROCUDA_API((dev, flags), [&] { return api::primarySetFlags(dev, flags, true); });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return ROCUDA_API((dev, flags), [&] { return api::primarySetFlags(dev, flags, false); });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  return ROCUDA_API((dev, flags, active), [&]() -> api::Outcome {
    if (flags == nullptr || active == nullptr) return api::invalidValue("NULL argument");
    Result<core::Device*> device = api::lookupDevice(dev);
    if (!device) return device.error();
    *flags = (*device)->primaryFlags();
    *active = (*device)->primaryActive() ? 1 : 0;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return ROCUDA_API((dev), [&] { return api::primaryReset(dev); });
}

ROCUDA_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return ROCUDA_API((dev), [&] { return api::primaryReset(dev); });
}

ROCUDA_EXPORT CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return ROCUDA_API((pctx, flags, dev), [&] { return api::createContext(pctx, flags, dev); });
}

ROCUDA_EXPORT CUresult cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray,
                                      int numParams, unsigned int flags, CUdevice dev) {
  return ROCUDA_API((pctx, paramsArray, numParams, flags, dev), [&]() -> api::Outcome {
    if (numParams < 0 || (numParams > 0 && paramsArray == nullptr))
      return api::invalidValue("bad execution affinity parameters");
    if (numParams > 0)
      return {CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "execution affinity is not supported"};
    return api::createContext(pctx, flags, dev);
  });
}

ROCUDA_EXPORT CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                                      unsigned int flags, CUdevice dev) {
  return ROCUDA_API((pctx, ctxCreateParams, flags, dev), [&]() -> api::Outcome {
    if (ctxCreateParams != nullptr) {
      // "Exactly one of execAffinityParams and cigParams must be non-NULL", with its count.
      if (ctxCreateParams->numExecAffinityParams < 0 ||
          (ctxCreateParams->numExecAffinityParams > 0 &&
           ctxCreateParams->execAffinityParams == nullptr))
        return api::invalidValue("execAffinityParams and numExecAffinityParams disagree");
      if (ctxCreateParams->numExecAffinityParams > 0 && ctxCreateParams->cigParams != nullptr)
        return api::invalidValue("execAffinityParams and cigParams are exclusive");
      if (ctxCreateParams->numExecAffinityParams > 0)
        return {CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "execution affinity is not supported"};
      if (ctxCreateParams->cigParams != nullptr)
        return {CUDA_ERROR_NOT_SUPPORTED, "CUDA in graphics contexts is not supported"};
    }
    return api::createContext(pctx, flags, dev);
  });
}

ROCUDA_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  return ROCUDA_API((ctx), [&] { return api::destroyContext(ctx); });
}

// The deprecated usage count (CUDA 1.x; PyCUDA still calls it): cuCtxAttach counts one more user
// of the current context, cuCtxDetach one less, destroying the context when none is left. A
// created context starts with one (its creator's).
ROCUDA_EXPORT CUresult cuCtxAttach(CUcontext* pctx, unsigned int flags) {
  return ROCUDA_API((pctx, flags), [&]() -> api::Outcome {
    if (pctx == nullptr) return api::invalidValue("pctx is NULL");
    if (flags != 0) return api::invalidValue("flags must be 0");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    api::CreatedContexts& c = api::created();
    std::lock_guard lock(c.mutex);
    ++c.attached[*context];
    *pctx = api::toHandle(*context);
    return {};
  });
}

// CUDA requires the context to be current to the caller.
ROCUDA_EXPORT CUresult cuCtxDetach(CUcontext ctx) {
  return ROCUDA_API((ctx), [&]() -> api::Outcome {
    Result<core::Context*> context = api::lookupContext(ctx);
    if (!context) return context.error();
    if (core::currentContext() != *context)
      return {CUDA_ERROR_INVALID_CONTEXT, "the context is not current to this thread"};
    {
      api::CreatedContexts& c = api::created();
      std::lock_guard lock(c.mutex);
      auto it = c.attached.find(*context);
      if (it != c.attached.end()) {
        if (--it->second == 0) c.attached.erase(it);
        return {};
      }
    }
    return api::destroyContext(ctx);
  });
}

// cuCtxRecordEvent / cuCtxWaitEvent: an event over everything the context has queued, and a
// wait that every later operation of the context honours (core::Context::recordAllWork).
namespace {
// A record needs the event of the same context; a wait takes one of any context or device. A
// green context's handle records and waits for the green context's work only.
api::Outcome contextAndEvent(CUcontext hCtx, CUevent hEvent, bool sameContext,
                             core::CurrentContext& context, core::Event*& event) {
  Result<core::CurrentContext> found = api::contextEntryOrCurrent(hCtx);
  if (!found) return found.error();
  Result<core::Event*> e = api::lookupEvent(hEvent);
  if (!e) return e.error();
  if (sameContext && &(*e)->context() != found->context)
    return {CUDA_ERROR_INVALID_HANDLE, "the event belongs to another context"};
  context = *found;
  event = *e;
  return {};
}
}  // namespace

ROCUDA_EXPORT CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  return ROCUDA_API((hCtx, hEvent), [&]() -> api::Outcome {
    core::CurrentContext context;
    core::Event* event = nullptr;
    if (api::Outcome ok = contextAndEvent(hCtx, hEvent, true, context, event); !ok.ok()) return ok;
    if (context.green != nullptr) return context.green->recordAllWork(*event);
    return context.context->recordAllWork(*event);
  });
}

ROCUDA_EXPORT CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
  return ROCUDA_API((hCtx, hEvent), [&]() -> api::Outcome {
    core::CurrentContext context;
    core::Event* event = nullptr;
    if (api::Outcome ok = contextAndEvent(hCtx, hEvent, false, context, event); !ok.ok()) return ok;
    if (context.green != nullptr) return context.green->waitForEvent(*event);
    return context.context->waitForEvent(*event);
  });
}

ROCUDA_EXPORT CUresult cuCtxGetExecAffinity(CUexecAffinityParam* pExecAffinity,
                                            CUexecAffinityType type) {
  return ROCUDA_API((pExecAffinity, type), [&]() -> api::Outcome {
    if (pExecAffinity == nullptr) return api::invalidValue("pExecAffinity is NULL");
    if (type < CU_EXEC_AFFINITY_TYPE_SM_COUNT || type >= CU_EXEC_AFFINITY_TYPE_MAX)
      return api::invalidValue("unknown affinity type");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return {CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY,
            "no device here supports execution affinity (cuDeviceGetExecAffinitySupport)"};
  });
}

ROCUDA_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  return ROCUDA_API((flags), [&]() -> api::Outcome {
    if (flags == nullptr) return api::invalidValue("flags is NULL");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    *flags = (*context)->flags();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxSetFlags(unsigned int flags) {
  return ROCUDA_API((flags), [&]() -> api::Outcome {
    if (api::Outcome checked = api::checkContextFlags(flags); !checked.ok()) return checked;
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    // A primary context's flags are its device's (cuDevicePrimaryCtxGetState reads them there).
    if ((*context)->isPrimary()) return (*context)->device().setPrimaryFlags(flags);
    (*context)->setFlags(flags);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  return ROCUDA_API((ctx), [&]() -> api::Outcome {
    if (ctx == nullptr) {
      core::setCurrentContext(nullptr);
      return {};
    }
    Result<core::CurrentContext> entry = api::lookupContextEntry(ctx);
    if (!entry) return entry.error();
    core::setCurrentContext(entry->context, entry->green);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  return ROCUDA_API((pctx), [&]() -> api::Outcome {
    if (pctx == nullptr) return api::invalidValue("pctx is NULL");
    *pctx = api::contextHandle({core::currentContext(), core::currentGreenContext()});
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return ROCUDA_API((ctx), [&]() -> api::Outcome {
    Result<core::CurrentContext> entry = api::lookupContextEntry(ctx);
    if (!entry) return entry.error();
    core::pushContext(entry->context, entry->green);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  return ROCUDA_API((pctx), [&]() -> api::Outcome {
    if (core::currentContext() == nullptr)
      return {CUDA_ERROR_INVALID_CONTEXT, "no current context"};
    core::CurrentContext popped = core::popContext();
    if (pctx != nullptr) *pctx = api::contextHandle(popped);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  return ROCUDA_API((ctx, version), [&]() -> api::Outcome {
    if (version == nullptr) return api::invalidValue("version is NULL");
    Result<core::Context*> context = api::contextOrCurrent(ctx);
    if (!context) return context.error();
    *version = 3020;  // every context is created through the 3.2+ (64-bit) API
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  return ROCUDA_API((device), [&] { return api::contextDevice(device, nullptr); });
}

ROCUDA_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  return ROCUDA_API((device, ctx), [&] { return api::contextDevice(device, ctx); });
}

ROCUDA_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId) {
  return ROCUDA_API((ctx, ctxId), [&]() -> api::Outcome {
    if (ctxId == nullptr) return api::invalidValue("ctxId is NULL");
    Result<core::CurrentContext> entry = api::contextEntryOrCurrent(ctx);
    if (!entry) return entry.error();
    *ctxId = entry->green != nullptr ? entry->green->id() : entry->context->id();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxSynchronize() {
  return ROCUDA_API((), [&] { return api::synchronizeContext(nullptr); });
}

ROCUDA_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return ROCUDA_API((ctx), [&] { return api::synchronizeContext(ctx); });
}

ROCUDA_EXPORT CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  return ROCUDA_API((pvalue, limit), [&]() -> api::Outcome {
    if (pvalue == nullptr) return api::invalidValue("pvalue is NULL");
    Result<core::ContextLimit> which = api::toLimit(limit);
    if (!which) return which.error();
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    if (Status sticky = (*context)->stickyError(); !sticky.ok()) return sticky;
    *pvalue = (*context)->limit(*which);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  return ROCUDA_API((limit, value), [&]() -> api::Outcome {
    Result<core::ContextLimit> which = api::toLimit(limit);
    if (!which) return which.error();
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    if (Status sticky = (*context)->stickyError(); !sticky.ok()) return sticky;
    return (*context)->setLimit(*which, value);
  });
}

ROCUDA_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache* pconfig) {
  return ROCUDA_API((pconfig), [&]() -> api::Outcome {
    if (pconfig == nullptr) return api::invalidValue("pconfig is NULL");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    *pconfig = api::cacheConfig(*context);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  return ROCUDA_API((config), [&]() -> api::Outcome {
    if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL)
      return api::invalidValue("unknown cache configuration");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    api::setCacheConfig(*context, config);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxGetSharedMemConfig(CUsharedconfig* pConfig) {
  return ROCUDA_API((pConfig), [&]() -> api::Outcome {
    if (pConfig == nullptr) return api::invalidValue("pConfig is NULL");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    // Every device Rocuda presents (compute capability 5.0 and later) has fixed four-byte banks.
    *pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxSetSharedMemConfig(CUsharedconfig config) {
  return ROCUDA_API((config), [&]() -> api::Outcome {
    if (config < CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ||
        config > CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
      return api::invalidValue("unknown shared memory configuration");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return {};  // "does nothing on devices with fixed shared memory bank size"
  });
}

// The device's range: [0, 0] on the CPU device, which does not schedule by priority; AMD GPUs
// have HIP's levels.
ROCUDA_EXPORT CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  return ROCUDA_API((leastPriority, greatestPriority), [&]() -> api::Outcome {
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    if (leastPriority != nullptr) *leastPriority = 0;
    if (greatestPriority != nullptr)
      *greatestPriority = (*context)->device().description().greatestStreamPriority;
    return {};
  });
}

// No device Rocuda drives has a persisting L2 region, so none holds persisting lines.
ROCUDA_EXPORT CUresult cuCtxResetPersistingL2Cache() {
  return ROCUDA_API((), [&]() -> api::Outcome {
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    return {};
  });
}

// NVIDIA's limit on the peers of one context (CUDA_ERROR_TOO_MANY_PEERS past it).
constexpr size_t kMaxPeers = 8;

// Access from the current context's kernels to the peer context's memory, where the devices can
// (cuDeviceCanAccessPeer): two CPU devices always, two AMD GPUs as HIP reports their link.
ROCUDA_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  return ROCUDA_API((peerContext, Flags), [&]() -> api::Outcome {
    if (Flags != 0) return api::invalidValue("Flags must be 0");
    Result<core::Context*> current = api::currentContext();
    if (!current) return current.error();
    Result<core::Context*> peer = api::lookupContext(peerContext);
    if (!peer) return peer.error();
    // "CUDA_ERROR_INVALID_CONTEXT if ... the current context is peerContext"
    if (*peer == *current)
      return {CUDA_ERROR_INVALID_CONTEXT, "peerContext is the current context"};
    if (&(*peer)->device() == &(*current)->device())
      return {CUDA_ERROR_INVALID_DEVICE, "a context cannot be its own device's peer"};
    backends::DeviceBackend& backend = (*current)->device().backend();
    backends::DeviceBackend& peerBackend = (*peer)->device().backend();
    if (!backend.peerLink(peerBackend).access)
      return {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
              "device " + std::to_string((*current)->device().ordinal()) +
                  " cannot access the memory of device " +
                  std::to_string((*peer)->device().ordinal())};
    if ((*current)->peerAccessEnabled(**peer))
      return {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled"};
    if ((*current)->peersEnabled() >= kMaxPeers)
      return {CUDA_ERROR_TOO_MANY_PEERS,
              "a context reaches at most " + std::to_string(kMaxPeers) + " peers"};
    if (Status enabled = backend.enablePeerAccess(peerBackend); !enabled) return enabled;
    (*current)->setPeerAccess(**peer, true);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  return ROCUDA_API((peerContext), [&]() -> api::Outcome {
    Result<core::Context*> current = api::currentContext();
    if (!current) return current.error();
    Result<core::Context*> peer = api::lookupContext(peerContext);
    if (!peer) return peer.error();
    if (!(*current)->peerAccessEnabled(**peer))
      return {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access was never enabled"};
    (*current)->device().backend().disablePeerAccess((*peer)->device().backend());
    (*current)->setPeerAccess(**peer, false);
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
