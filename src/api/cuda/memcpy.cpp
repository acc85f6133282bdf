// Copies and fills in every form: 1D in each direction, 2D and 3D descriptors, peer copies,
// D8/D16/D32 memsets in 1D and 2D, synchronous and stream-ordered, each with its
// per-thread-default-stream twin.
//
// Synchronous forms queue on the default stream and wait. Asynchronous forms return at once,
// except where the host side is pageable memory: a source is staged (copied) at call time, and
// a pageable destination makes the call wait, as CUDA does.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "api/cuda/array_handles.h"
#include "api/cuda/boundary.h"
#include "api/cuda/graph_internal.h"
#include "core/array.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"

namespace rocuda::api {
namespace {

using namespace cuda;

void* asPointer(CUdeviceptr pointer) { return reinterpret_cast<void*>(pointer); }

bool isPinned(const void* pointer) { return core::findAllocation(pointer).has_value(); }

Outcome requireDeviceRange(const void* pointer, size_t bytes, const char* what) {
  if (pointer == nullptr) return {CUDA_ERROR_INVALID_VALUE, std::string(what) + " is NULL"};
  if (!core::isInsideAllocation(pointer, bytes))
    return {CUDA_ERROR_INVALID_VALUE, std::string(what) + " range is not inside an allocation"};
  return {};
}

// A unified address (cuMemcpy, CU_MEMORYTYPE_UNIFIED, batch copies): one that points into memory
// Rocuda knows (an allocation of any kind, a module variable, registered host memory) must keep
// the whole range inside it; other host memory cannot be checked (null is the copy's to refuse).
Outcome requireRangeInsideKnownMemory(const void* pointer, size_t bytes, const char* what) {
  if (bytes == 0 || pointer == nullptr || !core::findAllocation(pointer)) return {};
  return requireDeviceRange(pointer, bytes, what);
}

// Queue `work` on `stream` (with CUDA's implicit legacy-stream ordering); optionally wait.
// A context with a sticky error (a failed kernel) refuses all further work with that error.
Outcome submit(core::Stream& stream, const char* name, std::function<Status()> work, bool wait) {
  if (Status sticky = stream.context().stickyError(); !sticky.ok()) return sticky;
  Result<core::CompletionPtr> queued =
      stream.context().enqueueDeviceWork(stream, name, std::move(work));
  if (!queued) return queued.error();
  core::CompletionPtr done = *queued;
  if (!wait) return {};
  stream.waitFor(done);
  if (Status status = done->status(); !status.ok()) return status;
  return stream.context().stickyError();
}

// Whether a copy completes before its call returns: a synchronous one, and an asynchronous one
// touching pageable host memory (the caller may reuse it at once), except in stream capture,
// where the copy becomes a graph node that reads and writes that memory at each launch.
bool waitsForCopy(const core::Stream& stream, bool async, bool pageable) {
  return !async || (pageable && stream.capture() == nullptr);
}

Outcome copy(void* dst, const void* src, size_t bytes, CUstream hStream, StreamVariant variant,
             bool async) {
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  if (bytes == 0) return {};
  if (dst == nullptr || src == nullptr) return invalidValue("NULL pointer");
  // Each side's allocation, if Rocuda's memory (pinned, as the device reads it at any time).
  std::optional<core::Allocation> dstAllocation = core::findAllocation(dst);
  std::optional<core::Allocation> srcAllocation = core::findAllocation(src);
  // A copy between the memories of two devices "does not start until all commands previously
  // issued to either device have completed" (CUDA C++ Programming Guide, peer-to-peer memory
  // copy): the other device's context is drained first, as cuMemcpyPeer's source is.
  for (const std::optional<core::Allocation>* allocation : {&dstAllocation, &srcAllocation})
    if (*allocation && (*allocation)->kind == core::AllocationKind::Device &&
        core::lookupHandle<core::Context>((*allocation)->context) != nullptr &&
        &(*allocation)->context->device() != &(*stream)->context().device())
      if (Status drained = (*allocation)->context->synchronize(); !drained) return drained;
  backends::DeviceBackend& backend = (*stream)->context().device().backend();
  // Stage a pageable source so the caller may reuse its buffer when this returns; not in stream
  // capture, where the copy becomes a graph node that reads the source at each launch (as an
  // explicit memcpy node does), not the bytes the capture saw.
  if (async && !srcAllocation && (*stream)->capture() == nullptr) {
    auto staged = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(src),
                                                         static_cast<const uint8_t*>(src) + bytes);
    return submit(
        **stream, "memcpy",
        [&backend, dst, staged] { return backend.copy(dst, staged->data(), staged->size()); },
        !dstAllocation);
  }
  // A pageable destination (NVIDIA's simpleCudaGraphs captures a device-to-host copy into one).
  Outcome queued = submit(
      **stream, "memcpy", [&backend, dst, src, bytes] { return backend.copy(dst, src, bytes); },
      waitsForCopy(**stream, async, !dstAllocation));
  if (queued.ok()) keepCapturedCopyParams(**stream, dst, src, bytes);
  return queued;
}

Outcome copyHtoD(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream,
                 StreamVariant variant, bool async) {
  if (bytes != 0) {
    Outcome ok = requireDeviceRange(asPointer(dst), bytes, "dstDevice");
    if (!ok.ok()) return ok;
  }
  return copy(asPointer(dst), src, bytes, stream, variant, async);
}

Outcome copyDtoH(void* dst, CUdeviceptr src, size_t bytes, CUstream stream, StreamVariant variant,
                 bool async) {
  if (bytes != 0) {
    Outcome ok = requireDeviceRange(asPointer(src), bytes, "srcDevice");
    if (!ok.ok()) return ok;
  }
  return copy(dst, asPointer(src), bytes, stream, variant, async);
}

Outcome copyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
                 StreamVariant variant, bool async) {
  if (bytes != 0) {
    Outcome ok = requireDeviceRange(asPointer(dst), bytes, "dstDevice");
    if (!ok.ok()) return ok;
    ok = requireDeviceRange(asPointer(src), bytes, "srcDevice");
    if (!ok.ok()) return ok;
  }
  return copy(asPointer(dst), asPointer(src), bytes, stream, variant, async);
}

// ---- 2D / 3D descriptors ----

struct Side {
  uint8_t* base = nullptr;  // address of the first byte of the region (x, y, z applied)
  size_t pitch = 0;
  size_t height = 0;  // rows per slice (3D)
  bool device = false;
  const core::Array* array = nullptr;  // a CUDA array endpoint (bounds checked against it)
  size_t x = 0, y = 0, z = 0;          // the region's origin in the array (x in bytes)
};

Result<Side> resolveArraySide(CUarray handle, size_t x, size_t y, size_t z) {
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return makeError(ErrorCode::InvalidValue, "not a live CUDA array");
  Side side;
  side.array = *array;
  side.pitch = (*array)->rowPitch();
  side.height = (*array)->rows();
  side.x = x;
  side.y = y;
  side.z = z;
  if (x > side.pitch || y > side.height || z > (*array)->slices())
    return makeError(ErrorCode::InvalidValue, "copy origin outside the array");
  side.base = (*array)->data() + z * (*array)->slicePitch() + y * side.pitch + x;
  return side;
}

Result<Side> resolveSide(CUmemorytype type, const void* host, CUdeviceptr device, CUarray array,
                         size_t x, size_t y, size_t z, size_t pitch, size_t height) {
  Side side;
  side.pitch = pitch;
  side.height = height;
  const uint8_t* start = nullptr;
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      start = static_cast<const uint8_t*>(host);
      break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
      start = static_cast<const uint8_t*>(asPointer(device));
      side.device = type == CU_MEMORYTYPE_DEVICE;
      break;
    case CU_MEMORYTYPE_ARRAY:
      return resolveArraySide(array, x, y, z);
    default:
      return makeError(ErrorCode::InvalidValue, "unknown memory type");
  }
  if (start == nullptr) return makeError(ErrorCode::InvalidValue, "NULL pointer in descriptor");
  side.base = const_cast<uint8_t*>(start) + (z * height + y) * pitch + x;
  side.x = x;
  return side;
}

Outcome checkSide(const Side& side, size_t width, size_t rows, size_t depth, const char* what) {
  if (side.array != nullptr) {
    const core::Array& a = *side.array;
    if (side.x % a.texelBytes() != 0 || width % a.texelBytes() != 0)
      return {CUDA_ERROR_INVALID_VALUE,
              std::string(what) + " array offset or width is not a whole number of elements"};
    if (side.x + width > a.rowPitch() || side.y + rows > a.rows() || side.z + depth > a.slices())
      return {CUDA_ERROR_INVALID_VALUE, std::string(what) + " region exceeds the array"};
    return {};
  }
  // "srcPitch must be greater than or equal to WidthInBytes + srcXInBytes" (and dst); "an error
  // if any pitch is greater than the maximum allowed (CU_DEVICE_ATTRIBUTE_MAX_PITCH)".
  if (rows > 1 && side.pitch < width + side.x)
    return {CUDA_ERROR_INVALID_VALUE,
            std::string(what) + " pitch is smaller than the width plus the x offset"};
  if (side.pitch > kMaxPitch)
    return {CUDA_ERROR_INVALID_VALUE, std::string(what) + " pitch exceeds the maximum pitch"};
  size_t sliceBytes = side.pitch * side.height;
  size_t extent = (depth - 1) * sliceBytes + (rows - 1) * side.pitch + width;
  return side.device ? requireDeviceRange(side.base, extent, what)
                     : requireRangeInsideKnownMemory(side.base, extent, what);
}

// Host memory the copy engine cannot reach asynchronously (pageable), which makes a copy wait.
bool pageableHost(const Side& side) { return side.array == nullptr && !isPinned(side.base); }

// `described`: the caller's copy as a 3D descriptor, which a captured node keeps.
Outcome copy3D(const Side& dst, const Side& src, size_t width, size_t rows, size_t depth,
               CUstream hStream, StreamVariant variant, bool async,
               const CUDA_MEMCPY3D* described = nullptr) {
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  if (width == 0 || rows == 0 || depth == 0) return {};
  Outcome ok = checkSide(dst, width, rows, depth, "destination");
  if (!ok.ok()) return ok;
  ok = checkSide(src, width, rows, depth, "source");
  if (!ok.ok()) return ok;
  backends::DeviceBackend& backend = (*stream)->context().device().backend();
  // Pageable host memory on either side (nothing to stage cheaply).
  bool wait = waitsForCopy(**stream, async, pageableHost(dst) || pageableHost(src));
  Outcome queued = submit(
      **stream, "memcpy3D",
      [&backend, dst, src, width, rows, depth]() -> Status {
        for (size_t slice = 0; slice < depth; ++slice) {
          Status status =
              backend.copy2D(dst.base + slice * dst.pitch * dst.height, dst.pitch,
                             src.base + slice * src.pitch * src.height, src.pitch, width, rows);
          if (!status) return status;
        }
        return Status::success();
      },
      wait);
  if (queued.ok() && described != nullptr) keepCapturedCopyParams(**stream, *described);
  return queued;
}

Outcome copy2D(const CUDA_MEMCPY2D* p, CUstream stream, StreamVariant variant, bool async) {
  if (p == nullptr) return invalidValue("pCopy is NULL");
  Result<Side> src = resolveSide(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                                 p->srcXInBytes, p->srcY, 0, p->srcPitch, 0);
  if (!src) return src.error();
  Result<Side> dst = resolveSide(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                                 p->dstXInBytes, p->dstY, 0, p->dstPitch, 0);
  if (!dst) return dst.error();
  CUDA_MEMCPY3D described{};  // as a 3D copy one slice deep
  described.srcXInBytes = p->srcXInBytes;
  described.srcY = p->srcY;
  described.srcMemoryType = p->srcMemoryType;
  described.srcHost = p->srcHost;
  described.srcDevice = p->srcDevice;
  described.srcArray = p->srcArray;
  described.srcPitch = p->srcPitch;
  described.dstXInBytes = p->dstXInBytes;
  described.dstY = p->dstY;
  described.dstMemoryType = p->dstMemoryType;
  described.dstHost = p->dstHost;
  described.dstDevice = p->dstDevice;
  described.dstArray = p->dstArray;
  described.dstPitch = p->dstPitch;
  described.WidthInBytes = p->WidthInBytes;
  described.Height = p->Height;
  described.Depth = 1;
  return copy3D(*dst, *src, p->WidthInBytes, p->Height, 1, stream, variant, async, &described);
}

Outcome copy3DDescriptor(const CUDA_MEMCPY3D* p, CUstream stream, StreamVariant variant,
                         bool async) {
  if (p == nullptr) return invalidValue("pCopy is NULL");
  if (p->reserved0 != nullptr || p->reserved1 != nullptr || p->srcLOD != 0 || p->dstLOD != 0)
    return invalidValue("reserved fields and LODs must be 0");
  // "If specified, srcHeight must be greater than or equal to Height + srcY" (and dst's).
  if (p->Depth > 1 &&
      ((p->srcMemoryType != CU_MEMORYTYPE_ARRAY && p->srcHeight < p->Height + p->srcY) ||
       (p->dstMemoryType != CU_MEMORYTYPE_ARRAY && p->dstHeight < p->Height + p->dstY)))
    return invalidValue("slice height smaller than the copy's rows");
  Result<Side> src = resolveSide(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                                 p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch, p->srcHeight);
  if (!src) return src.error();
  Result<Side> dst = resolveSide(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                                 p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch, p->dstHeight);
  if (!dst) return dst.error();
  return copy3D(*dst, *src, p->WidthInBytes, p->Height, p->Depth, stream, variant, async, p);
}

// ---- Peer copies (contexts of any devices; Rocuda copies through the host when needed) ----

Outcome copyPeer(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                 size_t bytes, CUstream stream, StreamVariant variant, bool async) {
  Result<core::Context*> dstCtx = lookupContext(dstContext);
  if (!dstCtx) return dstCtx.error();
  Result<core::Context*> srcCtx = lookupContext(srcContext);
  if (!srcCtx) return srcCtx.error();
  if (*srcCtx != *dstCtx) {
    // The source context's earlier work must be visible to the copy.
    Status drained = (*srcCtx)->synchronize();
    if (!drained) return drained;
  }
  return copyDtoD(dst, src, bytes, stream, variant, async);
}

Outcome copy3DPeer(const CUDA_MEMCPY3D_PEER* p, CUstream stream, StreamVariant variant,
                   bool async) {
  if (p == nullptr) return invalidValue("pCopy is NULL");
  if (p->srcLOD != 0 || p->dstLOD != 0) return invalidValue("LODs must be 0");
  // The contexts only matter for ordering: everything shares one address space.
  core::Context* contexts[2] = {nullptr, nullptr};
  CUcontext handles[2] = {p->srcContext, p->dstContext};
  for (int i = 0; i < 2; ++i) {
    if (handles[i] == nullptr) continue;
    Result<core::Context*> context = lookupContext(handles[i]);
    if (!context) return context.error();
    contexts[i] = *context;
  }
  if (contexts[0] != nullptr && contexts[0] != contexts[1]) {
    Status drained = contexts[0]->synchronize();  // the source's earlier work must be visible
    if (!drained) return drained;
  }
  CUDA_MEMCPY3D plain{};
  plain.srcXInBytes = p->srcXInBytes;
  plain.srcY = p->srcY;
  plain.srcZ = p->srcZ;
  plain.srcMemoryType = p->srcMemoryType;
  plain.srcHost = p->srcHost;
  plain.srcDevice = p->srcDevice;
  plain.srcArray = p->srcArray;
  plain.srcPitch = p->srcPitch;
  plain.srcHeight = p->srcHeight;
  plain.dstXInBytes = p->dstXInBytes;
  plain.dstY = p->dstY;
  plain.dstZ = p->dstZ;
  plain.dstMemoryType = p->dstMemoryType;
  plain.dstHost = p->dstHost;
  plain.dstDevice = p->dstDevice;
  plain.dstArray = p->dstArray;
  plain.dstPitch = p->dstPitch;
  plain.dstHeight = p->dstHeight;
  plain.WidthInBytes = p->WidthInBytes;
  plain.Height = p->Height;
  plain.Depth = p->Depth;
  return copy3DDescriptor(&plain, stream, variant, async);
}

// ---- Batches (CUDA 12.8+): each copy is queued in order on the stream ----

Outcome checkAttributes(size_t count, const CUmemcpyAttributes* attrs, const size_t* attrsIdxs,
                        size_t numAttrs) {
  if (attrs == nullptr || attrsIdxs == nullptr || numAttrs == 0 || numAttrs > count)
    return invalidValue("attrs, attrsIdxs or numAttrs is invalid");
  if (attrsIdxs[0] != 0) return invalidValue("attrsIdxs[0] must be 0");
  for (size_t i = 0; i < numAttrs; ++i) {
    if (i > 0 && (attrsIdxs[i] <= attrsIdxs[i - 1] || attrsIdxs[i] >= count))
      return invalidValue("attrsIdxs must increase and stay below count");
    if (attrs[i].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
        attrs[i].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
      return invalidValue("invalid srcAccessOrder");
    if ((attrs[i].flags & ~1u) != 0) return invalidValue("unknown copy flags");
  }
  return {};
}

Outcome copyBatch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                  CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                  CUstream stream, StreamVariant variant) {
  if (failIdx != nullptr) *failIdx = SIZE_MAX;
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr)
    return invalidValue("dsts, srcs or sizes is NULL, or count is 0");
  if (Result<core::Stream*> s = resolveBatchStream(stream, variant); !s) return s.error();
  Outcome ok = checkAttributes(count, attrs, attrsIdxs, numAttrs);
  if (!ok.ok()) return ok;
  size_t attribute = 0;  // the entry of attrs that copy i follows
  for (size_t i = 0; i < count; ++i) {
    while (attribute + 1 < numAttrs && attrsIdxs[attribute + 1] <= i) ++attribute;
    // DURING_API_CALL: "all accesses must be complete before the API call returns". The copy
    // then completes in stream order before the call returns (later work may reuse the source).
    bool async = attrs[attribute].srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    ok = requireRangeInsideKnownMemory(asPointer(dsts[i]), sizes[i], "dsts[i]");
    if (ok.ok()) ok = requireRangeInsideKnownMemory(asPointer(srcs[i]), sizes[i], "srcs[i]");
    if (ok.ok())
      ok = copy(asPointer(dsts[i]), asPointer(srcs[i]), sizes[i], stream, variant, async);
    if (!ok.ok()) {
      if (failIdx != nullptr) *failIdx = i;
      return ok;
    }
  }
  return {};
}

Result<Side> resolveOperand(const CUmemcpy3DOperand& operand, size_t elementBytes,
                            const CUextent3D& extent) {
  if (operand.type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    const CUoffset3D& o = operand.op.array.offset;
    return resolveArraySide(operand.op.array.array, o.x * elementBytes, o.y, o.z);
  }
  if (operand.type != CU_MEMCPY_OPERAND_TYPE_POINTER)
    return makeError(ErrorCode::InvalidValue, "unknown operand type");
  const auto& p = operand.op.ptr;
  if (p.ptr == 0) return makeError(ErrorCode::InvalidValue, "NULL operand pointer");
  size_t rowLength = p.rowLength == 0 ? extent.width : p.rowLength;
  size_t layerHeight = p.layerHeight == 0 ? extent.height : p.layerHeight;
  if (rowLength < extent.width || layerHeight < extent.height)
    return makeError(ErrorCode::InvalidValue, "rowLength or layerHeight smaller than the extent");
  Side side;
  side.base = static_cast<uint8_t*>(asPointer(p.ptr));
  side.pitch = rowLength * elementBytes;
  side.height = layerHeight;
  std::optional<core::Allocation> allocation = core::findAllocation(side.base);
  side.device = allocation && allocation->kind == core::AllocationKind::Device;
  return side;
}

Result<size_t> operationElementBytes(const CUDA_MEMCPY3D_BATCH_OP& op) {
  size_t bytes = 0;
  for (const CUmemcpy3DOperand* operand : {&op.src, &op.dst}) {
    if (operand->type != CU_MEMCPY_OPERAND_TYPE_ARRAY) continue;
    Result<core::Array*> array = lookupArray(operand->op.array.array);
    if (!array) return makeError(ErrorCode::InvalidValue, "not a live CUDA array");
    if (bytes != 0 && bytes != (*array)->texelBytes())
      return makeError(ErrorCode::InvalidValue, "the two arrays' element sizes differ");
    bytes = (*array)->texelBytes();
  }
  return bytes == 0 ? 1 : bytes;  // pointer to pointer: bytes
}

Outcome copy3DBatch(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx,
                    unsigned long long flags, CUstream stream, StreamVariant variant) {
  if (failIdx != nullptr) *failIdx = SIZE_MAX;
  if (numOps == 0 || ops == nullptr) return invalidValue("opList is NULL or numOps is 0");
  if (flags != 0) return invalidValue("flags must be 0");
  if (Result<core::Stream*> s = resolveBatchStream(stream, variant); !s) return s.error();
  for (size_t i = 0; i < numOps; ++i) {
    const CUDA_MEMCPY3D_BATCH_OP& op = ops[i];
    Outcome ok;
    if (op.extent.width == 0 || op.extent.height == 0 || op.extent.depth == 0)
      ok = invalidValue("extents must not be 0");
    else if (op.srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
             op.srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
      ok = invalidValue("invalid srcAccessOrder");
    if (ok.ok()) {
      Result<size_t> element = operationElementBytes(op);
      Result<Side> src = element ? resolveOperand(op.src, *element, op.extent) : element.error();
      Result<Side> dst = element ? resolveOperand(op.dst, *element, op.extent) : element.error();
      if (!src)
        ok = src.error();
      else if (!dst)
        ok = dst.error();
      else
        ok = copy3D(*dst, *src, op.extent.width * *element, op.extent.height, op.extent.depth,
                    stream, variant,
                    op.srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL);
    }
    if (!ok.ok()) {
      if (failIdx != nullptr) *failIdx = i;
      return ok;
    }
  }
  return {};
}

// ---- Fills ----

Outcome fill2D(CUdeviceptr dst, size_t pitch, uint32_t value, size_t elementBytes, size_t width,
               size_t height, CUstream hStream, StreamVariant variant, bool async) {
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  if (width == 0 || height == 0) return {};
  if (dst % elementBytes != 0) return invalidValue("dstDevice is misaligned for the element size");
  if (pitch % elementBytes != 0) return invalidValue("dstPitch is misaligned for the element size");
  size_t rowBytes = width * elementBytes;
  if (height > 1 && pitch < rowBytes) return invalidValue("pitch smaller than the row");
  Outcome ok = requireDeviceRange(asPointer(dst), (height - 1) * pitch + rowBytes, "dstDevice");
  if (!ok.ok()) return ok;
  backends::DeviceBackend& backend = (*stream)->context().device().backend();
  auto* base = static_cast<uint8_t*>(asPointer(dst));
  Outcome queued = submit(
      **stream, "memset",
      [&backend, base, pitch, value, elementBytes, width, height]() -> Status {
        for (size_t row = 0; row < height; ++row) {
          Status status = backend.fill(base + row * pitch, value, elementBytes, width);
          if (!status) return status;
        }
        return Status::success();
      },
      !async);
  if (queued.ok())
    keepCapturedMemsetParams(
        **stream, CUDA_MEMSET_NODE_PARAMS_v2{dst, pitch, value, static_cast<unsigned>(elementBytes),
                                             width, height, nullptr});
  return queued;
}

Outcome fill(CUdeviceptr dst, uint32_t value, size_t elementBytes, size_t count, CUstream stream,
             StreamVariant variant, bool async) {
  return fill2D(dst, count * elementBytes, value, elementBytes, count, 1, stream, variant, async);
}

// Adapters with the argument order of each entry point.
Outcome memcpyUnified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, StreamVariant v,
                      bool async) {
  if (Outcome ok = requireRangeInsideKnownMemory(asPointer(dst), n, "dst"); !ok.ok()) return ok;
  if (Outcome ok = requireRangeInsideKnownMemory(asPointer(src), n, "src"); !ok.ok()) return ok;
  return copy(asPointer(dst), asPointer(src), n, s, v, async);
}
Outcome memcpySync(CUdeviceptr dst, CUdeviceptr src, size_t n, StreamVariant v) {
  return memcpyUnified(dst, src, n, nullptr, v, false);
}
Outcome memcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, StreamVariant v) {
  return memcpyUnified(dst, src, n, s, v, true);
}
Outcome peerSync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
                 StreamVariant v) {
  return copyPeer(d, dc, s, sc, n, nullptr, v, false);
}
Outcome peerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream st,
                  StreamVariant v) {
  return copyPeer(d, dc, s, sc, n, st, v, true);
}
Outcome htodSync(CUdeviceptr d, const void* s, size_t n, StreamVariant v) {
  return copyHtoD(d, s, n, nullptr, v, false);
}
Outcome htodAsync(CUdeviceptr d, const void* s, size_t n, CUstream st, StreamVariant v) {
  return copyHtoD(d, s, n, st, v, true);
}
Outcome dtohSync(void* d, CUdeviceptr s, size_t n, StreamVariant v) {
  return copyDtoH(d, s, n, nullptr, v, false);
}
Outcome dtohAsync(void* d, CUdeviceptr s, size_t n, CUstream st, StreamVariant v) {
  return copyDtoH(d, s, n, st, v, true);
}
Outcome dtodSync(CUdeviceptr d, CUdeviceptr s, size_t n, StreamVariant v) {
  return copyDtoD(d, s, n, nullptr, v, false);
}
Outcome dtodAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st, StreamVariant v) {
  return copyDtoD(d, s, n, st, v, true);
}
Outcome copy2DSync(const CUDA_MEMCPY2D* p, StreamVariant v) { return copy2D(p, nullptr, v, false); }
Outcome copy2DAsync(const CUDA_MEMCPY2D* p, CUstream s, StreamVariant v) {
  return copy2D(p, s, v, true);
}
Outcome copy3DSync(const CUDA_MEMCPY3D* p, StreamVariant v) {
  return copy3DDescriptor(p, nullptr, v, false);
}
Outcome copy3DAsync(const CUDA_MEMCPY3D* p, CUstream s, StreamVariant v) {
  return copy3DDescriptor(p, s, v, true);
}

Outcome copy3DPeerSync(const CUDA_MEMCPY3D_PEER* p, StreamVariant v) {
  return copy3DPeer(p, nullptr, v, false);
}
Outcome copy3DPeerAsync(const CUDA_MEMCPY3D_PEER* p, CUstream s, StreamVariant v) {
  return copy3DPeer(p, s, v, true);
}
Outcome batchWithFailIdx(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                         CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                         size_t* failIdx, CUstream s, StreamVariant v) {
  return copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, s, v);
}
Outcome batch(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
              CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, CUstream s,
              StreamVariant v) {
  return copyBatch(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, s, v);
}
Outcome batch3DWithFailIdx(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* failIdx,
                           unsigned long long flags, CUstream s, StreamVariant v) {
  return copy3DBatch(n, ops, failIdx, flags, s, v);
}
Outcome batch3D(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream s,
                StreamVariant v) {
  return copy3DBatch(n, ops, nullptr, flags, s, v);
}

// The copies of 1D CUDA arrays (cuMemcpyHtoA, AtoH, AtoD, DtoA, AtoA): `bytes` from a byte
// offset into the array's first row, the other side linear memory or another array.
Result<Side> arrayAt(CUarray array, size_t offset) { return resolveArraySide(array, offset, 0, 0); }
Result<Side> hostAt(const void* host) {
  return resolveSide(CU_MEMORYTYPE_HOST, host, 0, nullptr, 0, 0, 0, 0, 0);
}
Result<Side> deviceAt(CUdeviceptr device) {
  return resolveSide(CU_MEMORYTYPE_DEVICE, nullptr, device, nullptr, 0, 0, 0, 0, 0);
}
Outcome copyArray(Result<Side> dst, Result<Side> src, size_t bytes, CUstream stream,
                  StreamVariant variant, bool async) {
  if (!dst) return dst.error();
  if (!src) return src.error();
  return copy3D(*dst, *src, bytes, 1, 1, stream, variant, async);
}
Outcome htoaSync(CUarray dst, size_t dstOffset, const void* src, size_t n, StreamVariant v) {
  return copyArray(arrayAt(dst, dstOffset), hostAt(src), n, nullptr, v, false);
}
Outcome htoaAsync(CUarray dst, size_t dstOffset, const void* src, size_t n, CUstream s,
                  StreamVariant v) {
  return copyArray(arrayAt(dst, dstOffset), hostAt(src), n, s, v, true);
}
Outcome atohSync(void* dst, CUarray src, size_t srcOffset, size_t n, StreamVariant v) {
  return copyArray(hostAt(dst), arrayAt(src, srcOffset), n, nullptr, v, false);
}
Outcome atohAsync(void* dst, CUarray src, size_t srcOffset, size_t n, CUstream s, StreamVariant v) {
  return copyArray(hostAt(dst), arrayAt(src, srcOffset), n, s, v, true);
}
Outcome dtoaSync(CUarray dst, size_t dstOffset, CUdeviceptr src, size_t n, StreamVariant v) {
  return copyArray(arrayAt(dst, dstOffset), deviceAt(src), n, nullptr, v, false);
}
Outcome atodSync(CUdeviceptr dst, CUarray src, size_t srcOffset, size_t n, StreamVariant v) {
  return copyArray(deviceAt(dst), arrayAt(src, srcOffset), n, nullptr, v, false);
}
Outcome atoaSync(CUarray dst, size_t dstOffset, CUarray src, size_t srcOffset, size_t n,
                 StreamVariant v) {
  // "The size of the elements in the CUDA arrays need not be the same format, but the elements
  // must be the same size".
  Result<core::Array*> to = lookupArray(dst), from = lookupArray(src);
  if (to && from && (*to)->texelBytes() != (*from)->texelBytes())
    return invalidValue("the arrays' elements differ in size");
  return copyArray(arrayAt(dst, dstOffset), arrayAt(src, srcOffset), n, nullptr, v, false);
}

template <class T>
Outcome setSync(CUdeviceptr d, T value, size_t n, StreamVariant v) {
  return fill(d, value, sizeof(T), n, nullptr, v, false);
}
template <class T>
Outcome setAsync(CUdeviceptr d, T value, size_t n, CUstream s, StreamVariant v) {
  return fill(d, value, sizeof(T), n, s, v, true);
}
template <class T>
Outcome set2DSync(CUdeviceptr d, size_t pitch, T value, size_t w, size_t h, StreamVariant v) {
  return fill2D(d, pitch, value, sizeof(T), w, h, nullptr, v, false);
}
template <class T>
Outcome set2DAsync(CUdeviceptr d, size_t pitch, T value, size_t w, size_t h, CUstream s,
                   StreamVariant v) {
  return fill2D(d, pitch, value, sizeof(T), w, h, s, v, true);
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

using UChar = unsigned char;
using UShort = unsigned short;
using UInt = unsigned int;

ROCUDA_STREAM_PAIR(cuMemcpy, cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount),
                   (dst, src, ByteCount), api::memcpySync)
ROCUDA_STREAM_PAIR(cuMemcpyAsync, cuMemcpyAsync_ptsz,
                   (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream),
                   (dst, src, ByteCount, hStream), api::memcpyAsync)
ROCUDA_STREAM_PAIR(cuMemcpyPeer, cuMemcpyPeer_ptds,
                   (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount),
                   (dstDevice, dstContext, srcDevice, srcContext, ByteCount), api::peerSync)
ROCUDA_STREAM_PAIR(cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
                   (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                    CUcontext srcContext, size_t ByteCount, CUstream hStream),
                   (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream),
                   api::peerAsync)
ROCUDA_STREAM_PAIR(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds,
                   (CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount),
                   (dstDevice, srcHost, ByteCount), api::htodSync)
ROCUDA_STREAM_PAIR(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz,
                   (CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream),
                   (dstDevice, srcHost, ByteCount, hStream), api::htodAsync)
ROCUDA_STREAM_PAIR(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds,
                   (void* dstHost, CUdeviceptr srcDevice, size_t ByteCount),
                   (dstHost, srcDevice, ByteCount), api::dtohSync)
ROCUDA_STREAM_PAIR(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz,
                   (void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream),
                   (dstHost, srcDevice, ByteCount, hStream), api::dtohAsync)
ROCUDA_STREAM_PAIR(cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds,
                   (CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount),
                   (dstArray, dstOffset, srcHost, ByteCount), api::htoaSync)
ROCUDA_STREAM_PAIR(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz,
                   (CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount,
                    CUstream hStream),
                   (dstArray, dstOffset, srcHost, ByteCount, hStream), api::htoaAsync)
ROCUDA_STREAM_PAIR(cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds,
                   (void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount),
                   (dstHost, srcArray, srcOffset, ByteCount), api::atohSync)
ROCUDA_STREAM_PAIR(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz,
                   (void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                    CUstream hStream),
                   (dstHost, srcArray, srcOffset, ByteCount, hStream), api::atohAsync)
ROCUDA_STREAM_PAIR(cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds,
                   (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount),
                   (dstArray, dstOffset, srcDevice, ByteCount), api::dtoaSync)
ROCUDA_STREAM_PAIR(cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds,
                   (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount),
                   (dstDevice, srcArray, srcOffset, ByteCount), api::atodSync)
ROCUDA_STREAM_PAIR(cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds,
                   (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                    size_t ByteCount),
                   (dstArray, dstOffset, srcArray, srcOffset, ByteCount), api::atoaSync)
ROCUDA_STREAM_PAIR(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds,
                   (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount),
                   (dstDevice, srcDevice, ByteCount), api::dtodSync)
ROCUDA_STREAM_PAIR(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz,
                   (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                    CUstream hStream),
                   (dstDevice, srcDevice, ByteCount, hStream), api::dtodAsync)
ROCUDA_STREAM_PAIR(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D* pCopy), (pCopy),
                   api::copy2DSync)
// Rocuda has no alignment restrictions, so the unaligned form is the same copy.
ROCUDA_STREAM_PAIR(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds,
                   (const CUDA_MEMCPY2D* pCopy), (pCopy), api::copy2DSync)
ROCUDA_STREAM_PAIR(cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz,
                   (const CUDA_MEMCPY2D* pCopy, CUstream hStream), (pCopy, hStream),
                   api::copy2DAsync)
ROCUDA_STREAM_PAIR(cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D* pCopy), (pCopy),
                   api::copy3DSync)
ROCUDA_STREAM_PAIR(cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz,
                   (const CUDA_MEMCPY3D* pCopy, CUstream hStream), (pCopy, hStream),
                   api::copy3DAsync)

ROCUDA_STREAM_PAIR(cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER* pCopy), (pCopy),
                   api::copy3DPeerSync)
ROCUDA_STREAM_PAIR(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz,
                   (const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream), (pCopy, hStream),
                   api::copy3DPeerAsync)
// CUDA 12.8's forms report the failing copy in failIdx; CUDA 13's _v2 forms dropped it.
ROCUDA_STREAM_PAIR(cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz,
                   (CUdeviceptr * dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                    CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                    CUstream hStream),
                   (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream),
                   api::batchWithFailIdx)
ROCUDA_STREAM_PAIR(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz,
                   (CUdeviceptr * dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                    CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                    CUstream hStream),
                   (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream), api::batch)
ROCUDA_STREAM_PAIR(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz,
                   (size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                    unsigned long long flags, CUstream hStream),
                   (numOps, opList, failIdx, flags, hStream), api::batch3DWithFailIdx)
ROCUDA_STREAM_PAIR(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz,
                   (size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                    CUstream hStream),
                   (numOps, opList, flags, hStream), api::batch3D)

ROCUDA_STREAM_PAIR(cuMemsetD8_v2, cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, UChar uc, size_t N),
                   (dstDevice, uc, N), api::setSync<UChar>)
ROCUDA_STREAM_PAIR(cuMemsetD16_v2, cuMemsetD16_v2_ptds,
                   (CUdeviceptr dstDevice, UShort us, size_t N), (dstDevice, us, N),
                   api::setSync<UShort>)
ROCUDA_STREAM_PAIR(cuMemsetD32_v2, cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, UInt ui, size_t N),
                   (dstDevice, ui, N), api::setSync<UInt>)
ROCUDA_STREAM_PAIR(cuMemsetD8Async, cuMemsetD8Async_ptsz,
                   (CUdeviceptr dstDevice, UChar uc, size_t N, CUstream hStream),
                   (dstDevice, uc, N, hStream), api::setAsync<UChar>)
ROCUDA_STREAM_PAIR(cuMemsetD16Async, cuMemsetD16Async_ptsz,
                   (CUdeviceptr dstDevice, UShort us, size_t N, CUstream hStream),
                   (dstDevice, us, N, hStream), api::setAsync<UShort>)
ROCUDA_STREAM_PAIR(cuMemsetD32Async, cuMemsetD32Async_ptsz,
                   (CUdeviceptr dstDevice, UInt ui, size_t N, CUstream hStream),
                   (dstDevice, ui, N, hStream), api::setAsync<UInt>)
ROCUDA_STREAM_PAIR(cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds,
                   (CUdeviceptr dstDevice, size_t dstPitch, UChar uc, size_t Width, size_t Height),
                   (dstDevice, dstPitch, uc, Width, Height), api::set2DSync<UChar>)
ROCUDA_STREAM_PAIR(cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds,
                   (CUdeviceptr dstDevice, size_t dstPitch, UShort us, size_t Width, size_t Height),
                   (dstDevice, dstPitch, us, Width, Height), api::set2DSync<UShort>)
ROCUDA_STREAM_PAIR(cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds,
                   (CUdeviceptr dstDevice, size_t dstPitch, UInt ui, size_t Width, size_t Height),
                   (dstDevice, dstPitch, ui, Width, Height), api::set2DSync<UInt>)
ROCUDA_STREAM_PAIR(cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz,
                   (CUdeviceptr dstDevice, size_t dstPitch, UChar uc, size_t Width, size_t Height,
                    CUstream hStream),
                   (dstDevice, dstPitch, uc, Width, Height, hStream), api::set2DAsync<UChar>)
ROCUDA_STREAM_PAIR(cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz,
                   (CUdeviceptr dstDevice, size_t dstPitch, UShort us, size_t Width, size_t Height,
                    CUstream hStream),
                   (dstDevice, dstPitch, us, Width, Height, hStream), api::set2DAsync<UShort>)
ROCUDA_STREAM_PAIR(cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz,
                   (CUdeviceptr dstDevice, size_t dstPitch, UInt ui, size_t Width, size_t Height,
                    CUstream hStream),
                   (dstDevice, dstPitch, ui, Width, Height, hStream), api::set2DAsync<UInt>)

}  // extern "C"
}  // namespace rocuda::cuda
