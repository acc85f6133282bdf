#include "core/graphics.h"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <string>

#include "backends/device_backend.h"
#include "core/array.h"
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
  // Textures (cuGraphicsGLRegisterImage; desktop GL only, not needed for buffers).
  GLboolean (*isTexture)(GLuint) = nullptr;
  void (*bindTexture)(GLenum, GLuint) = nullptr;
  void (*getTexLevelParameteriv)(GLenum, GLint, GLenum, GLint*) = nullptr;
  void (*getTexImage)(GLenum, GLint, GLenum, GLenum, void*) = nullptr;
  void (*texSubImage2D)(GLenum, GLint, GLint, GLint, GLint, GLint, GLenum, GLenum,
                        const void*) = nullptr;
  void (*pixelStorei)(GLenum, GLint) = nullptr;

  bool hasTextures() const {
    return isTexture != nullptr && bindTexture != nullptr && getTexLevelParameteriv != nullptr &&
           getTexImage != nullptr && texSubImage2D != nullptr && pixelStorei != nullptr;
  }

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
    resolve(api.isTexture, "glIsTexture");
    resolve(api.bindTexture, "glBindTexture");
    resolve(api.getTexLevelParameteriv, "glGetTexLevelParameteriv");
    resolve(api.getTexImage, "glGetTexImage");
    resolve(api.texSubImage2D, "glTexSubImage2D");
    resolve(api.pixelStorei, "glPixelStorei");
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
  if (isImage()) return mapImage();
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
  if (isImage()) return unmapImage();
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

Result<MipmappedArray*> GraphicsResource::mappedArrays() const {
  if (!mapped_) return makeError(ErrorCode::NotMapped, "the resource is not mapped");
  return arrays_.get();
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

// ---- Images (GL_TEXTURE_2D) ----
namespace {

constexpr GLenum kTexture2D = 0x0DE1, kTextureBinding2D = 0x8069;
constexpr GLenum kTextureWidth = 0x1000, kTextureHeight = 0x1001, kTextureInternalFormat = 0x1003;
constexpr GLenum kPackAlignment = 0x0D05, kUnpackAlignment = 0x0CF5;
constexpr GLenum kPackRowLength = 0x0D02, kUnpackRowLength = 0x0CF2;
constexpr GLenum kPixelPackBuffer = 0x88EB, kPixelUnpackBuffer = 0x88EC;
constexpr GLenum kPixelPackBufferBinding = 0x88ED, kPixelUnpackBufferBinding = 0x88EF;
// Targets cudaGL.h lists, beyond GL_TEXTURE_2D: rectangle, cube map, 3D, 2D array, renderbuffer.
constexpr GLenum kOtherImageTargets[] = {0x84F5, 0x8513, 0x806F, 0x8C1A, 0x8D41};
constexpr unsigned kSurfaceLoadStore = 4, kTextureGather = 8;

// GL sized internal format -> transfer format and type, CUarray_format and channel count.
struct GlFormat {
  GLenum internal, format, type;
  unsigned cudaFormat, channels;
};
constexpr GLenum kRed = 0x1903, kRg = 0x8227, kRgba = 0x1908;
constexpr GLenum kRedInt = 0x8D94, kRgInt = 0x8228, kRgbaInt = 0x8D99;
constexpr GLenum kUByte = 0x1401, kByte = 0x1400, kUShort = 0x1403, kShort = 0x1402;
constexpr GLenum kUInt = 0x1405, kInt = 0x1404, kHalf = 0x140B, kFloat = 0x1406;
constexpr unsigned kU8 = 0x01, kU16 = 0x02, kU32 = 0x03, kS8 = 0x08, kS16 = 0x09, kS32 = 0x0a,
                   kF16 = 0x10, kF32 = 0x20;  // CUarray_format
constexpr GlFormat kFormats[] = {
    {0x8229, kRed, kUByte, kU8, 1},      {0x822B, kRg, kUByte, kU8, 2},
    {0x8058, kRgba, kUByte, kU8, 4},     {0x822A, kRed, kUShort, kU16, 1},
    {0x822C, kRg, kUShort, kU16, 2},     {0x805B, kRgba, kUShort, kU16, 4},
    {0x822D, kRed, kHalf, kF16, 1},      {0x822F, kRg, kHalf, kF16, 2},
    {0x881A, kRgba, kHalf, kF16, 4},     {0x822E, kRed, kFloat, kF32, 1},
    {0x8230, kRg, kFloat, kF32, 2},      {0x8814, kRgba, kFloat, kF32, 4},
    {0x8232, kRedInt, kUByte, kU8, 1},   {0x8238, kRgInt, kUByte, kU8, 2},
    {0x8D7C, kRgbaInt, kUByte, kU8, 4},  {0x8234, kRedInt, kUShort, kU16, 1},
    {0x823A, kRgInt, kUShort, kU16, 2},  {0x8D76, kRgbaInt, kUShort, kU16, 4},
    {0x8236, kRedInt, kUInt, kU32, 1},   {0x823C, kRgInt, kUInt, kU32, 2},
    {0x8D70, kRgbaInt, kUInt, kU32, 4},  {0x8231, kRedInt, kByte, kS8, 1},
    {0x8237, kRgInt, kByte, kS8, 2},     {0x8D8E, kRgbaInt, kByte, kS8, 4},
    {0x8233, kRedInt, kShort, kS16, 1},  {0x8239, kRgInt, kShort, kS16, 2},
    {0x8D88, kRgbaInt, kShort, kS16, 4}, {0x8235, kRedInt, kInt, kS32, 1},
    {0x823B, kRgInt, kInt, kS32, 2},     {0x8D82, kRgbaInt, kInt, kS32, 4},
};

const GlFormat* findFormat(GLint internal) {
  for (const GlFormat& format : kFormats)
    if (static_cast<GLint>(format.internal) == internal) return &format;
  return nullptr;
}

// Runs `body` with `texture` bound to GL_TEXTURE_2D and tightly packed pixel transfers from and
// to client memory, restoring the application's state afterwards.
template <class Body>
GLenum withTexture(const GlApi& gl, GLuint texture, Body body) {
  clearGlErrors(gl);
  GLint saved[7] = {};
  const GLenum queries[7] = {kTextureBinding2D,        kPackAlignment,   kUnpackAlignment,
                             kPackRowLength,           kUnpackRowLength, kPixelPackBufferBinding,
                             kPixelUnpackBufferBinding};
  for (int i = 0; i < 7; ++i) gl.getIntegerv(queries[i], &saved[i]);
  gl.bindTexture(kTexture2D, texture);
  GLenum error = gl.getError();
  if (error == kNoError) {
    gl.bindBuffer(kPixelPackBuffer, 0);
    gl.bindBuffer(kPixelUnpackBuffer, 0);
    gl.pixelStorei(kPackAlignment, 1);
    gl.pixelStorei(kUnpackAlignment, 1);
    gl.pixelStorei(kPackRowLength, 0);
    gl.pixelStorei(kUnpackRowLength, 0);
    body();
    error = gl.getError();
  }
  gl.bindTexture(kTexture2D, static_cast<GLuint>(saved[0]));
  gl.pixelStorei(kPackAlignment, saved[1]);
  gl.pixelStorei(kUnpackAlignment, saved[2]);
  gl.pixelStorei(kPackRowLength, saved[3]);
  gl.pixelStorei(kUnpackRowLength, saved[4]);
  gl.bindBuffer(kPixelPackBuffer, static_cast<GLuint>(saved[5]));
  gl.bindBuffer(kPixelUnpackBuffer, static_cast<GLuint>(saved[6]));
  return error;
}

// Level `level`'s width, height and internal format.
std::array<GLint, 3> levelShape(const GlApi& gl, GLint level) {
  std::array<GLint, 3> shape{};
  gl.getTexLevelParameteriv(kTexture2D, level, kTextureWidth, &shape[0]);
  gl.getTexLevelParameteriv(kTexture2D, level, kTextureHeight, &shape[1]);
  gl.getTexLevelParameteriv(kTexture2D, level, kTextureInternalFormat, &shape[2]);
  return shape;
}

}  // namespace

Result<GraphicsResource*> GraphicsResource::registerGlImage(Context& context, unsigned image,
                                                            unsigned target, unsigned flags) {
  if ((flags & 3u) == 3u || (flags & ~(3u | kSurfaceLoadStore | kTextureGather)) != 0)
    return makeError(ErrorCode::InvalidValue, "unknown CU_GRAPHICS_REGISTER_FLAGS combination");
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.takeError();
  const GlApi& api = **gl;
  if (!canMapHostPointers(context))
    return makeError(ErrorCode::NotSupported, "OpenGL interop is available on the CPU device only");
  if (target != kTexture2D) {
    for (GLenum other : kOtherImageTargets)
      if (target == other)
        return makeError(ErrorCode::NotSupported,
                         "only GL_TEXTURE_2D images can be registered (target " +
                             glErrorText(target) + " is not implemented)");
    return makeError(ErrorCode::InvalidValue,
                     "target " + glErrorText(target) + " is not a texture or renderbuffer target");
  }
  if (!api.hasTextures())
    return makeError(ErrorCode::NotSupported,
                     "the OpenGL library lacks glGetTexImage (OpenGL ES?): images cannot be read");
  if (image == 0 || api.isTexture(image) == 0)
    return makeError(ErrorCode::InvalidHandle,
                     std::to_string(image) + " is not a texture of the current GL context");
  std::array<GLint, 3> shape{};
  GLenum error = withTexture(api, image, [&] { shape = levelShape(api, 0); });
  if (error != kNoError)
    return makeError(ErrorCode::InvalidValue,
                     "texture " + std::to_string(image) + " is not a GL_TEXTURE_2D texture");
  const GlFormat* format = findFormat(shape[2]);
  if (shape[0] <= 0 || shape[1] <= 0 || format == nullptr)
    return makeError(ErrorCode::InvalidValue,
                     "texture " + std::to_string(image) + " has no storage of a supported format " +
                         "(internal format " + glErrorText(static_cast<GLenum>(shape[2])) + ")");
  auto* resource = new GraphicsResource(context, image, flags);
  resource->target_ = target;
  resource->image_ = {format->format, format->type, format->cudaFormat, format->channels};
  return resource;
}

// Copies the texture's levels into a mipmapped array: level 0 and the following levels that
// have the halved size and the same format (an incomplete chain stops there).
Status GraphicsResource::mapImage() {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.error();
  const GlApi& api = **gl;
  if (api.isTexture(buffer_) == 0)
    return makeError(ErrorCode::InvalidHandle,
                     "texture " + std::to_string(buffer_) + " no longer exists");
  unsigned hint = mapFlags_ != 0 ? mapFlags_ : (registerFlags_ & 3u);
  Status status = Status::success();
  GLenum error = withTexture(api, buffer_, [&] {
    std::array<GLint, 3> base = levelShape(api, 0);
    const GlFormat* format = findFormat(base[2]);
    if (base[0] <= 0 || base[1] <= 0 || format == nullptr) {
      status = makeError(ErrorCode::InvalidValue, "the texture lost its storage");
      return;
    }
    image_ = {format->format, format->type, format->cudaFormat, format->channels};
    ArrayDescriptor desc{static_cast<size_t>(base[0]),
                         static_cast<size_t>(base[1]),
                         0,
                         format->cudaFormat,
                         format->channels,
                         0};
    if (registerFlags_ & kSurfaceLoadStore) desc.flags |= kArraySurfaceLoadStore;
    if (registerFlags_ & kTextureGather) desc.flags |= kArrayTextureGather;
    unsigned levels = 1;
    for (; levels < 16; ++levels) {
      ArrayDescriptor next = mipmapLevelDescriptor(desc, levels);
      std::array<GLint, 3> shape = levelShape(api, static_cast<GLint>(levels));
      if (shape[0] != static_cast<GLint>(next.width) ||
          shape[1] != static_cast<GLint>(next.height) || shape[2] != base[2])
        break;
      if (next.width == 1 && next.height == 1) {
        ++levels;
        break;
      }
    }
    Result<std::unique_ptr<MipmappedArray>> arrays = MipmappedArray::create(context_, desc, levels);
    if (!arrays) {
      status = arrays.error();
      return;
    }
    if (hint != kWriteDiscard)
      for (unsigned level = 0; level < levels; ++level)
        api.getTexImage(kTexture2D, static_cast<GLint>(level), image_.glFormat, image_.glType,
                        (*arrays)->level(level)->data());
    (*arrays)->setOwnedByResource();
    arrays_ = std::move(*arrays);
  });
  if (!status.ok()) return status;
  if (error != kNoError) {
    arrays_.reset();
    return makeError(ErrorCode::Internal,
                     "reading the texture failed (GL error " + glErrorText(error) + ")");
  }
  mapped_ = true;
  return Status::success();
}

// Copies the levels back into the texture unless mapped read-only.
Status GraphicsResource::unmapImage() {
  Result<const GlApi*> gl = currentGl();
  if (!gl) return gl.error();
  const GlApi& api = **gl;
  unsigned hint = mapFlags_ != 0 ? mapFlags_ : (registerFlags_ & 3u);
  std::unique_ptr<MipmappedArray> arrays = std::move(arrays_);
  mapped_ = false;
  if (hint == kReadOnly || arrays == nullptr) return Status::success();
  GLenum error = withTexture(api, buffer_, [&] {
    for (unsigned level = 0; level < arrays->levelCount(); ++level) {
      Array* array = arrays->level(level);
      api.texSubImage2D(kTexture2D, static_cast<GLint>(level), 0, 0,
                        static_cast<GLint>(array->descriptor().width),
                        static_cast<GLint>(array->rows()), image_.glFormat, image_.glType,
                        array->data());
    }
  });
  if (error != kNoError)
    return makeError(ErrorCode::Internal,
                     "writing the texture back failed (GL error " + glErrorText(error) + ")");
  return Status::success();
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
