// Stream memory operations (cuStreamWaitValue*/WriteValue*/BatchMemOp), stream attributes
// (cuStreamGet/Set/CopyAttributes) and cuStreamAttachMemAsync.
#include <cstring>
#include <optional>
#include <vector>

#include "api/cuda/boundary.h"
#include "api/cuda/graph_internal.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::api {
namespace {

using namespace cuda;

Outcome withStream(CUstream handle, StreamVariant variant, const auto& body) {
  Result<core::Stream*> stream = resolveStream(handle, variant);
  if (!stream) return stream.error();
  return body(**stream);
}

// ---- Memory operations ----

constexpr unsigned kWaitConditionMask = 0x3;
constexpr unsigned kMaxBatchOperations = 256;

// The target of a wait or write: naturally aligned, inside device memory, pinned or registered
// host memory or a module global. Managed memory is refused, as CUDA documents.
Outcome checkOperationAddress(CUdeviceptr address, bool is64) {
  size_t bytes = is64 ? 8 : 4;
  if (address == 0 || address % bytes != 0)
    return invalidValue("the address is NULL or not naturally aligned");
  void* pointer = reinterpret_cast<void*>(address);
  std::optional<core::Allocation> allocation = core::findAllocation(pointer);
  if (!allocation || !core::isInsideAllocation(pointer, bytes))
    return invalidValue("the address is not inside memory the device can access");
  if (allocation->kind == core::AllocationKind::Managed)
    return invalidValue("stream memory operations cannot use managed memory");
  return {};
}

Result<core::MemoryOperation> waitOperation(CUdeviceptr address, uint64_t value, unsigned flags,
                                            bool is64) {
  if ((flags & ~(kWaitConditionMask | CU_STREAM_WAIT_VALUE_FLUSH)) != 0)
    return makeError(ErrorCode::InvalidValue, "unknown wait flags");
  if (Outcome checked = checkOperationAddress(address, is64); !checked.ok())
    return makeError(ErrorCode::InvalidValue, checked.message());
  core::MemoryOperation op;
  op.kind = core::MemoryOperation::Kind::Wait;
  op.address = reinterpret_cast<void*>(address);
  op.value = value;
  op.is64 = is64;
  op.condition = static_cast<core::WaitCondition>(flags & kWaitConditionMask);
  return op;
}

Result<core::MemoryOperation> writeOperation(CUdeviceptr address, uint64_t value, unsigned flags,
                                             bool is64) {
  if (flags != CU_STREAM_WRITE_VALUE_DEFAULT && flags != CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
    return makeError(ErrorCode::InvalidValue, "unknown write flags");
  if (Outcome checked = checkOperationAddress(address, is64); !checked.ok())
    return makeError(ErrorCode::InvalidValue, checked.message());
  core::MemoryOperation op;
  op.kind = core::MemoryOperation::Kind::Write;
  op.address = reinterpret_cast<void*>(address);
  op.value = value;
  op.is64 = is64;
  return op;
}

Result<core::MemoryOperation> batchOperation(const CUstreamBatchMemOpParams& p) {
  switch (p.operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      return waitOperation(p.waitValue.address, p.waitValue.value, p.waitValue.flags, false);
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
      return waitOperation(p.waitValue.address, p.waitValue.value64, p.waitValue.flags, true);
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      return writeOperation(p.writeValue.address, p.writeValue.value, p.writeValue.flags, false);
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
      return writeOperation(p.writeValue.address, p.writeValue.value64, p.writeValue.flags, true);
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      if (p.flushRemoteWrites.flags != 0)
        return makeError(ErrorCode::InvalidValue, "flush flags must be 0");
      return core::MemoryOperation{};
    case CU_STREAM_MEM_OP_BARRIER:
      if (p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_SYS &&
          p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_GPU)
        return makeError(ErrorCode::InvalidValue, "unknown memory barrier type");
      return core::MemoryOperation{};
  }
  return makeError(ErrorCode::InvalidValue, "unknown batch memory operation");
}

// Every stream memory operation goes through here, as a batch: a capturing stream records it as
// one batch memory-operation node (as NVIDIA's driver does, a single write or wait included),
// which keeps the operations for cuGraphBatchMemOpNodeGetParams.
Outcome batchMemOp(CUstream h, unsigned count, CUstreamBatchMemOpParams* params, unsigned flags,
                   StreamVariant v) {
  if (flags != 0) return invalidValue("flags must be 0");
  if (count >= kMaxBatchOperations) return invalidValue("count must be less than 256");
  if (count > 0 && params == nullptr) return invalidValue("paramArray is NULL");
  std::vector<core::MemoryOperation> ops;
  ops.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    Result<core::MemoryOperation> op = batchOperation(params[i]);
    if (!op) return op.error();
    ops.push_back(*op);
  }
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    Result<core::CompletionPtr> queued = core::enqueueMemoryOperations(s, std::move(ops));
    if (!queued) return queued.error();
    keepCapturedBatchMemOpParams(s, params, count);
    return {};
  });
}

Outcome single(CUstream h, StreamVariant v, CUstreamBatchMemOpType type, CUdeviceptr address,
               uint64_t value, unsigned flags) {
  CUstreamBatchMemOpParams op;
  std::memset(&op, 0, sizeof op);
  op.operation = type;
  bool wait = type == CU_STREAM_MEM_OP_WAIT_VALUE_32 || type == CU_STREAM_MEM_OP_WAIT_VALUE_64;
  bool is64 = type == CU_STREAM_MEM_OP_WAIT_VALUE_64 || type == CU_STREAM_MEM_OP_WRITE_VALUE_64;
  auto fill = [&](auto& operation) {
    operation.address = address;
    if (is64)
      operation.value64 = value;
    else
      operation.value = static_cast<cuuint32_t>(value);
    operation.flags = flags;
  };
  if (wait)
    fill(op.waitValue);
  else
    fill(op.writeValue);
  return batchMemOp(h, 1, &op, 0, v);
}

Outcome waitValue32(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned flags,
                    StreamVariant v) {
  return single(h, v, CU_STREAM_MEM_OP_WAIT_VALUE_32, addr, value, flags);
}
Outcome waitValue64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned flags,
                    StreamVariant v) {
  return single(h, v, CU_STREAM_MEM_OP_WAIT_VALUE_64, addr, value, flags);
}
Outcome writeValue32(CUstream h, CUdeviceptr addr, cuuint32_t value, unsigned flags,
                     StreamVariant v) {
  return single(h, v, CU_STREAM_MEM_OP_WRITE_VALUE_32, addr, value, flags);
}
Outcome writeValue64(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned flags,
                     StreamVariant v) {
  return single(h, v, CU_STREAM_MEM_OP_WRITE_VALUE_64, addr, value, flags);
}

// ---- Attributes ----

bool isStreamAttribute(CUstreamAttrID id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
      return true;
    default:
      return false;
  }
}

// What a stream reports before anything is set.
CUstreamAttrValue defaultAttribute(core::Stream& s, CUstreamAttrID id) {
  CUstreamAttrValue value;
  std::memset(&value, 0, sizeof value);
  if (id == CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY) value.syncPolicy = CU_SYNC_POLICY_AUTO;
  if (id == CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP) value.memSyncDomainMap = {0, 1};
  return value;
}

CUstreamAttrValue readAttribute(core::Stream& s, CUstreamAttrID id) {
  CUstreamAttrValue value = defaultAttribute(s, id);
  if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
    value.priority = s.priority();
    return value;
  }
  core::Stream::AttributeValue stored;
  static_assert(sizeof stored.bytes == sizeof value);
  if (s.attribute(id, &stored)) std::memcpy(&value, stored.bytes, sizeof value);
  return value;
}

Outcome checkAttributeValue(CUstreamAttrID id, const CUstreamAttrValue& value) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
      const CUaccessPolicyWindow& w = value.accessPolicyWindow;
      if (!(w.hitRatio >= 0.0f && w.hitRatio <= 1.0f))
        return invalidValue("hitRatio not in [0, 1]");
      if (w.hitProp < CU_ACCESS_PROPERTY_NORMAL || w.hitProp > CU_ACCESS_PROPERTY_PERSISTING ||
          w.missProp < CU_ACCESS_PROPERTY_NORMAL || w.missProp > CU_ACCESS_PROPERTY_PERSISTING)
        return invalidValue("unknown access property");
      return {};
    }
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (value.syncPolicy < CU_SYNC_POLICY_AUTO || value.syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC)
        return invalidValue("unknown synchronization policy");
      return {};
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      if (value.memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT &&
          value.memSyncDomain != CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE)
        return invalidValue("unknown memory synchronization domain");
      return {};
    default:
      return {};
  }
}

void writeAttribute(core::Stream& s, CUstreamAttrID id, const CUstreamAttrValue& value) {
  if (id == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
    s.setPriority(core::clampStreamPriority(value.priority, s.context().device().description()));
    return;
  }
  core::Stream::AttributeValue stored;
  std::memcpy(stored.bytes, &value, sizeof value);
  s.setAttribute(id, stored);
}

Outcome getAttribute(CUstream h, CUstreamAttrID attr, CUstreamAttrValue* out, StreamVariant v) {
  if (out == nullptr) return invalidValue("value_out is NULL");
  if (!isStreamAttribute(attr)) return invalidValue("not an attribute of streams");
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    *out = readAttribute(s, attr);
    return {};
  });
}

Outcome setAttribute(CUstream h, CUstreamAttrID attr, const CUstreamAttrValue* value,
                     StreamVariant v) {
  if (value == nullptr) return invalidValue("value is NULL");
  if (!isStreamAttribute(attr)) return invalidValue("not an attribute of streams");
  if (Outcome checked = checkAttributeValue(attr, *value); !checked.ok()) return checked;
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    writeAttribute(s, attr, *value);
    return {};
  });
}

Outcome copyAttributes(CUstream dst, CUstream src, StreamVariant v) {
  return withStream(src, v, [&](core::Stream& from) -> Outcome {
    return withStream(dst, v, [&](core::Stream& to) -> Outcome {
      for (CUstreamAttrID id :
           {CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY,
            CU_LAUNCH_ATTRIBUTE_PRIORITY, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP,
            CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
            CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING})
        writeAttribute(to, id, readAttribute(from, id));
      return {};
    });
  });
}

// Managed memory is coherent for every stream and the host here, so attaching changes no access
// rights: the call validates and is ordered in the stream like CUDA's.
Outcome attachMemAsync(CUstream h, CUdeviceptr dptr, size_t length, unsigned flags,
                       StreamVariant v) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST && flags != CU_MEM_ATTACH_SINGLE)
    return invalidValue("flags must be one of CU_MEM_ATTACH_GLOBAL, _HOST, _SINGLE");
  void* pointer = reinterpret_cast<void*>(dptr);
  std::optional<core::Allocation> allocation = core::findAllocation(pointer);
  if (!allocation) {
    // "system-allocated pageable memory ... if the device ... reports a non-zero value for
    // CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS. For pageable host allocations, length must be
    // non-zero."
    if (!isPageableMemoryTheDeviceReads(pointer, length))
      return invalidValue("dptr is neither managed memory nor pageable memory the device reads");
  } else if (allocation->kind != core::AllocationKind::Managed) {
    return invalidValue("dptr is not managed memory");
  } else if (length != 0 && (allocation->base != dptr || length != allocation->size)) {
    // length must be 0 (the whole allocation) or the whole allocation from its base.
    return invalidValue("length must be 0 or the whole allocation");
  }
  return withStream(h, v, [&](core::Stream& s) -> Outcome {
    if (flags == CU_MEM_ATTACH_SINGLE && s.streamKind() != core::StreamKind::Created)
      return invalidValue("CU_MEM_ATTACH_SINGLE needs a created stream");
    Result<core::CompletionPtr> queued =
        s.context().enqueue(s, "attach memory", [] { return Status::success(); });
    if (!queued) return queued.error();
    return {};
  });
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

#define ROCUDA_MEMOP_PAIR(name, valueType, impl)                                               \
  ROCUDA_STREAM_PAIR(name, name##_ptsz,                                                        \
                     (CUstream stream, CUdeviceptr addr, valueType value, unsigned int flags), \
                     (stream, addr, value, flags), impl)                                       \
  ROCUDA_STREAM_PAIR(name##_v2, name##_v2_ptsz,                                                \
                     (CUstream stream, CUdeviceptr addr, valueType value, unsigned int flags), \
                     (stream, addr, value, flags), impl)

ROCUDA_MEMOP_PAIR(cuStreamWaitValue32, cuuint32_t, api::waitValue32)
ROCUDA_MEMOP_PAIR(cuStreamWaitValue64, cuuint64_t, api::waitValue64)
ROCUDA_MEMOP_PAIR(cuStreamWriteValue32, cuuint32_t, api::writeValue32)
ROCUDA_MEMOP_PAIR(cuStreamWriteValue64, cuuint64_t, api::writeValue64)
#undef ROCUDA_MEMOP_PAIR

ROCUDA_STREAM_PAIR(cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz,
                   (CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                    unsigned int flags),
                   (stream, count, paramArray, flags), api::batchMemOp)
ROCUDA_STREAM_PAIR(cuStreamBatchMemOp_v2, cuStreamBatchMemOp_v2_ptsz,
                   (CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                    unsigned int flags),
                   (stream, count, paramArray, flags), api::batchMemOp)

ROCUDA_STREAM_PAIR(cuStreamGetAttribute, cuStreamGetAttribute_ptsz,
                   (CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out),
                   (hStream, attr, value_out), api::getAttribute)
ROCUDA_STREAM_PAIR(cuStreamSetAttribute, cuStreamSetAttribute_ptsz,
                   (CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value),
                   (hStream, attr, value), api::setAttribute)
ROCUDA_STREAM_PAIR(cuStreamCopyAttributes, cuStreamCopyAttributes_ptsz,
                   (CUstream dst, CUstream src), (dst, src), api::copyAttributes)
ROCUDA_STREAM_PAIR(cuStreamAttachMemAsync, cuStreamAttachMemAsync_ptsz,
                   (CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags),
                   (hStream, dptr, length, flags), api::attachMemAsync)

}  // extern "C"
}  // namespace rocuda::cuda
