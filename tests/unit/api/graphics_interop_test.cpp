// OpenGL buffer interop through libcuda.so.1 on the CPU device, with a real OpenGL context: a
// headless EGL context (Mesa's surfaceless platform, llvmpipe) owns buffer objects that CUDA
// registers, maps, writes with kernels and copies, and that OpenGL reads back after unmapping.
// Missing EGL/GL fails the tests (never a silent pass): scripts/install-deps.sh installs them.
#define GL_GLEXT_PROTOTYPES
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>
#include <GL/glext.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {



CUresult launchAddOne(CUdeviceptr data, uint32_t n, CUstream stream) {
  static CUfunction function = loadAddOne();
  void* params[] = {&data, &n};
  return proc<Launch>("cuLaunchKernel", 7000)(function, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream,
                                              params, nullptr);
}

auto registerBuffer() {
  return CU(cuGraphicsGLRegisterBuffer, CUgraphicsResource*, unsigned, unsigned);
}
auto unregister() { return CU(cuGraphicsUnregisterResource, CUgraphicsResource); }
auto mapResources() { return CU(cuGraphicsMapResources, unsigned, CUgraphicsResource*, CUstream); }
auto unmapResources() {
  return CU(cuGraphicsUnmapResources, unsigned, CUgraphicsResource*, CUstream);
}
auto mappedPointer() {
  return CU(cuGraphicsResourceGetMappedPointer, CUdeviceptr*, size_t*, CUgraphicsResource);
}
auto setMapFlags() { return CU(cuGraphicsResourceSetMapFlags, CUgraphicsResource, unsigned); }
auto glGetDevices() { return CU(cuGLGetDevices, unsigned*, CUdevice*, unsigned, int); }
auto memcpyHtoD() { return CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t); }
auto memcpyDtoH() { return CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t); }

// One headless OpenGL 3.3 context for the whole test binary.
struct GlContext {
  EGLDisplay display = EGL_NO_DISPLAY;
  EGLContext context = EGL_NO_CONTEXT;
  std::string error;

  GlContext() {
    auto getDisplay = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
        eglGetProcAddress("eglGetPlatformDisplayEXT"));
    if (getDisplay == nullptr) {
      error = "EGL has no eglGetPlatformDisplayEXT";
      return;
    }
    display = getDisplay(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    EGLint major = 0, minor = 0;
    if (display == EGL_NO_DISPLAY || !eglInitialize(display, &major, &minor)) {
      error = "no EGL surfaceless display (Mesa's libegl-mesa0 installed?)";
      return;
    }
    eglBindAPI(EGL_OPENGL_API);
    const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
                                 EGL_NONE};
    context = eglCreateContext(display, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attributes);
    if (context == EGL_NO_CONTEXT) error = "eglCreateContext failed";
  }
  bool makeCurrent() const {
    return eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context) == EGL_TRUE;
  }
  void release() const { eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT); }
};

GlContext& gl() {
  static GlContext context;
  return context;
}

class GlInterop : public Driver {
 protected:
  void SetUp() override {
    Driver::SetUp();
    ASSERT_TRUE(gl().error.empty()) << gl().error;
    ASSERT_TRUE(gl().makeCurrent()) << "eglMakeCurrent failed";
  }
  void TearDown() override {
    for (GLuint buffer : buffers_) glDeleteBuffers(1, &buffer);
    gl().release();
    Driver::TearDown();
  }

  // A GL buffer object holding `values`.
  GLuint makeBuffer(const std::vector<uint32_t>& values) {
    GLuint buffer = 0;
    glGenBuffers(1, &buffer);
    glBindBuffer(GL_ARRAY_BUFFER, buffer);
    glBufferData(GL_ARRAY_BUFFER, values.size() * 4, values.data(), GL_DYNAMIC_DRAW);
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    EXPECT_EQ(glGetError(), GLenum{GL_NO_ERROR});
    buffers_.push_back(buffer);
    return buffer;
  }
  // What OpenGL reads from the buffer.
  static std::vector<uint32_t> glRead(GLuint buffer, size_t count) {
    std::vector<uint32_t> values(count);
    glBindBuffer(GL_ARRAY_BUFFER, buffer);
    glGetBufferSubData(GL_ARRAY_BUFFER, 0, count * 4, values.data());
    glBindBuffer(GL_ARRAY_BUFFER, 0);
    EXPECT_EQ(glGetError(), GLenum{GL_NO_ERROR});
    return values;
  }
  static std::vector<uint32_t> iota(size_t count, uint32_t first) {
    std::vector<uint32_t> values(count);
    std::iota(values.begin(), values.end(), first);
    return values;
  }

  std::vector<GLuint> buffers_;
};

TEST_F(GlInterop, KernelWritesToAMappedBufferReachOpenGL) {
  constexpr uint32_t kCount = 1000;
  GLuint buffer = makeBuffer(iota(kCount, 10));
  CUgraphicsResource resource = nullptr;
  ASSERT_EQ(registerBuffer()(&resource, buffer, CU_GRAPHICS_REGISTER_FLAGS_NONE), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(mapResources()(1, &resource, stream), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
  ASSERT_EQ(mappedPointer()(&pointer, &bytes, resource), CUDA_SUCCESS);
  EXPECT_NE(pointer, 0u);
  EXPECT_EQ(bytes, kCount * 4);

  // The pointer is device memory of the context while mapped.
  unsigned memoryType = 0;
  auto attribute = CU(cuPointerGetAttribute, void*, int, CUdeviceptr);
  ASSERT_EQ(attribute(&memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer + 8), CUDA_SUCCESS);
  EXPECT_EQ(memoryType, unsigned{CU_MEMORYTYPE_DEVICE});
  CUcontext owner = nullptr;
  ASSERT_EQ(attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, pointer), CUDA_SUCCESS);
  EXPECT_EQ(owner, context_);

  ASSERT_EQ(launchAddOne(pointer, kCount, stream), CUDA_SUCCESS);
  ASSERT_EQ(launchAddOne(pointer, kCount / 2, stream), CUDA_SUCCESS);
  // Unmapping orders the stream's kernels before later GL use: no synchronize in between.
  ASSERT_EQ(unmapResources()(1, &resource, stream), CUDA_SUCCESS);
  std::vector<uint32_t> expected = iota(kCount, 11);
  for (uint32_t i = 0; i < kCount / 2; ++i) ++expected[i];
  EXPECT_EQ(glRead(buffer, kCount), expected);
  // Unmapped, the address is no longer CUDA memory.
  EXPECT_EQ(attribute(&memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer),
            CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(unregister()(resource), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

TEST_F(GlInterop, CopiesSeeOpenGLWritesBetweenMappings) {
  constexpr size_t kCount = 256;
  GLuint buffer = makeBuffer(iota(kCount, 0));
  CUgraphicsResource resource = nullptr;
  ASSERT_EQ(registerBuffer()(&resource, buffer, CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD),
            CUDA_SUCCESS);
  // Write-discard mapping: CUDA overwrites everything.
  ASSERT_EQ(mapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
  ASSERT_EQ(mappedPointer()(&pointer, &bytes, resource), CUDA_SUCCESS);
  ASSERT_EQ(bytes, kCount * 4);
  std::vector<uint32_t> written = iota(kCount, 5000);
  ASSERT_EQ(memcpyHtoD()(pointer, written.data(), bytes), CUDA_SUCCESS);
  ASSERT_EQ(unmapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(glRead(buffer, kCount), written);

  // OpenGL writes while unmapped; a read-only mapping shows them to CUDA.
  std::vector<uint32_t> fromGl = iota(kCount, 77);
  glBindBuffer(GL_ARRAY_BUFFER, buffer);
  glBufferSubData(GL_ARRAY_BUFFER, 0, kCount * 4, fromGl.data());
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  ASSERT_EQ(setMapFlags()(resource, CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY), CUDA_SUCCESS);
  ASSERT_EQ(mapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  CUdeviceptr again = 0;
  ASSERT_EQ(mappedPointer()(&again, nullptr, resource), CUDA_SUCCESS);
  std::vector<uint32_t> seen(kCount);
  ASSERT_EQ(memcpyDtoH()(seen.data(), again, kCount * 4), CUDA_SUCCESS);
  EXPECT_EQ(seen, fromGl);
  // The 32-bit form of CUDA 3.0 answers only when the mapping fits in it.
  unsigned pointer32 = 0, size32 = 0;
  auto mapped32 = proc<CUresult (*)(unsigned*, unsigned*, CUgraphicsResource)>(
      "cuGraphicsResourceGetMappedPointer", 3000);
  if (again <= 0xffffffffu) {
    EXPECT_EQ(mapped32(&pointer32, &size32, resource), CUDA_SUCCESS);
    EXPECT_EQ(pointer32, again);
    EXPECT_EQ(size32, kCount * 4);
  } else {
    EXPECT_EQ(mapped32(&pointer32, &size32, resource), CUDA_ERROR_INVALID_VALUE);
  }
  ASSERT_EQ(unmapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(unregister()(resource), CUDA_SUCCESS);
}

TEST_F(GlInterop, SeveralResourcesMapTogether) {
  GLuint first = makeBuffer(iota(64, 0));
  GLuint second = makeBuffer(iota(128, 1000));
  CUgraphicsResource resources[2] = {};
  ASSERT_EQ(registerBuffer()(&resources[0], first, 0), CUDA_SUCCESS);
  ASSERT_EQ(registerBuffer()(&resources[1], second, 0), CUDA_SUCCESS);
  ASSERT_EQ(mapResources()(2, resources, nullptr), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  size_t aBytes = 0, bBytes = 0;
  ASSERT_EQ(mappedPointer()(&a, &aBytes, resources[0]), CUDA_SUCCESS);
  ASSERT_EQ(mappedPointer()(&b, &bBytes, resources[1]), CUDA_SUCCESS);
  EXPECT_EQ(aBytes, 256u);
  EXPECT_EQ(bBytes, 512u);
  // Device-to-device copy from one buffer into the other, then a kernel on the target.
  ASSERT_EQ(CU(cuMemcpyDtoD, CUdeviceptr, CUdeviceptr, size_t)(b, a, aBytes), CUDA_SUCCESS);
  ASSERT_EQ(launchAddOne(b, 128, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(unmapResources()(2, resources, nullptr), CUDA_SUCCESS);
  std::vector<uint32_t> expected = iota(128, 1001);
  for (uint32_t i = 0; i < 64; ++i) expected[i] = i + 1;
  EXPECT_EQ(glRead(second, 128), expected);
  EXPECT_EQ(glRead(first, 64), iota(64, 0));
  EXPECT_EQ(unregister()(resources[0]), CUDA_SUCCESS);
  EXPECT_EQ(unregister()(resources[1]), CUDA_SUCCESS);
}

TEST_F(GlInterop, GetDevicesNamesTheCpuDevice) {
  unsigned count = 0;
  CUdevice devices[4] = {-1, -1, -1, -1};
  ASSERT_EQ(glGetDevices()(&count, devices, 4, CU_GL_DEVICE_LIST_ALL), CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(devices[0], 0);
  EXPECT_EQ(devices[1], -1);
  count = 0;
  // The CUDA 4.1 form (cuGLGetDevices) and the 6.5 one (cuGLGetDevices_v2) answer alike.
  using GetDevices = CUresult (*)(unsigned*, CUdevice*, unsigned, int);
  EXPECT_EQ(
      proc<GetDevices>("cuGLGetDevices", 4010)(&count, nullptr, 0, CU_GL_DEVICE_LIST_CURRENT_FRAME),
      CUDA_SUCCESS);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(glGetDevices()(&count, devices, 4, 7), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(glGetDevices()(nullptr, devices, 4, CU_GL_DEVICE_LIST_ALL), CUDA_ERROR_INVALID_VALUE);
  gl().release();
  EXPECT_EQ(glGetDevices()(&count, devices, 4, CU_GL_DEVICE_LIST_ALL),
            CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
}

TEST_F(GlInterop, RegistrationErrors) {
  GLuint buffer = makeBuffer(iota(16, 0));
  CUgraphicsResource resource = nullptr;
  EXPECT_EQ(registerBuffer()(nullptr, buffer, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(registerBuffer()(&resource, buffer, CU_GRAPHICS_REGISTER_FLAGS_SURFACE_LDST),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(registerBuffer()(&resource, 0, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(registerBuffer()(&resource, 987654, 0), CUDA_ERROR_INVALID_HANDLE);
  gl().release();
  EXPECT_EQ(registerBuffer()(&resource, buffer, 0), CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  ASSERT_TRUE(gl().makeCurrent());
}

// A 2D copy between host memory and a CUDA array (the whole array).
CUresult copyArray(CUarray array, void* host, size_t widthBytes, size_t height, bool toArray) {
  CUDA_MEMCPY2D copy{};
  if (toArray) {
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = host;
    copy.srcPitch = widthBytes;
    copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.dstArray = array;
  } else {
    copy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    copy.srcArray = array;
    copy.dstMemoryType = CU_MEMORYTYPE_HOST;
    copy.dstHost = host;
    copy.dstPitch = widthBytes;
  }
  copy.WidthInBytes = widthBytes;
  copy.Height = height;
  return CU(cuMemcpy2D, const CUDA_MEMCPY2D*)(&copy);
}

auto registerImage() {
  return CU(cuGraphicsGLRegisterImage, CUgraphicsResource*, unsigned, unsigned, unsigned);
}
auto subResourceArray() {
  return CU(cuGraphicsSubResourceGetMappedArray, CUarray*, CUgraphicsResource, unsigned, unsigned);
}

GLuint makeTexture(GLenum internal, int width, int height, int levels) {
  GLuint texture = 0;
  glGenTextures(1, &texture);
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexStorage2D(GL_TEXTURE_2D, levels, internal, width, height);
  glBindTexture(GL_TEXTURE_2D, 0);
  EXPECT_EQ(glGetError(), GLenum{GL_NO_ERROR});
  return texture;
}

TEST_F(GlInterop, ImagesAreCopiedIntoArraysWhileMapped) {
  constexpr int kWidth = 16, kHeight = 8;
  GLuint texture = makeTexture(GL_RGBA8, kWidth, kHeight, 1);
  std::vector<uint8_t> pixels(kWidth * kHeight * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + 3);
  glBindTexture(GL_TEXTURE_2D, texture);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, kWidth, kHeight, GL_RGBA, GL_UNSIGNED_BYTE,
                  pixels.data());
  glBindTexture(GL_TEXTURE_2D, 0);

  CUgraphicsResource resource = nullptr;
  ASSERT_EQ(registerImage()(&resource, texture, GL_TEXTURE_2D, CU_GRAPHICS_REGISTER_FLAGS_NONE),
            CUDA_SUCCESS);
  CUarray array = nullptr;
  EXPECT_EQ(subResourceArray()(&array, resource, 0, 0), CUDA_ERROR_NOT_MAPPED);
  ASSERT_EQ(mapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(subResourceArray()(&array, resource, 0, 0), CUDA_SUCCESS);
  CUarray other = nullptr;
  EXPECT_EQ(subResourceArray()(&other, resource, 0, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(subResourceArray()(&other, resource, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(mappedPointer()(&pointer, nullptr, resource), CUDA_ERROR_NOT_MAPPED_AS_POINTER);
  CUDA_ARRAY_DESCRIPTOR desc{};
  ASSERT_EQ(CU(cuArrayGetDescriptor, CUDA_ARRAY_DESCRIPTOR*, CUarray)(&desc, array), CUDA_SUCCESS);
  EXPECT_EQ(desc.Width, size_t{kWidth});
  EXPECT_EQ(desc.Height, size_t{kHeight});
  EXPECT_EQ(desc.Format, CU_AD_FORMAT_UNSIGNED_INT8);
  EXPECT_EQ(desc.NumChannels, 4u);
  // The array holds the texture's texels; what CUDA writes reaches the texture on unmap.
  std::vector<uint8_t> seen(pixels.size());
  ASSERT_EQ(copyArray(array, seen.data(), kWidth * 4, kHeight, false), CUDA_SUCCESS);
  EXPECT_EQ(seen, pixels);
  std::vector<uint8_t> written(pixels.size());
  for (size_t i = 0; i < written.size(); ++i) written[i] = static_cast<uint8_t>(255 - i);
  ASSERT_EQ(copyArray(array, written.data(), kWidth * 4, kHeight, true), CUDA_SUCCESS);
  // A level of the mapping is not the application's to destroy.
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(array), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(unmapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  std::vector<uint8_t> fromGl(pixels.size());
  glBindTexture(GL_TEXTURE_2D, texture);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glGetTexImage(GL_TEXTURE_2D, 0, GL_RGBA, GL_UNSIGNED_BYTE, fromGl.data());
  glBindTexture(GL_TEXTURE_2D, 0);
  EXPECT_EQ(fromGl, written);
  EXPECT_EQ(unregister()(resource), CUDA_SUCCESS);
  glDeleteTextures(1, &texture);
}

TEST_F(GlInterop, ImageMipLevelsMapAsAMipmappedArray) {
  GLuint texture = makeTexture(GL_R32F, 8, 4, 4);  // 8x4, 4x2, 2x1, 1x1
  std::vector<float> level2 = {1.5f, -2.25f};
  glBindTexture(GL_TEXTURE_2D, texture);
  glTexSubImage2D(GL_TEXTURE_2D, 2, 0, 0, 2, 1, GL_RED, GL_FLOAT, level2.data());
  glBindTexture(GL_TEXTURE_2D, 0);
  CUgraphicsResource resource = nullptr;
  ASSERT_EQ(registerImage()(&resource, texture, GL_TEXTURE_2D, 0), CUDA_SUCCESS);
  ASSERT_EQ(setMapFlags()(resource, CU_GRAPHICS_MAP_RESOURCE_FLAGS_READ_ONLY), CUDA_SUCCESS);
  ASSERT_EQ(mapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  CUmipmappedArray mipmapped = nullptr;
  ASSERT_EQ(CU(cuGraphicsResourceGetMappedMipmappedArray, CUmipmappedArray*, CUgraphicsResource)(
                &mipmapped, resource),
            CUDA_SUCCESS);
  auto getLevel = CU(cuMipmappedArrayGetLevel, CUarray*, CUmipmappedArray, unsigned);
  CUarray level = nullptr;
  ASSERT_EQ(getLevel(&level, mipmapped, 2), CUDA_SUCCESS);
  CUarray same = nullptr;
  ASSERT_EQ(subResourceArray()(&same, resource, 0, 2), CUDA_SUCCESS);
  EXPECT_EQ(same, level);
  EXPECT_EQ(getLevel(&level, mipmapped, 4), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(getLevel(&level, mipmapped, 2), CUDA_SUCCESS);
  std::vector<float> seen(2);
  ASSERT_EQ(copyArray(level, seen.data(), 8, 1, false), CUDA_SUCCESS);
  EXPECT_EQ(seen, level2);
  ASSERT_EQ(unmapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(unregister()(resource), CUDA_SUCCESS);
  glDeleteTextures(1, &texture);
}

TEST_F(GlInterop, ImageRegistrationErrors) {
  GLuint texture = makeTexture(GL_RGBA8, 4, 4, 1);
  CUgraphicsResource resource = nullptr;
  // Targets cudaGL.h lists but Rocuda does not implement yet; an unknown target.
  EXPECT_EQ(registerImage()(&resource, texture, GL_TEXTURE_3D, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(registerImage()(&resource, texture, GL_RENDERBUFFER, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(registerImage()(&resource, texture, GL_ARRAY_BUFFER, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(registerImage()(&resource, 4242, GL_TEXTURE_2D, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(registerImage()(&resource, texture, GL_TEXTURE_2D, 3), CUDA_ERROR_INVALID_VALUE);
  // RGB8 is not among the formats CUDA maps.
  GLuint rgb = makeTexture(GL_RGB8, 4, 4, 1);
  EXPECT_EQ(registerImage()(&resource, rgb, GL_TEXTURE_2D, 0), CUDA_ERROR_INVALID_VALUE);
  // A texture of another target.
  GLuint cube = 0;
  glGenTextures(1, &cube);
  glBindTexture(GL_TEXTURE_CUBE_MAP, cube);
  glBindTexture(GL_TEXTURE_CUBE_MAP, 0);
  EXPECT_EQ(registerImage()(&resource, cube, GL_TEXTURE_2D, 0), CUDA_ERROR_INVALID_VALUE);
  gl().release();
  EXPECT_EQ(registerImage()(&resource, texture, GL_TEXTURE_2D, 0),
            CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  ASSERT_TRUE(gl().makeCurrent());
  GLuint textures[] = {texture, rgb, cube};
  glDeleteTextures(3, textures);
}

TEST_F(GlInterop, MapStateErrors) {
  GLuint buffer = makeBuffer(iota(32, 0));
  CUgraphicsResource resource = nullptr;
  ASSERT_EQ(registerBuffer()(&resource, buffer, 0), CUDA_SUCCESS);
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
  CUarray array = nullptr;
  auto subArray =
      CU(cuGraphicsSubResourceGetMappedArray, CUarray*, CUgraphicsResource, unsigned, unsigned);
  EXPECT_EQ(mappedPointer()(&pointer, &bytes, resource), CUDA_ERROR_NOT_MAPPED);
  EXPECT_EQ(subArray(&array, resource, 0, 0), CUDA_ERROR_NOT_MAPPED);
  EXPECT_EQ(unmapResources()(1, &resource, nullptr), CUDA_ERROR_NOT_MAPPED);
  EXPECT_EQ(mapResources()(0, &resource, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setMapFlags()(resource, 3), CUDA_ERROR_INVALID_VALUE);

  // Mapping needs the GL context in the calling thread.
  gl().release();
  EXPECT_EQ(mapResources()(1, &resource, nullptr), CUDA_ERROR_INVALID_GRAPHICS_CONTEXT);
  ASSERT_TRUE(gl().makeCurrent());

  ASSERT_EQ(mapResources()(1, &resource, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(mapResources()(1, &resource, nullptr), CUDA_ERROR_ALREADY_MAPPED);
  EXPECT_EQ(setMapFlags()(resource, 0), CUDA_ERROR_ALREADY_MAPPED);
  EXPECT_EQ(subArray(&array, resource, 0, 0), CUDA_ERROR_NOT_MAPPED_AS_ARRAY);
  CUmipmappedArray mipmapped = nullptr;
  EXPECT_EQ(CU(cuGraphicsResourceGetMappedMipmappedArray, CUmipmappedArray*, CUgraphicsResource)(
                &mipmapped, resource),
            CUDA_ERROR_NOT_MAPPED_AS_ARRAY);
  ASSERT_EQ(mappedPointer()(&pointer, &bytes, resource), CUDA_SUCCESS);
  // The mapping belongs to OpenGL: cuMemFree refuses it.
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(pointer), CUDA_ERROR_INVALID_VALUE);
  // A GL buffer CUDA has mapped cannot be mapped by GL too; nothing changes on failure.
  glBindBuffer(GL_ARRAY_BUFFER, buffer);
  EXPECT_EQ(glMapBufferRange(GL_ARRAY_BUFFER, 0, 16, GL_MAP_READ_BIT), nullptr);
  EXPECT_EQ(glGetError(), GLenum{GL_INVALID_OPERATION});
  glBindBuffer(GL_ARRAY_BUFFER, 0);

  // Unregistering a mapped resource unmaps it: OpenGL can map the buffer again.
  ASSERT_EQ(launchAddOne(pointer, 32, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(unregister()(resource), CUDA_SUCCESS);
  EXPECT_EQ(glRead(buffer, 32), iota(32, 1));
  EXPECT_EQ(unregister()(resource), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(mapResources()(1, &resource, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(mappedPointer()(&pointer, &bytes, resource), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(GlInterop, MapErrorsChangeNothing) {
  GLuint buffer = makeBuffer(iota(8, 0));
  CUgraphicsResource resources[2] = {};
  ASSERT_EQ(registerBuffer()(&resources[0], buffer, 0), CUDA_SUCCESS);
  ASSERT_EQ(registerBuffer()(&resources[1], makeBuffer(iota(8, 0)), 0), CUDA_SUCCESS);
  ASSERT_EQ(mapResources()(1, &resources[1], nullptr), CUDA_SUCCESS);
  // One of two is mapped already: neither changes.
  EXPECT_EQ(mapResources()(2, resources, nullptr), CUDA_ERROR_ALREADY_MAPPED);
  CUdeviceptr pointer = 0;
  EXPECT_EQ(mappedPointer()(&pointer, nullptr, resources[0]), CUDA_ERROR_NOT_MAPPED);
  EXPECT_EQ(unmapResources()(2, resources, nullptr), CUDA_ERROR_NOT_MAPPED);
  EXPECT_EQ(mappedPointer()(&pointer, nullptr, resources[1]), CUDA_SUCCESS);
  CUgraphicsResource twice[2] = {resources[1], resources[1]};
  EXPECT_EQ(unmapResources()(2, twice, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(unmapResources()(1, &resources[1], nullptr), CUDA_SUCCESS);
  // A buffer deleted by OpenGL after registration cannot be mapped.
  glDeleteBuffers(1, &buffer);
  EXPECT_EQ(mapResources()(1, &resources[0], nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(unregister()(resources[0]), CUDA_SUCCESS);
  EXPECT_EQ(unregister()(resources[1]), CUDA_SUCCESS);
}

TEST_F(GlInterop, LegacyBufferObjects) {
  GLuint buffer = makeBuffer(iota(100, 20));
  EXPECT_EQ(CU(cuGLInit)(), CUDA_SUCCESS);
  auto registerObject = CU(cuGLRegisterBufferObject, unsigned);
  auto mapObject = CU(cuGLMapBufferObject, CUdeviceptr*, size_t*, unsigned);
  auto unmapObject = CU(cuGLUnmapBufferObject, unsigned);
  auto unregisterObject = CU(cuGLUnregisterBufferObject, unsigned);
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
  EXPECT_EQ(mapObject(&pointer, &bytes, buffer), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(registerObject(buffer), CUDA_SUCCESS);
  EXPECT_EQ(registerObject(buffer), CUDA_ERROR_ALREADY_MAPPED);
  EXPECT_EQ(CU(cuGLSetBufferObjectMapFlags, unsigned, unsigned)(buffer, 0), CUDA_SUCCESS);
  ASSERT_EQ(mapObject(&pointer, &bytes, buffer), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 400u);
  ASSERT_EQ(launchAddOne(pointer, 100, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(unmapObject(buffer), CUDA_SUCCESS);
  EXPECT_EQ(glRead(buffer, 100), iota(100, 21));

  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
  auto mapAsync = CU(cuGLMapBufferObjectAsync, CUdeviceptr*, size_t*, unsigned, CUstream);
  ASSERT_EQ(mapAsync(&pointer, &bytes, buffer, stream), CUDA_SUCCESS);
  ASSERT_EQ(launchAddOne(pointer, 100, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuGLUnmapBufferObjectAsync, unsigned, CUstream)(buffer, stream), CUDA_SUCCESS);
  EXPECT_EQ(glRead(buffer, 100), iota(100, 22));
  EXPECT_EQ(unmapObject(buffer), CUDA_ERROR_NOT_MAPPED);
  EXPECT_EQ(unregisterObject(buffer), CUDA_SUCCESS);
  EXPECT_EQ(unregisterObject(buffer), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing
