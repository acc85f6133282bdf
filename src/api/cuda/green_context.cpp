// Green contexts: a device's multiprocessors as a resource (cuDeviceGetDevResource), split into
// groups (cuDevSmResourceSplitByCount), made into a descriptor (cuDevResourceGenerateDesc) that
// provisions a green context (cuGreenCtxCreate), whose streams run kernels on that share only
// (core/green_context.h). On the CPU device a multiprocessor is one thread of the block pool, so
// a green context of N multiprocessors runs at most N blocks at once.
#include "core/green_context.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

// Where a CUdevResource came from, kept in the bytes the ABI leaves to the driver
// (_internal_padding): the application copies resources by value, so nothing else can follow
// them.
struct ResourceOrigin {
  uint32_t magic = 0;
  int32_t device = 0;
  // The cuDevSmResourceSplitByCount call that made it (from 1), and its place there (the
  // remainder is kRemainder); split 0 is a whole device, context or green context.
  uint64_t split = 0;
  uint32_t part = 0;
};
static_assert(sizeof(ResourceOrigin) <= sizeof(CUdevResource::_internal_padding));
constexpr uint32_t kResourceMagic = 0x52534d31;  // "RSM1"
constexpr uint32_t kRemainder = UINT32_MAX;
// Multiprocessors are interchangeable here (the CPU device's are pool threads): any count is a
// partition, aligned to one.
constexpr unsigned kMinPartition = 1;
constexpr unsigned kCoscheduledAlignment = 1;

CUdevResource smResource(int device, uint32_t multiprocessors, uint64_t split, uint32_t part) {
  CUdevResource resource{};
  resource.type = CU_DEV_RESOURCE_TYPE_SM;
  ResourceOrigin origin{kResourceMagic, device, split, part};
  std::memcpy(resource._internal_padding, &origin, sizeof origin);
  resource.sm.smCount = multiprocessors;
  resource.sm.minSmPartitionSize = kMinPartition;
  resource.sm.smCoscheduledAlignment = kCoscheduledAlignment;
  return resource;
}

// A resource this driver made: InvalidResourceType for another type, InvalidValue for bytes
// that did not come from it.
Outcome readResource(const CUdevResource& resource, ResourceOrigin& origin) {
  if (resource.type != CU_DEV_RESOURCE_TYPE_SM)
    return {CUDA_ERROR_INVALID_RESOURCE_TYPE, "only CU_DEV_RESOURCE_TYPE_SM resources exist"};
  std::memcpy(&origin, resource._internal_padding, sizeof origin);
  if (origin.magic != kResourceMagic)
    return invalidValue(
        "the resource was not made by cuDeviceGetDevResource, cuCtxGetDevResource, "
        "cuGreenCtxGetDevResource or cuDevSmResourceSplitByCount");
  return {};
}

Outcome writeResource(CUdevResource* resource, CUdevResourceType type, int device,
                      uint32_t multiprocessors) {
  if (resource == nullptr) return invalidValue("resource is NULL");
  if (type != CU_DEV_RESOURCE_TYPE_SM)
    return {CUDA_ERROR_INVALID_RESOURCE_TYPE, "only CU_DEV_RESOURCE_TYPE_SM resources exist"};
  *resource = smResource(device, multiprocessors, 0, 0);
  return {};
}

uint32_t multiprocessorsOf(core::Device& device) {
  return static_cast<uint32_t>(device.description().multiprocessorCount);
}

// Green contexts and descriptors are never freed (streams made in a destroyed green context
// still name it; descriptors have no destroy call): the registry tells a destroyed green context
// (ContextIsDestroyed) from a pointer that never was one (InvalidContext) without dereferencing
// either.
struct GreenRegistry {
  std::mutex mutex;
  std::unordered_map<const void*, std::unique_ptr<core::GreenContext>> greens;  // by handle
  std::vector<std::unique_ptr<core::ResourceDescriptor>> descriptors;
  uint64_t lastSplit = 0;
};

GreenRegistry& registry() {
  static GreenRegistry* instance = new GreenRegistry();
  return *instance;
}

Result<core::GreenContext*> lookupGreen(CUgreenCtx handle) {
  core::GreenContext* green = nullptr;
  {
    GreenRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    auto found = r.greens.find(handle);
    if (found == r.greens.end()) return makeError(ErrorCode::InvalidContext, "not a green context");
    green = found->second.get();
  }
  if (green->destroyed())
    return makeError(ErrorCode::ContextIsDestroyed, "the green context was destroyed");
  return green;
}

Outcome splitByCount(CUdevResource* result, unsigned* nbGroups, const CUdevResource* input,
                     CUdevResource* remaining, unsigned useFlags, unsigned minCount) {
  if (nbGroups == nullptr || input == nullptr) return invalidValue("nbGroups or input is NULL");
  ResourceOrigin origin;
  if (Outcome read = readResource(*input, origin); !read.ok()) return read;
  if ((useFlags & ~unsigned{CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING |
                            CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE}) != 0)
    return invalidValue("unknown useFlags");
  if (origin.split != 0)
    return {CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
            "a split's groups are split again only once a green context holds them "
            "(cuDevResourceGenerateDesc, cuGreenCtxCreate, cuGreenCtxGetDevResource)"};
  uint32_t available = input->sm.smCount;
  if (minCount > available)
    return {CUDA_ERROR_INVALID_VALUE, "minCount " + std::to_string(minCount) +
                                          " is more than the " + std::to_string(available) +
                                          " multiprocessors of the input"};
  // Each group: minCount, at least the minimum partition, rounded up to the alignment.
  uint32_t size = std::max(minCount, kMinPartition);
  size = (size + kCoscheduledAlignment - 1) / kCoscheduledAlignment * kCoscheduledAlignment;
  uint32_t possible = available / size;
  if (result == nullptr) {  // a query of how many groups a split would make
    *nbGroups = possible;
    return {};
  }
  if (*nbGroups == 0) return invalidValue("nbGroups is 0 with a result array");
  uint32_t made = std::min(*nbGroups, possible);
  uint64_t split = 0;
  {
    GreenRegistry& r = registry();
    std::lock_guard lock(r.mutex);
    split = ++r.lastSplit;
  }
  for (uint32_t i = 0; i < made; ++i) result[i] = smResource(origin.device, size, split, i);
  if (remaining != nullptr)
    *remaining = smResource(origin.device, available - made * size, split, kRemainder);
  *nbGroups = made;
  return {};
}

Outcome generateDesc(CUdevResourceDesc* phDesc, CUdevResource* resources, unsigned count) {
  if (phDesc == nullptr || resources == nullptr || count == 0)
    return invalidValue("phDesc or resources is NULL, or nbResources is 0");
  ResourceOrigin first;
  if (Outcome read = readResource(resources[0], first); !read.ok()) return read;
  uint64_t multiprocessors = 0;
  std::unordered_set<uint32_t> parts;
  for (unsigned i = 0; i < count; ++i) {
    ResourceOrigin origin;
    if (Outcome read = readResource(resources[i], origin); !read.ok()) return read;
    if (origin.device != first.device)
      return {CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "the resources are of different devices"};
    if (count > 1 && (origin.split == 0 || origin.split != first.split))
      return {CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION,
              "several resources must all come from one cuDevSmResourceSplitByCount call"};
    if (!parts.insert(origin.part).second)
      return {CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "a resource is given twice"};
    multiprocessors += resources[i].sm.smCount;
  }
  if (multiprocessors == 0)
    return {CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "the resources hold no multiprocessor"};
  GreenRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.descriptors.push_back(std::make_unique<core::ResourceDescriptor>(
      first.device, static_cast<uint32_t>(multiprocessors)));
  *phDesc = reinterpret_cast<CUdevResourceDesc>(r.descriptors.back().get());
  return {};
}

Outcome createGreen(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned flags) {
  if (phCtx == nullptr) return invalidValue("phCtx is NULL");
  auto* descriptor = core::lookupHandle<core::ResourceDescriptor>(desc);
  if (descriptor == nullptr) return invalidValue("not a descriptor of cuDevResourceGenerateDesc");
  Result<core::Device*> device = lookupDevice(dev);
  if (!device) return device.error();
  if (descriptor->device != dev)
    return {
        CUDA_ERROR_INVALID_VALUE,
        "the descriptor holds device " + std::to_string(descriptor->device) + "'s multiprocessors"};
  if (flags != CU_GREEN_CTX_DEFAULT_STREAM)
    return invalidValue("flags must be CU_GREEN_CTX_DEFAULT_STREAM");
  core::Context* primary = nullptr;
  if (Status retained = (*device)->retainPrimary(&primary); !retained.ok()) return retained;
  auto green = std::make_unique<core::GreenContext>(*primary, descriptor->multiprocessors);
  core::GreenContext* raw = green.get();
  GreenRegistry& r = registry();
  std::lock_guard lock(r.mutex);
  r.greens.emplace(raw, std::move(green));
  *phCtx = reinterpret_cast<CUgreenCtx>(raw);
  return {};
}

Outcome destroyGreen(CUgreenCtx hCtx) {
  Result<core::GreenContext*> green = lookupGreen(hCtx);
  if (!green) return green.error();
  (*green)->destroy();
  core::forgetGreenContext(*green);
  return (*green)->primary().device().releasePrimary();
}

// A green context and an event: a record needs an event of its primary context.
Outcome greenAndEvent(CUgreenCtx hCtx, CUevent hEvent, bool sameContext, core::GreenContext*& green,
                      core::Event*& event) {
  Result<core::GreenContext*> g = lookupGreen(hCtx);
  if (!g) return g.error();
  Result<core::Event*> e = lookupEvent(hEvent);
  if (!e) return e.error();
  if (sameContext && &(*e)->context() != &(*g)->primary())
    return {CUDA_ERROR_INVALID_HANDLE, "the event belongs to another context"};
  green = *g;
  event = *e;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource* resource,
                                              CUdevResourceType type) {
  return ROCUDA_API((device, resource, type), [&]() -> api::Outcome {
    if (resource == nullptr) return api::invalidValue("resource is NULL");
    Result<core::Device*> found = api::lookupDevice(device);
    if (!found) return found.error();
    return api::writeResource(resource, type, device, api::multiprocessorsOf(**found));
  });
}

ROCUDA_EXPORT CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource* resource,
                                           CUdevResourceType type) {
  return ROCUDA_API((hCtx, resource, type), [&]() -> api::Outcome {
    Result<core::CurrentContext> entry = api::lookupContextEntry(hCtx);
    if (!entry) return entry.error();
    core::Device& device = entry->context->device();
    uint32_t multiprocessors =
        entry->green != nullptr ? entry->green->multiprocessors() : api::multiprocessorsOf(device);
    return api::writeResource(resource, type, device.ordinal(), multiprocessors);
  });
}

ROCUDA_EXPORT CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource* resource,
                                                CUdevResourceType type) {
  return ROCUDA_API((hCtx, resource, type), [&]() -> api::Outcome {
    Result<core::GreenContext*> green = api::lookupGreen(hCtx);
    if (!green) return green.error();
    return api::writeResource(resource, type, (*green)->primary().device().ordinal(),
                              (*green)->multiprocessors());
  });
}

ROCUDA_EXPORT CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups,
                                                   const CUdevResource* input,
                                                   CUdevResource* remaining, unsigned int useFlags,
                                                   unsigned int minCount) {
  return ROCUDA_API((result, nbGroups, input, remaining, useFlags, minCount), [&] {
    return api::splitByCount(result, nbGroups, input, remaining, useFlags, minCount);
  });
}

ROCUDA_EXPORT CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc,
                                                 CUdevResource* resources,
                                                 unsigned int nbResources) {
  return ROCUDA_API((phDesc, resources, nbResources),
                    [&] { return api::generateDesc(phDesc, resources, nbResources); });
}

ROCUDA_EXPORT CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev,
                                        unsigned int flags) {
  return ROCUDA_API((phCtx, desc, dev, flags),
                    [&] { return api::createGreen(phCtx, desc, dev, flags); });
}

ROCUDA_EXPORT CUresult cuGreenCtxDestroy(CUgreenCtx hCtx) {
  return ROCUDA_API((hCtx), [&] { return api::destroyGreen(hCtx); });
}

ROCUDA_EXPORT CUresult cuCtxFromGreenCtx(CUcontext* pContext, CUgreenCtx hCtx) {
  return ROCUDA_API((pContext, hCtx), [&]() -> api::Outcome {
    if (pContext == nullptr) return api::invalidValue("pContext is NULL");
    Result<core::GreenContext*> green = api::lookupGreen(hCtx);
    if (!green) return green.error();
    *pContext = api::contextHandle({&(*green)->primary(), *green});
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGreenCtxGetId(CUgreenCtx greenCtx, unsigned long long* greenCtxId) {
  return ROCUDA_API((greenCtx, greenCtxId), [&]() -> api::Outcome {
    if (greenCtxId == nullptr) return api::invalidValue("greenCtxId is NULL");
    if (greenCtx == nullptr) {  // the current green context's
      Result<core::Context*> current = api::currentContext();
      if (!current) return current.error();
      core::GreenContext* green = core::currentGreenContext();
      if (green == nullptr)
        return {CUDA_ERROR_INVALID_CONTEXT, "greenCtx is NULL and no green context is current"};
      *greenCtxId = green->id();
      return {};
    }
    Result<core::GreenContext*> green = api::lookupGreen(greenCtx);
    if (!green) return green.error();
    *greenCtxId = (*green)->id();
    return {};
  });
}

ROCUDA_EXPORT CUresult cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return ROCUDA_API((hCtx, hEvent), [&]() -> api::Outcome {
    core::GreenContext* green = nullptr;
    core::Event* event = nullptr;
    if (api::Outcome ok = api::greenAndEvent(hCtx, hEvent, true, green, event); !ok.ok()) return ok;
    return green->recordAllWork(*event);
  });
}

ROCUDA_EXPORT CUresult cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent) {
  return ROCUDA_API((hCtx, hEvent), [&]() -> api::Outcome {
    core::GreenContext* green = nullptr;
    core::Event* event = nullptr;
    if (api::Outcome ok = api::greenAndEvent(hCtx, hEvent, false, green, event); !ok.ok())
      return ok;
    return green->waitForEvent(*event);
  });
}

ROCUDA_EXPORT CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx,
                                              unsigned int flags, int priority) {
  return ROCUDA_API((phStream, greenCtx, flags, priority), [&]() -> api::Outcome {
    if (phStream == nullptr) return api::invalidValue("phStream is NULL");
    Result<core::GreenContext*> green = api::lookupGreen(greenCtx);
    if (!green) return green.error();
    if (flags != CU_STREAM_NON_BLOCKING)
      return api::invalidValue("flags must be CU_STREAM_NON_BLOCKING");
    core::Device& device = (*green)->primary().device();
    Result<core::Stream*> stream =
        (*green)->createStream(flags, core::clampStreamPriority(priority, device.description()));
    if (!stream) return stream.error();
    *phStream = reinterpret_cast<CUstream>(*stream);
    return {};
  });
}

// The special handles name the current context's default stream: the green context's when one
// is current (whose green context it is), the legacy stream's otherwise (none).
ROCUDA_EXPORT CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx* phCtx) {
  return ROCUDA_API((hStream, phCtx), [&]() -> api::Outcome {
    if (phCtx == nullptr) return api::invalidValue("phCtx is NULL");
    Result<core::Stream*> stream = api::resolveStream(hStream, api::StreamVariant::Legacy);
    if (!stream) return stream.error();
    *phCtx = reinterpret_cast<CUgreenCtx>((*stream)->greenContext());
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
