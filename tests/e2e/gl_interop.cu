// OpenGL buffer interop through the runtime API: a headless EGL context (Mesa's surfaceless
// platform) owns a vertex buffer; CUDA registers it, a kernel fills it while mapped, and OpenGL
// reads the result back after unmapping. Then OpenGL rewrites it and a read-only mapping shows
// the new contents to a second kernel.
#define GL_GLEXT_PROTOTYPES
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/gl.h>
#include <GL/glext.h>
#include <cuda_gl_interop.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t err_ = (call);                                                             \
    if (err_ != cudaSuccess) {                                                             \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(2);                                                                        \
    }                                                                                      \
  } while (0)

__global__ void fillVertices(float2* vertices, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) vertices[i] = make_float2(i * scale, -i * scale);
}

__global__ void sumX(const float2* vertices, int n, float* total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(total, vertices[i].x);
}

static bool makeGlContext() {
  auto getDisplay = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (getDisplay == nullptr) return false;
  EGLDisplay display = getDisplay(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  EGLint major = 0, minor = 0;
  if (display == EGL_NO_DISPLAY || !eglInitialize(display, &major, &minor)) return false;
  eglBindAPI(EGL_OPENGL_API);
  const EGLint attributes[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_CONTEXT_MINOR_VERSION, 3,
                               EGL_NONE};
  EGLContext context = eglCreateContext(display, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attributes);
  return context != EGL_NO_CONTEXT &&
         eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context) == EGL_TRUE;
}

int main() {
  if (!makeGlContext()) {
    std::printf("FAILED: no headless OpenGL context (EGL surfaceless)\n");
    return 2;
  }
  const int n = 4096;
  GLuint vbo = 0;
  glGenBuffers(1, &vbo);
  glBindBuffer(GL_ARRAY_BUFFER, vbo);
  glBufferData(GL_ARRAY_BUFFER, n * sizeof(float2), nullptr, GL_DYNAMIC_DRAW);
  glBindBuffer(GL_ARRAY_BUFFER, 0);

  unsigned int deviceCount = 0;
  int devices[4] = {};
  CHECK(cudaGLGetDevices(&deviceCount, devices, 4, cudaGLDeviceListAll));
  if (deviceCount < 1) {
    std::printf("FAILED: cudaGLGetDevices found no device\n");
    return 1;
  }
  CHECK(cudaSetDevice(devices[0]));

  cudaGraphicsResource_t resource = nullptr;
  CHECK(cudaGraphicsGLRegisterBuffer(&resource, vbo, cudaGraphicsRegisterFlagsWriteDiscard));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaGraphicsMapResources(1, &resource, stream));
  float2* vertices = nullptr;
  size_t bytes = 0;
  CHECK(
      cudaGraphicsResourceGetMappedPointer(reinterpret_cast<void**>(&vertices), &bytes, resource));
  if (bytes != n * sizeof(float2)) {
    std::printf("FAILED: mapped %zu bytes, expected %zu\n", bytes, n * sizeof(float2));
    return 1;
  }
  fillVertices<<<(n + 255) / 256, 256, 0, stream>>>(vertices, n, 0.5f);
  CHECK(cudaGetLastError());
  CHECK(cudaGraphicsUnmapResources(1, &resource, stream));

  std::vector<float2> read(n);
  glBindBuffer(GL_ARRAY_BUFFER, vbo);
  glGetBufferSubData(GL_ARRAY_BUFFER, 0, n * sizeof(float2), read.data());
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (read[i].x != i * 0.5f || read[i].y != -i * 0.5f) {
      if (bad++ < 5) std::printf("vertex %d: (%g, %g)\n", i, read[i].x, read[i].y);
    }
  }
  // OpenGL rewrites the buffer; CUDA reads it through a read-only mapping.
  std::vector<float2> fromGl(n);
  double expected = 0;
  for (int i = 0; i < n; ++i) {
    fromGl[i] = make_float2(static_cast<float>(i % 7), 0.0f);
    expected += i % 7;
  }
  glBufferSubData(GL_ARRAY_BUFFER, 0, n * sizeof(float2), fromGl.data());
  glBindBuffer(GL_ARRAY_BUFFER, 0);
  CHECK(cudaGraphicsResourceSetMapFlags(resource, cudaGraphicsMapFlagsReadOnly));
  CHECK(cudaGraphicsMapResources(1, &resource, stream));
  CHECK(
      cudaGraphicsResourceGetMappedPointer(reinterpret_cast<void**>(&vertices), &bytes, resource));
  float* total = nullptr;
  CHECK(cudaMallocManaged(&total, sizeof(float)));
  *total = 0;
  sumX<<<(n + 255) / 256, 256, 0, stream>>>(vertices, n, total);
  CHECK(cudaGetLastError());
  CHECK(cudaGraphicsUnmapResources(1, &resource, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (*total != static_cast<float>(expected)) {
    std::printf("sum of x: %g, expected %g\n", *total, expected);
    ++bad;
  }
  // A mapped-state error: unmapping twice.
  if (cudaGraphicsUnmapResources(1, &resource, stream) != cudaErrorNotMapped) {
    std::printf("unmapping an unmapped resource did not fail with cudaErrorNotMapped\n");
    ++bad;
  }
  CHECK(cudaGraphicsUnregisterResource(resource));
  CHECK(cudaFree(total));
  CHECK(cudaStreamDestroy(stream));
  glDeleteBuffers(1, &vbo);
  if (bad != 0) {
    std::printf("FAILED: %d mismatches\n", bad);
    return 1;
  }
  std::printf("PASSED\n");
  return 0;
}
