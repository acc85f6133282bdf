// Graphics interop (cuGraphics*, cuGLGetDevices): OpenGL buffer objects registered with CUDA and
// mapped as device memory. libcuda never links against OpenGL: the GL entry points are looked up
// at run time in the GL libraries the application already loaded (gl_loader in graphics.cpp).
//
// A buffer object is mapped with glMapBufferRange in the calling thread's current GL context, so
// the pointer the GL implementation hands out is host memory. Only devices that reach any host
// pointer (DeviceDescription::pageableMemoryAccess: the CPU device) can use it as device memory;
// other backends answer NotSupported (the HIP backend would use hipGraphicsGLRegisterBuffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/object.h"
#include "support/result.h"

namespace rocuda::core {

class Context;
class Device;
class MipmappedArray;
class Stream;

// True when the calling thread has a current OpenGL context (EGL or GLX) of a GL library already
// loaded in the process.
bool glContextCurrent();

class GraphicsResource : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::GraphicsResource;
  // Access hints shared by register and map flags (CU_GRAPHICS_MAP_RESOURCE_FLAGS_*).
  static constexpr unsigned kReadOnly = 1, kWriteDiscard = 2;

  // cuGraphicsGLRegisterBuffer: `buffer` must name a buffer object of the current GL context
  // (InvalidHandle otherwise; InvalidGraphicsContext without a current GL context).
  static Result<GraphicsResource*> registerGlBuffer(Context& context, unsigned buffer,
                                                    unsigned flags);
  // cuGraphicsGLRegisterImage: a GL_TEXTURE_2D texture of a sized R/RG/RGBA format (8/16-bit
  // normalized, 16F/32F, 8/16/32-bit integer). Mapping copies its levels into CUDA arrays
  // (glGetTexImage), unmapping copies them back (glTexSubImage2D) unless mapped read-only.
  // Other texture targets and renderbuffers are NotSupported.
  static Result<GraphicsResource*> registerGlImage(Context& context, unsigned image,
                                                   unsigned target, unsigned flags);
  // cuGraphicsUnregisterResource: a mapped resource is unmapped first (after the context's work).
  static Status unregister(GraphicsResource* resource);
  ~GraphicsResource() override;

  Context& context() { return context_; }
  bool mapped() const { return mapped_; }
  Status setMapFlags(unsigned flags);  // AlreadyMapped while mapped

  // cuGraphicsMapResources / cuGraphicsUnmapResources for a set of resources, all-or-nothing for
  // the state checks (AlreadyMapped / NotMapped before anything changes). See graphics.cpp for
  // the ordering with `stream`.
  static Status map(const std::vector<GraphicsResource*>& resources, Stream& stream);
  static Status unmap(const std::vector<GraphicsResource*>& resources, Stream& stream);

  // The mapped buffer (NotMapped when not mapped). A zero-size buffer maps to nullptr.
  Result<void*> mappedPointer(size_t* bytes) const;
  bool isImage() const { return target_ != 0; }
  // The mapped image's levels (an image resource only; NotMapped when not mapped).
  Result<MipmappedArray*> mappedArrays() const;

 private:
  GraphicsResource(Context& context, unsigned buffer, unsigned flags);
  Status mapOne();
  Status unmapOne();
  Status mapImage();
  Status unmapImage();

  Context& context_;
  unsigned buffer_;
  unsigned registerFlags_;
  unsigned mapFlags_ = 0;
  bool mapped_ = false;
  void* pointer_ = nullptr;
  size_t bytes_ = 0;
  unsigned target_ = 0;  // 0 for a buffer object
  struct ImageFormat {
    unsigned glFormat = 0, glType = 0, cudaFormat = 0, channels = 0;
  } image_;
  std::unique_ptr<MipmappedArray> arrays_;  // while an image is mapped
};

// cuGLGetDevices: the devices that can map buffers of the current GL context (those with
// pageableMemoryAccess). InvalidGraphicsContext without a current GL context.
Result<std::vector<Device*>> glDevices();

}  // namespace rocuda::core
