// CUDA arrays, texture and surface objects and copies to and from arrays, through libcuda.so.1
// loaded with dlopen and reached through cuGetProcAddress as cudart reaches them.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "rocuda/cuda_abi.h"
#include "support/texture_view.h"

namespace rocuda::cuda {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

void* library() {
  static void* handle = dlopen(ROCUDA_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

template <class F>
F proc(const char* name, int version = 13000) {
  static auto getProc = reinterpret_cast<GetProcAddress>(dlsym(library(), "cuGetProcAddress_v2"));
  void* pfn = nullptr;
  CUresult result = getProc(name, &pfn, version, 0, nullptr);
  EXPECT_EQ(result, CUDA_SUCCESS) << name;
  return reinterpret_cast<F>(pfn);
}

#define CU(name, ...) proc<CUresult (*)(__VA_ARGS__)>(#name)

class Textures : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(library(), nullptr) << dlerror();
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
    CUcontext context = nullptr;
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context, 0), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context), CUDA_SUCCESS);
  }

  static CUarray create3D(size_t w, size_t h, size_t d, CUarray_format format, unsigned channels,
                          unsigned flags = 0) {
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    desc.Width = w;
    desc.Height = h;
    desc.Depth = d;
    desc.Format = format;
    desc.NumChannels = channels;
    desc.Flags = flags;
    CUarray array = nullptr;
    EXPECT_EQ(CU(cuArray3DCreate, CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*)(&array, &desc),
              CUDA_SUCCESS);
    return array;
  }
  static void destroy(CUarray array) {
    EXPECT_EQ(CU(cuArrayDestroy, CUarray)(array), CUDA_SUCCESS);
  }
};

TEST_F(Textures, ArrayCreateValidatesDescriptors) {
  auto create = CU(cuArrayCreate, CUarray*, const CUDA_ARRAY_DESCRIPTOR*);
  auto create3 = CU(cuArray3DCreate, CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*);
  CUarray array = nullptr;
  CUDA_ARRAY_DESCRIPTOR desc{64, 16, CU_AD_FORMAT_FLOAT, 1};
  EXPECT_EQ(create(&array, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(nullptr, &desc), CUDA_ERROR_INVALID_VALUE);
  desc.NumChannels = 3;
  EXPECT_EQ(create(&array, &desc), CUDA_ERROR_INVALID_VALUE);
  desc.NumChannels = 1;
  desc.Format = static_cast<CUarray_format>(77);
  EXPECT_EQ(create(&array, &desc), CUDA_ERROR_INVALID_VALUE);
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.Width = 0;
  EXPECT_EQ(create(&array, &desc), CUDA_ERROR_INVALID_VALUE);
  desc.Width = 64;
  ASSERT_EQ(create(&array, &desc), CUDA_SUCCESS);
  CUDA_ARRAY_DESCRIPTOR got{};
  ASSERT_EQ(CU(cuArrayGetDescriptor, CUDA_ARRAY_DESCRIPTOR*, CUarray)(&got, array), CUDA_SUCCESS);
  EXPECT_EQ(got.Width, 64u);
  EXPECT_EQ(got.Height, 16u);
  EXPECT_EQ(got.Format, CU_AD_FORMAT_FLOAT);
  EXPECT_EQ(got.NumChannels, 1u);
  destroy(array);
  // A destroyed array is no longer a valid handle.
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(array), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(CU(cuArrayGetDescriptor, CUDA_ARRAY_DESCRIPTOR*, CUarray)(&got, array),
            CUDA_ERROR_INVALID_HANDLE);

  CUDA_ARRAY3D_DESCRIPTOR d3{8, 8, 5, CU_AD_FORMAT_UNSIGNED_INT8, 4, CUDA_ARRAY3D_CUBEMAP};
  EXPECT_EQ(create3(&array, &d3), CUDA_ERROR_INVALID_VALUE);  // a cubemap needs depth 6
  d3.Depth = 6;
  ASSERT_EQ(create3(&array, &d3), CUDA_SUCCESS);
  destroy(array);
  d3.Flags = CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED;
  d3.Depth = 12;
  ASSERT_EQ(create3(&array, &d3), CUDA_SUCCESS);
  CUDA_ARRAY3D_DESCRIPTOR got3{};
  ASSERT_EQ(CU(cuArray3DGetDescriptor, CUDA_ARRAY3D_DESCRIPTOR*, CUarray)(&got3, array),
            CUDA_SUCCESS);
  EXPECT_EQ(got3.Depth, 12u);
  EXPECT_EQ(got3.Flags, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
  destroy(array);
  d3 = {8, 0, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED};
  EXPECT_EQ(create3(&array, &d3), CUDA_ERROR_INVALID_VALUE);  // layered without layers
  d3.Flags = CUDA_ARRAY3D_SPARSE;
  EXPECT_NE(create3(&array, &d3), CUDA_SUCCESS);
}

// cuCtxDestroy "destroys and cleans up all resources associated with the context": its arrays
// go with it, and a later cuArrayDestroy of one is told the handle is unknown (not a crash).
TEST_F(Textures, ArraysGoWithTheirContext) {
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  CUcontext primary = nullptr, own = nullptr;
  ASSERT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&primary), CUDA_SUCCESS);
  ASSERT_EQ(create(&own, 0, 0), CUDA_SUCCESS);  // becomes current
  CUarray array = create3D(8, 8, 0, CU_AD_FORMAT_FLOAT, 1);
  ASSERT_EQ(CU(cuCtxDestroy, CUcontext)(own), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(primary), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(array), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Textures, PlaneSparseAndMemoryRequirementQueries) {
  CUarray array = create3D(16, 16, 0, CU_AD_FORMAT_FLOAT, 1);
  CUarray plane = nullptr;
  EXPECT_EQ(CU(cuArrayGetPlane, CUarray*, CUarray, unsigned)(&plane, array, 0),
            CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY_SPARSE_PROPERTIES sparse{};
  EXPECT_EQ(CU(cuArrayGetSparseProperties, CUDA_ARRAY_SPARSE_PROPERTIES*, CUarray)(&sparse, array),
            CUDA_ERROR_INVALID_VALUE);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  EXPECT_EQ(CU(cuArrayGetMemoryRequirements, CUDA_ARRAY_MEMORY_REQUIREMENTS*, CUarray, CUdevice)(
                &req, array, 0),
            CUDA_ERROR_INVALID_VALUE);
  destroy(array);
  EXPECT_EQ(CU(cuArrayGetPlane, CUarray*, CUarray, unsigned)(&plane, array, 0),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Textures, MipmappedArrayLevels) {
  auto create =
      CU(cuMipmappedArrayCreate, CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned);
  auto level = CU(cuMipmappedArrayGetLevel, CUarray*, CUmipmappedArray, unsigned);
  CUDA_ARRAY3D_DESCRIPTOR desc{16, 8, 0, CU_AD_FORMAT_FLOAT, 2, 0};
  CUmipmappedArray mipmap = nullptr;
  // numLevels is clamped to [1, 1 + floor(log2(16))]: 20 levels are the 5 of the full chain,
  // 0 is 1.
  ASSERT_EQ(create(&mipmap, &desc, 20), CUDA_SUCCESS);
  CUarray l4 = nullptr;
  ASSERT_EQ(level(&l4, mipmap, 4), CUDA_SUCCESS);
  CUDA_ARRAY3D_DESCRIPTOR smallest{};
  ASSERT_EQ(CU(cuArray3DGetDescriptor, CUDA_ARRAY3D_DESCRIPTOR*, CUarray)(&smallest, l4),
            CUDA_SUCCESS);
  EXPECT_EQ(smallest.Width, 1u);
  EXPECT_EQ(smallest.Height, 1u);
  EXPECT_EQ(level(&l4, mipmap, 5), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMipmappedArrayDestroy, CUmipmappedArray)(mipmap), CUDA_SUCCESS);
  ASSERT_EQ(create(&mipmap, &desc, 0), CUDA_SUCCESS);
  EXPECT_EQ(level(&l4, mipmap, 0), CUDA_SUCCESS);
  EXPECT_EQ(level(&l4, mipmap, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMipmappedArrayDestroy, CUmipmappedArray)(mipmap), CUDA_SUCCESS);
  ASSERT_EQ(create(&mipmap, &desc, 5), CUDA_SUCCESS);
  CUarray l3 = nullptr;
  ASSERT_EQ(level(&l3, mipmap, 3), CUDA_SUCCESS);
  CUDA_ARRAY3D_DESCRIPTOR got{};
  ASSERT_EQ(CU(cuArray3DGetDescriptor, CUDA_ARRAY3D_DESCRIPTOR*, CUarray)(&got, l3), CUDA_SUCCESS);
  EXPECT_EQ(got.Width, 2u);
  EXPECT_EQ(got.Height, 1u);
  EXPECT_EQ(level(&l3, mipmap, 5), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(l3), CUDA_ERROR_INVALID_HANDLE);  // owned by the mipmap
  CUDA_ARRAY_SPARSE_PROPERTIES sparse{};
  EXPECT_EQ(CU(cuMipmappedArrayGetSparseProperties, CUDA_ARRAY_SPARSE_PROPERTIES*,
               CUmipmappedArray)(&sparse, mipmap),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuMipmappedArrayDestroy, CUmipmappedArray)(mipmap), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMipmappedArrayDestroy, CUmipmappedArray)(mipmap), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Textures, CopiesThroughArrays) {
  const size_t w = 5, h = 3, d = 2;
  CUarray array = create3D(w, h, d, CU_AD_FORMAT_SIGNED_INT32, 1);
  std::vector<int32_t> host(w * h * d);
  std::iota(host.begin(), host.end(), 100);
  // Host -> array (3D), array -> device (3D), device -> host (1D).
  CUDA_MEMCPY3D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = w * 4;
  up.srcHeight = h;
  up.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  up.dstArray = array;
  up.WidthInBytes = w * 4;
  up.Height = h;
  up.Depth = d;
  ASSERT_EQ(CU(cuMemcpy3D, const CUDA_MEMCPY3D*)(&up), CUDA_SUCCESS);
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, host.size() * 4), CUDA_SUCCESS);
  CUDA_MEMCPY3D across{};
  across.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  across.srcArray = array;
  across.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  across.dstDevice = device;
  across.dstPitch = w * 4;
  across.dstHeight = h;
  across.WidthInBytes = w * 4;
  across.Height = h;
  across.Depth = d;
  ASSERT_EQ(CU(cuMemcpy3DAsync, const CUDA_MEMCPY3D*, CUstream)(&across, nullptr), CUDA_SUCCESS);
  std::vector<int32_t> back(host.size(), 0);
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(back.data(), device, back.size() * 4),
            CUDA_SUCCESS);
  EXPECT_EQ(back, host);

  // A 2D sub-rectangle of slice 0 back to the host: elements (1..3, 1..2).
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  down.srcArray = array;
  down.srcXInBytes = 4;
  down.srcY = 1;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  int32_t rect[2][3] = {};
  down.dstHost = rect;
  down.dstPitch = sizeof rect[0];
  down.WidthInBytes = 12;
  down.Height = 2;
  ASSERT_EQ(CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&down), CUDA_SUCCESS);
  EXPECT_EQ(rect[0][0], 100 + 1 * 5 + 1);
  EXPECT_EQ(rect[1][2], 100 + 2 * 5 + 3);

  // Regions beyond the array and partial elements are refused.
  down.WidthInBytes = 4 * 5;
  EXPECT_EQ(CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&down), CUDA_ERROR_INVALID_VALUE);
  down.WidthInBytes = 6;
  EXPECT_EQ(CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&down), CUDA_ERROR_INVALID_VALUE);

  // Array -> array with the 3D batch (elements), then the peer form back to the host.
  CUarray second = create3D(w, h, d, CU_AD_FORMAT_SIGNED_INT32, 1);
  CUDA_MEMCPY3D_BATCH_OP op{};
  op.src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
  op.src.op.array.array = array;
  op.src.op.array.offset = {1, 0, 1};
  op.dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
  op.dst.op.array.array = second;
  op.extent = {2, 3, 1};
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  auto batch3D =
      CU(cuMemcpy3DBatchAsync, size_t, CUDA_MEMCPY3D_BATCH_OP*, unsigned long long, CUstream);
  // The batch forms refuse the legacy NULL stream.
  EXPECT_EQ(batch3D(1, &op, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(batch3D(1, &op, 0, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  CUDA_MEMCPY3D_PEER peer{};
  peer.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  peer.srcArray = second;
  peer.dstMemoryType = CU_MEMORYTYPE_HOST;
  int32_t out[3][2] = {};
  peer.dstHost = out;
  peer.dstPitch = sizeof out[0];
  peer.WidthInBytes = 8;
  peer.Height = 3;
  peer.Depth = 1;
  ASSERT_EQ(CU(cuMemcpy3DPeer, const CUDA_MEMCPY3D_PEER*)(&peer), CUDA_SUCCESS);
  EXPECT_EQ(out[0][0], 100 + 15 + 1);
  EXPECT_EQ(out[2][1], 100 + 15 + 10 + 2);
  op.extent = {0, 1, 1};
  EXPECT_EQ(batch3D(1, &op, 0, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  destroy(second);
  destroy(array);
  EXPECT_EQ(CU(cuMemcpy3D, const CUDA_MEMCPY3D*)(&up), CUDA_ERROR_INVALID_VALUE);  // destroyed
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
}

TEST_F(Textures, BatchAsyncCopiesEachPair) {
  auto batch = CU(cuMemcpyBatchAsync, CUdeviceptr*, CUdeviceptr*, size_t*, size_t,
                  CUmemcpyAttributes*, size_t*, size_t, CUstream);
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 64), CUDA_SUCCESS);
  uint32_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, back[8] = {};
  CUdeviceptr dsts[3] = {device, device + 16, reinterpret_cast<CUdeviceptr>(back)};
  CUdeviceptr srcs[3] = {reinterpret_cast<CUdeviceptr>(a), reinterpret_cast<CUdeviceptr>(b),
                         device};
  size_t sizes[3] = {16, 16, 32};
  CUmemcpyAttributes attr{};
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t index = 0;
  // The legacy NULL stream is refused; a created stream or the per-thread stream serve.
  EXPECT_EQ(batch(dsts, srcs, sizes, 3, &attr, &index, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(batch(dsts, srcs, sizes, 3, &attr, &index, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i], static_cast<uint32_t>(i + 1));
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
  EXPECT_EQ(batch(dsts, srcs, sizes, 3, &attr, &index, 1, stream), CUDA_ERROR_INVALID_VALUE);
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  EXPECT_EQ(batch(dsts, srcs, sizes, 0, &attr, &index, 1, stream), CUDA_ERROR_INVALID_VALUE);
  sizes[0] = 1000;  // beyond the allocation
  EXPECT_EQ(batch(dsts, srcs, sizes, 3, &attr, &index, 1, stream), CUDA_ERROR_INVALID_VALUE);
  // Managed and pinned memory bound their copies too (no write past them).
  CUdeviceptr managed = 0;
  ASSERT_EQ(
      CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&managed, 16, CU_MEM_ATTACH_GLOBAL),
      CUDA_SUCCESS);
  uint32_t wide[16] = {};
  CUdeviceptr intoManaged[1] = {managed};
  CUdeviceptr fromHost[1] = {reinterpret_cast<CUdeviceptr>(wide)};
  size_t tooMany[1] = {sizeof wide};
  EXPECT_EQ(batch(intoManaged, fromHost, tooMany, 1, &attr, &index, 1, stream),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(index, 0u);
  CUDA_MEMCPY2D unified{};
  unified.srcMemoryType = CU_MEMORYTYPE_HOST;
  unified.srcHost = wide;
  unified.srcPitch = 32;
  unified.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  unified.dstDevice = managed;
  unified.dstPitch = 32;
  unified.WidthInBytes = 32;
  unified.Height = 2;
  EXPECT_EQ(CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&unified), CUDA_ERROR_INVALID_VALUE);
  unified.WidthInBytes = 8;
  unified.dstPitch = 8;
  EXPECT_EQ(CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&unified), CUDA_SUCCESS);  // 16 bytes fit
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(managed), CUDA_SUCCESS);

  // DURING_API_CALL: the source (pinned, behind a busy stream) is read before the call returns,
  // so it may be overwritten at once.
  void* pinned = nullptr;
  ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(&pinned, 16), CUDA_SUCCESS);
  std::memset(pinned, 'z', 16);
  std::atomic<bool> gate{false};
  ASSERT_EQ(CU(cuLaunchHostFunc, CUstream, CUhostFn, void*)(
                stream,
                [](void* g) {
                  while (!static_cast<std::atomic<bool>*>(g)->load()) usleep(1000);
                },
                &gate),
            CUDA_SUCCESS);
  std::thread opener([&gate] {
    usleep(20000);
    gate.store(true);
  });
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  CUdeviceptr pinnedDst[1] = {device};
  CUdeviceptr pinnedSrc[1] = {reinterpret_cast<CUdeviceptr>(pinned)};
  size_t pinnedSize[1] = {16};
  ASSERT_EQ(batch(pinnedDst, pinnedSrc, pinnedSize, 1, &attr, &index, 1, stream), CUDA_SUCCESS);
  std::memset(pinned, 'q', 16);
  opener.join();
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  char copied[16] = {};
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(copied, device, 16), CUDA_SUCCESS);
  for (char c : copied) EXPECT_EQ(c, 'z');
  EXPECT_EQ(CU(cuMemFreeHost, void*)(pinned), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
}

TEST_F(Textures, TextureObjectsDescribeTheirResource) {
  auto create = CU(cuTexObjectCreate, CUtexObject*, const CUDA_RESOURCE_DESC*,
                   const CUDA_TEXTURE_DESC*, const CUDA_RESOURCE_VIEW_DESC*);
  auto destroyTex = CU(cuTexObjectDestroy, CUtexObject);
  CUarray array = create3D(4, 2, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = array;
  CUDA_TEXTURE_DESC tex{};
  tex.addressMode[0] = CU_TR_ADDRESS_MODE_WRAP;
  tex.addressMode[1] = CU_TR_ADDRESS_MODE_BORDER;
  tex.filterMode = CU_TR_FILTER_MODE_LINEAR;
  tex.flags = CU_TRSF_NORMALIZED_COORDINATES;
  tex.borderColor[2] = 0.5f;
  CUtexObject object = 0;
  EXPECT_EQ(create(nullptr, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(&object, nullptr, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(&object, &res, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  // The handle is the sampler's view of the texels.
  const auto* view = reinterpret_cast<const support::TextureView*>(object);
  EXPECT_EQ(view->magic, support::kTextureViewMagic);
  EXPECT_EQ(view->width, 4u);
  EXPECT_EQ(view->height, 2u);
  EXPECT_EQ(view->channels, 4);
  EXPECT_EQ(view->filter, support::TextureFilter::Linear);
  EXPECT_EQ(view->address[1], support::TextureAddressMode::Border);
  EXPECT_TRUE(view->normalizedCoords);
  EXPECT_FALSE(view->readAsInteger);
  CUDA_RESOURCE_DESC gotRes{};
  ASSERT_EQ(CU(cuTexObjectGetResourceDesc, CUDA_RESOURCE_DESC*, CUtexObject)(&gotRes, object),
            CUDA_SUCCESS);
  EXPECT_EQ(gotRes.resType, CU_RESOURCE_TYPE_ARRAY);
  EXPECT_EQ(gotRes.res.array.hArray, array);
  CUDA_TEXTURE_DESC gotTex{};
  ASSERT_EQ(CU(cuTexObjectGetTextureDesc, CUDA_TEXTURE_DESC*, CUtexObject)(&gotTex, object),
            CUDA_SUCCESS);
  EXPECT_EQ(gotTex.borderColor[2], 0.5f);
  CUDA_RESOURCE_VIEW_DESC gotView{};
  EXPECT_EQ(
      CU(cuTexObjectGetResourceViewDesc, CUDA_RESOURCE_VIEW_DESC*, CUtexObject)(&gotView, object),
      CUDA_ERROR_INVALID_VALUE);  // created without a view
  ASSERT_EQ(destroyTex(object), CUDA_SUCCESS);
  EXPECT_EQ(destroyTex(object), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuTexObjectGetResourceDesc, CUDA_RESOURCE_DESC*, CUtexObject)(&gotRes, object),
            CUDA_ERROR_INVALID_VALUE);

  // Invalid descriptors.
  tex.addressMode[0] = static_cast<CUaddress_mode>(9);
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  tex.addressMode[0] = CU_TR_ADDRESS_MODE_CLAMP;
  tex.flags |= CU_TRSF_READ_AS_INTEGER;  // linear filtering of integers
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  tex.flags = 0;
  res.flags = 1;
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.flags = 0;
  destroy(array);
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);  // destroyed array

  // Linear memory: the range must be allocated, start at the texture alignment (512) and, for
  // pitch2D, have a pitch that is a multiple of the pitch alignment (32).
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 4096), CUDA_SUCCESS);
  int alignment = 0, pitchAlignment = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &alignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &pitchAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(device % alignment, 0u);
  res = {};
  res.resType = CU_RESOURCE_TYPE_LINEAR;
  res.res.linear.devPtr = device + 4;
  res.res.linear.format = CU_AD_FORMAT_FLOAT;
  res.res.linear.numChannels = 1;
  res.res.linear.sizeInBytes = 256;
  tex = {};
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.linear.devPtr = device + alignment;
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);
  res = {};
  res.resType = CU_RESOURCE_TYPE_PITCH2D;
  res.res.pitch2D.devPtr = device + 4;
  res.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  res.res.pitch2D.numChannels = 1;
  res.res.pitch2D.width = 8;
  res.res.pitch2D.height = 2;
  res.res.pitch2D.pitchInBytes = pitchAlignment * 4;
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.pitch2D.devPtr = device;
  res.res.pitch2D.pitchInBytes = pitchAlignment * 4 + 4;  // wide enough, but not a multiple
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.pitch2D.pitchInBytes = pitchAlignment * 4;
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 256), CUDA_SUCCESS);
  res = {};
  res.resType = CU_RESOURCE_TYPE_LINEAR;
  res.res.linear.devPtr = device;
  res.res.linear.format = CU_AD_FORMAT_FLOAT;
  res.res.linear.numChannels = 1;
  res.res.linear.sizeInBytes = 512;
  tex = {};
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.linear.sizeInBytes = 256;
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  view = reinterpret_cast<const support::TextureView*>(object);
  EXPECT_EQ(view->width, 64u);
  EXPECT_EQ(view->shape, support::TextureShape::Linear1D);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
}

TEST_F(Textures, SurfaceObjectsNeedLoadStoreArrays) {
  auto create = CU(cuSurfObjectCreate, CUsurfObject*, const CUDA_RESOURCE_DESC*);
  CUarray plain = create3D(4, 4, 0, CU_AD_FORMAT_FLOAT, 1);
  CUarray surface = create3D(4, 4, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
  CUDA_RESOURCE_DESC res{};
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = plain;
  CUsurfObject object = 0;
  EXPECT_EQ(create(&object, &res), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(create(&object, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.array.hArray = surface;
  ASSERT_EQ(create(&object, &res), CUDA_SUCCESS);
  CUDA_RESOURCE_DESC got{};
  ASSERT_EQ(CU(cuSurfObjectGetResourceDesc, CUDA_RESOURCE_DESC*, CUsurfObject)(&got, object),
            CUDA_SUCCESS);
  EXPECT_EQ(got.res.array.hArray, surface);
  // A surface handle is not a texture handle.
  EXPECT_EQ(CU(cuTexObjectDestroy, CUtexObject)(object), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuSurfObjectDestroy, CUsurfObject)(object), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuSurfObjectDestroy, CUsurfObject)(object), CUDA_ERROR_INVALID_VALUE);
  destroy(plain);
  destroy(surface);
}

// The device's reported limits are the ones creation enforces, and the descriptor rules of
// cuda.h: layered depths, linear extents, the flags only some resources take.
TEST_F(Textures, LimitsAndResourceRulesAsDocumented) {
  auto attribute = [](CUdevice_attribute which) {
    int value = 0;
    EXPECT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(&value, which, 0),
              CUDA_SUCCESS);
    return static_cast<size_t>(value);
  };
  auto create3 = CU(cuArray3DCreate, CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*);
  CUarray array = nullptr;
  size_t layers = attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
  CUDA_ARRAY3D_DESCRIPTOR d3{4, 4, layers + 1, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED};
  EXPECT_EQ(create3(&array, &d3), CUDA_ERROR_INVALID_VALUE);
  d3.Height = 0;  // 1D layered
  EXPECT_EQ(create3(&array, &d3), CUDA_ERROR_INVALID_VALUE);
  d3.Depth = layers;
  ASSERT_EQ(create3(&array, &d3), CUDA_SUCCESS);
  destroy(array);
  size_t cubeDepth = attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
  EXPECT_EQ(cubeDepth % 6, 0u);
  d3 = {4, 4, cubeDepth + 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP};
  EXPECT_EQ(create3(&array, &d3), CUDA_ERROR_INVALID_VALUE);

  auto create = CU(cuTexObjectCreate, CUtexObject*, const CUDA_RESOURCE_DESC*,
                   const CUDA_TEXTURE_DESC*, const CUDA_RESOURCE_VIEW_DESC*);
  auto destroyTex = CU(cuTexObjectDestroy, CUtexObject);
  CUtexObject object = 0;
  CUDA_TEXTURE_DESC tex{};
  CUDA_RESOURCE_DESC res{};
  // Seamless cubemap filtering needs a cubemap.
  array = create3D(8, 8, 0, CU_AD_FORMAT_FLOAT, 1);
  res.resType = CU_RESOURCE_TYPE_ARRAY;
  res.res.array.hArray = array;
  tex.flags = CU_TRSF_SEAMLESS_CUBEMAP;
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  destroy(array);
  array = create3D(8, 8, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP);
  res.res.array.hArray = array;
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);
  destroy(array);

  // A mipmapped texture takes normalized coordinates only.
  CUmipmappedArray mipmap = nullptr;
  CUDA_ARRAY3D_DESCRIPTOR md{16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0};
  ASSERT_EQ(CU(cuMipmappedArrayCreate, CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned)(
                &mipmap, &md, 3),
            CUDA_SUCCESS);
  res = {};
  res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
  res.res.mipmap.hMipmappedArray = mipmap;
  tex = {};
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  tex.flags = CU_TRSF_NORMALIZED_COORDINATES;
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMipmappedArrayDestroy, CUmipmappedArray)(mipmap), CUDA_SUCCESS);

  // Over linear memory the filter and address modes are ignored, and tex1Dfetch reaches at
  // most MAXIMUM_TEXTURE1D_LINEAR_WIDTH texels.
  size_t linearWidth = attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH);
  CUdeviceptr device = 0;
  size_t bytes = (linearWidth + 64) * 1;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, bytes), CUDA_SUCCESS);
  res = {};
  res.resType = CU_RESOURCE_TYPE_LINEAR;
  res.res.linear.devPtr = device;
  res.res.linear.format = CU_AD_FORMAT_UNSIGNED_INT8;
  res.res.linear.numChannels = 1;
  res.res.linear.sizeInBytes = linearWidth + 1;
  tex = {};
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.linear.sizeInBytes = linearWidth;
  tex.filterMode = CU_TR_FILTER_MODE_LINEAR;
  tex.flags = CU_TRSF_READ_AS_INTEGER;
  tex.addressMode[0] = static_cast<CUaddress_mode>(9);
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  const auto* view = reinterpret_cast<const support::TextureView*>(object);
  EXPECT_EQ(view->filter, support::TextureFilter::Point);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);

  // Pitch2D: width, height and pitch within the device's linear 2D limits.
  size_t width2D = attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
  size_t height2D = attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
  size_t pitch2D = attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH);
  res = {};
  res.resType = CU_RESOURCE_TYPE_PITCH2D;
  res.res.pitch2D.devPtr = device;
  res.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT8;
  res.res.pitch2D.numChannels = 1;
  res.res.pitch2D.width = 64;
  res.res.pitch2D.height = height2D + 1;
  res.res.pitch2D.pitchInBytes = 64;
  tex = {};
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.pitch2D.height = 2;
  res.res.pitch2D.width = width2D + 32;
  res.res.pitch2D.pitchInBytes = width2D + 32;
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.pitch2D.width = 32;
  res.res.pitch2D.pitchInBytes = pitch2D + 32;
  EXPECT_EQ(create(&object, &res, &tex, nullptr), CUDA_ERROR_INVALID_VALUE);
  res.res.pitch2D.pitchInBytes = pitch2D;
  ASSERT_EQ(create(&object, &res, &tex, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(destroyTex(object), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
}

// cuMemcpyAtoA needs elements of one size; cuMemcpy3D's rows must fit below srcY/dstY; the 2D
// memsets need a pitch aligned to their element.
TEST_F(Textures, CopyAndMemsetShapeRules) {
  CUarray floats = create3D(16, 0, 0, CU_AD_FORMAT_FLOAT, 1);
  CUarray shorts = create3D(16, 0, 0, CU_AD_FORMAT_UNSIGNED_INT16, 1);
  CUarray shortPairs = create3D(16, 0, 0, CU_AD_FORMAT_UNSIGNED_INT16, 2);
  auto atoa = CU(cuMemcpyAtoA, CUarray, size_t, CUarray, size_t, size_t);
  EXPECT_EQ(atoa(shorts, 0, floats, 0, 32), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(atoa(floats, 0, shorts, 0, 32), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(atoa(shortPairs, 0, floats, 0, 64), CUDA_SUCCESS);  // 4-byte elements both
  destroy(floats);
  destroy(shorts);
  destroy(shortPairs);

  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 4096), CUDA_SUCCESS);
  std::vector<uint8_t> host(4096);
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_HOST;
  copy.srcHost = host.data();
  copy.srcPitch = 64;
  copy.srcHeight = 4;
  copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.dstDevice = device;
  copy.dstPitch = 64;
  copy.dstHeight = 4;
  copy.WidthInBytes = 16;
  copy.Height = 4;
  copy.Depth = 2;
  auto memcpy3D = CU(cuMemcpy3D, const CUDA_MEMCPY3D*);
  EXPECT_EQ(memcpy3D(&copy), CUDA_SUCCESS);
  copy.srcY = 1;
  EXPECT_EQ(memcpy3D(&copy), CUDA_ERROR_INVALID_VALUE);
  copy.srcY = 0;
  copy.dstY = 1;
  EXPECT_EQ(memcpy3D(&copy), CUDA_ERROR_INVALID_VALUE);
  copy.dstHeight = 5;
  EXPECT_EQ(memcpy3D(&copy), CUDA_SUCCESS);

  auto set16 = CU(cuMemsetD2D16, CUdeviceptr, size_t, unsigned short, size_t, size_t);
  auto set32 = CU(cuMemsetD2D32, CUdeviceptr, size_t, unsigned, size_t, size_t);
  EXPECT_EQ(set16(device, 65, 1, 8, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(set16(device, 66, 1, 8, 4), CUDA_SUCCESS);
  EXPECT_EQ(set32(device, 66, 1, 8, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(set32(device, 68, 1, 8, 4), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda
