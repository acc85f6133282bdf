#include "core/graphics.h"

#include <dlfcn.h>

#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <string>

#include "backends/device_backend.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/platform.h"
#include "core/stream.h"
#include "support/log.h"

namespace rocuda::core {
namespace {

// ---- OpenGL, found at run time ----
using GLenum = unsigned;
using GLuint = unsigned;
using GLint = int;
using GLint64 = int64_t;
using GLboolean = unsigned char;
using GLbitfield = unsigned;

constexpr GLenum kNoError = 0;
constexpr GLenum kInvalidOperation = 0x0502;
// The target Rocuda binds a buffer to while mapping it, restored afterwards: the copy-write
// binding is the one least likely to be part of the application's drawing state.
constexpr GLenum kCopyWriteBuffer = 0x8F37;  // also GL_COPY_WRITE_BUFFER_BINDING
constexpr GLenum kBufferSize = 0x8764;
constexpr GLbitfield kMapRead = 0x1, kMapWrite = 0x2, kMapInvalidateBuffer = 0x8;

struct GlApi {
  void* (*eglGetCurrentContext)() = nullptr;
  void* (*glXGetCurrentContext)() = nullptr;
  GLenum (*getError)() = nullptr;
  GLboolean (*isBuffer)(GLuint) = nullptr;
  void (*bindBuffer)(GLenum, GLuint) = nullptr;
  void (*getIntegerv)(GLenum, GLint*) = nullptr;
  void (*getBufferParameteri64v)(GLenum, GLenum, GLint64*) = nullptr;  // GL 3.2, GLES 3.0
  void (*getBufferParameteriv)(GLenum, GLenum, GLint*) = nullptr;
  void* (*mapBufferRange)(GLenum, intptr_t, intptr_t, GLbitfield) = nullptr;
  GLboolean (*unmapBuffer)(GLenum) = nullptr;

  bool complete() const {
    return (eglGetCurrentContext != nullptr || glXGetCurrentContext != nullptr) &&
           getError != nullptr && isBuffer != nullptr && bindBuffer != nullptr &&
           getIntegerv != nullptr &&
           (getBufferParameteri64v != nullptr || getBufferParameteriv != nullptr) &&
           mapBufferRange != nullptr && unmapBuffer != nullptr;
  }
};

// A GL library the application loaded (RTLD_NOLOAD: Rocuda never loads GL itself, and finds
// libraries a GL loader such as GLFW or glad opened with RTLD_LOCAL).
void* loadedLibrary(const char* name) { return dlopen(name, RTLD_NOW | RTLD_NOLOAD); }

// `name` in the process's global scope or in one of the loaded `libraries`.
void* findIn(const char* name, std::initializer_list<const char*> libraries) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return f;
  for (const char* library : libraries) {
    void* handle = loadedLibrary(library);
    if (handle == nullptr) continue;
    void* f = dlsym(handle, name);
    dlclose(handle);  // drops only the reference RTLD_NOLOAD took
    if (f != nullptr) return f;
  }
  return nullptr;
}

void* findGlFunction(const char* name) {
  if (void* f = findIn(
          name, {"libOpenGL.so.0", "libGL.so.1", "libGLESv2.so.2", "libEGL.so.1", "libGLX.so.0"}))
    return f;
  // Extension-style lookup through the window-system library.
  using GetProc = void* (*)(const char*);
  for (const char* getter : {"eglGetProcAddress", "glXGetProcAddressARB"}) {
    auto get =
        reinterpret_cast<GetProc>(findIn(getter, {"libEGL.so.1", "libGLX.so.0", "libGL.so.1"}));
    if (get == nullptr) continue;
    if (void* f = get(name)) return f;
  }
  return nullptr;
}

template <class F>
void resolve(F& slot, const char* name) {
  if (slot == nullptr) slot = reinterpret_cast<F>(findGlFunction(name));
}

// The GL entry points, or nullptr while the process has not loaded GL. Looked up again on each
// call until complete, since an application may load GL after cuInit.
const GlApi* glApi() {
  static std::mutex mutex;
  static GlApi api;
  std::lock_guard lock(mutex);
  if (!api.complete()) {
    resolve(api.eglGetCurrentContext, "eglGetCurrentContext");
    resolve(api.glXGetCurrentContext, "glXGetCurrentContext");
    resolve(api.getError, "glGetError");
    resolve(api.isBuffer, "glIsBuffer");
    resolve(api.bindBuffer, "glBindBuffer");
    resolve(api.getIntegerv, "glGetIntegerv");
    resolve(api.getBufferParameteri64v, "glGetBufferParameteri64v");
    resolve(api.getBufferParameteriv, "glGetBufferParameteriv");
    resolve(api.mapBufferRange, "glMapBufferRange");
    resolve(api.unmapBuffer, "glUnmapBuffer");
  }
  return api.complete() ? &api : nullptr;
}

bool currentIn(const GlApi& gl) {
  return (gl.eglGetCurrentContext != nullptr && gl.eglGetCurrentContext() != nullptr) ||
         (gl.glXGetCurrentContext != nullptr && gl.glXGetCurrentContext() != nullptr);
}

// The GL entry points when the calling thread has a current GL context.
Result<const GlApi*> currentGl() {
  const GlApi* gl = glApi();
  if (gl == nullptr)
    return makeError(ErrorCode::InvalidGraphicsContext,
                     "no OpenGL library is loaded in this process (libOpenGL/libGL with EGL or "
                     "GLX)");
  if (!currentIn(*gl))
    return makeError(ErrorCode::InvalidGraphicsContext,
                     "no OpenGL context is current in the calling thread");
  return gl;
}

void clearGlErrors(const GlApi& gl) {
  for (int i = 0; i < 32 && gl.getError() != kNoError; ++i) {
  }
}

std::string glErrorText(GLenum error) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%04x", error);
  return text;
}

// Runs `body` with `buffer` bound to the copy-write target, restoring the previous binding.
template <class Body>
GLenum withBound(const GlApi& gl, GLuint buffer, Body body) {
  clearGlErrors(gl);
  GLint previous = 0;
  gl.getIntegerv(kCopyWriteBuffer, &previous);
  gl.bindBuffer(kCopyWriteBuffer, buffer);
  GLenum error = gl.getError();
  if (error == kNoError) {
    body();
    error = gl.getError();
  }
  gl.bindBuffer(kCopyWriteBuffer, static_cast<GLuint>(previous));
  return error;
}

bool canMapHostPointers(Context& context) {
  return context.device().description().pageableMemoryAccess;
}

}  // namespace

bool glContextCurrent() {
  const GlApi* gl = glApi();
  return gl != nullptr && currentIn(*gl);
}

GraphicsResource::GraphicsResource(Context& context, unsigned buffer, unsigned flags)
    : Object(ObjectKind::GraphicsResource),
      context_(context),
      buffer_(buffer),
      registerFlags_(flags) {}

GraphicsResource::~GraphicsResource() = default;

Result<GraphicsResource*> GraphicsResource::registerGlBuffer(Context& context, unsigned buffer,
                                                             unsigned flags) {
  if (flags > kWriteDiscard)
    return makeError(ErrorCode::InvalidValue,
                     "flags must be one of CU_GRAPHICS_REGISTER_FLAGS_NONE, _READ_ONLY or "
                     "_WRITE_DISCARD for a buffer object");
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.takeError();
  if (!canMapHostPointers(context))
    return makeError(ErrorCode::NotSupported,
                     "OpenGL interop is available on the CPU device only (this device cannot "
                     "use memory the GL implementation maps)");
  if (buffer == 0 || (*gl)->isBuffer(buffer) == 0)
    return makeError(ErrorCode::InvalidHandle,
                     std::to_string(buffer) + " is not a buffer object of the current GL context");
  return new GraphicsResource(context, buffer, flags);
}

Status GraphicsResource::setMapFlags(unsigned flags) {
  if (flags > kWriteDiscard)
    return makeError(ErrorCode::InvalidValue, "unknown CU_GRAPHICS_MAP_RESOURCE_FLAGS value");
  if (mapped_) return makeError(ErrorCode::AlreadyMapped, "the resource is mapped");
  mapFlags_ = flags;
  return Status::success();
}

Status GraphicsResource::mapOne() {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.error();
  const GlApi& api = **gl;
  if (api.isBuffer(buffer_) == 0)
    return makeError(ErrorCode::InvalidHandle,
                     "buffer object " + std::to_string(buffer_) + " no longer exists");
  // The map flags set last win over the registration hint.
  unsigned hint = mapFlags_ != 0 ? mapFlags_ : registerFlags_;
  GLbitfield access = hint == kReadOnly       ? kMapRead
                      : hint == kWriteDiscard ? kMapWrite | kMapInvalidateBuffer
                                              : kMapRead | kMapWrite;
  GLint64 size = 0;
  void* pointer = nullptr;
  GLenum error = withBound(api, buffer_, [&] {
    if (api.getBufferParameteri64v != nullptr) {
      api.getBufferParameteri64v(kCopyWriteBuffer, kBufferSize, &size);
    } else {
      GLint size32 = 0;
      api.getBufferParameteriv(kCopyWriteBuffer, kBufferSize, &size32);
      size = size32;
    }
    if (size > 0) pointer = api.mapBufferRange(kCopyWriteBuffer, 0, size, access);
  });
  if (error == kInvalidOperation)
    return makeError(ErrorCode::AlreadyMapped, "OpenGL refused to map buffer object " +
                                                   std::to_string(buffer_) +
                                                   " (is it mapped by OpenGL itself?)");
  if (error != kNoError || (size > 0 && pointer == nullptr))
    return makeError(ErrorCode::Internal,
                     "glMapBufferRange failed (GL error " + glErrorText(error) + ")");
  pointer_ = pointer;
  bytes_ = static_cast<size_t>(size);
  mapped_ = true;
  if (pointer_ != nullptr) registerMapped(context_, pointer_, bytes_, MappedFrom::Graphics);
  return Status::success();
}

Status GraphicsResource::unmapOne() {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.error();
  const GlApi& api = **gl;
  if (pointer_ != nullptr) unregisterMapped(pointer_, MappedFrom::Graphics);
  bool hadStore = pointer_ != nullptr;
  mapped_ = false;
  pointer_ = nullptr;
  bytes_ = 0;
  if (!hadStore) return Status::success();
  GLboolean intact = 1;
  GLenum error = withBound(api, buffer_, [&] { intact = api.unmapBuffer(kCopyWriteBuffer); });
  if (error != kNoError)
    return makeError(ErrorCode::Internal,
                     "glUnmapBuffer failed (GL error " + glErrorText(error) + ")");
  if (intact == 0)
    return makeError(ErrorCode::Internal,
                     "OpenGL reports the buffer's contents were lost while mapped");
  return Status::success();
}

// Ordering with the stream. Mapping first drains `stream`, then maps in the calling thread:
// glMapBufferRange (without GL_MAP_UNSYNCHRONIZED_BIT) itself waits for every GL command issued
// before it that uses the buffer, so GL work before the map completes before the stream's later
// work starts. Unmapping drains `stream` before glUnmapBuffer, so the stream's work before the
// unmap (kernels, copies writing the buffer) is complete before any GL command issued after it.
// Blocking the host is stronger than CUDA requires but keeps both guarantees with a GL context
// that only the calling thread may use.
Status GraphicsResource::map(const std::vector<GraphicsResource*>& resources, Stream& stream) {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.error();
  for (GraphicsResource* resource : resources)
    if (resource->mapped_) return makeError(ErrorCode::AlreadyMapped, "a resource is mapped");
  if (Status synced = stream.synchronize(); !synced.ok()) return synced;
  for (size_t i = 0; i < resources.size(); ++i) {
    Status status = resources[i]->mapOne();
    if (status.ok()) continue;
    for (size_t j = 0; j < i; ++j) (void)resources[j]->unmapOne();  // all or nothing
    return status;
  }
  return Status::success();
}

Status GraphicsResource::unmap(const std::vector<GraphicsResource*>& resources, Stream& stream) {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.error();
  for (GraphicsResource* resource : resources)
    if (!resource->mapped_) return makeError(ErrorCode::NotMapped, "a resource is not mapped");
  // A failed stream still hands the buffers back to OpenGL (the error is reported after).
  Status result = stream.synchronize();
  for (GraphicsResource* resource : resources)
    if (Status status = resource->unmapOne(); !status.ok() && result.ok()) result = status;
  return result;
}

Result<void*> GraphicsResource::mappedPointer(size_t* bytes) const {
  if (!mapped_) return makeError(ErrorCode::NotMapped, "the resource is not mapped");
  *bytes = bytes_;
  return pointer_;
}

Status GraphicsResource::unregister(GraphicsResource* resource) {
  Status result = Status::success();
  if (resource->mapped_) {
    // Work still using the mapping must finish before GL takes the buffer back.
    if (lookupHandle<Context>(&resource->context_) != nullptr)
      (void)resource->context_.synchronize();
    if (glContextCurrent()) {
      result = resource->unmapOne();
    } else {
      // The buffer stays mapped on the GL side until GL unmaps it; CUDA forgets it.
      if (resource->pointer_ != nullptr) unregisterMapped(resource->pointer_, MappedFrom::Graphics);
      log::warning("cuGraphicsUnregisterResource: no current OpenGL context to unmap buffer " +
                   std::to_string(resource->buffer_) + "; OpenGL keeps it mapped");
    }
  }
  delete resource;
  return result;
}

Result<std::vector<Device*>> glDevices() {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.takeError();
  std::vector<Device*> devices;
  Platform& platform = Platform::instance();
  for (int i = 0; i < platform.deviceCount(); ++i)
    if (Device* device = platform.device(i); device && device->description().pageableMemoryAccess)
      devices.push_back(device);
  return devices;
}

}  // namespace rocuda::core
