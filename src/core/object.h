// Every object the driver API hands out as an opaque handle (CUcontext, CUmodule, CUstream...)
// derives from Object. Live objects are kept in a registry, so a handle from the application is
// validated by lookup before it is ever dereferenced: stale, foreign or wrong-kind handles are
// detected instead of crashing.
#pragma once

#include <cstdint>
#include <vector>

namespace rocuda::core {

enum class ObjectKind : uint8_t {
  Context,
  Module,
  Library,
  Kernel,
  Stream,
  Event,
  MemoryPool,
  Graph,
  GraphExec,
  Array,
  MipmappedArray,
  ExternalMemory,
  GraphicsResource,
  GreenContext,
  GreenContextView,
  ResourceDescriptor
};

class Object {
 public:
  explicit Object(ObjectKind kind);
  virtual ~Object();
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  ObjectKind kind() const { return kind_; }
  // The handle stops being valid now (lookups fail) although the object lives on until
  // destroyed: a stream destroyed with work still queued.
  void retireHandle();

 private:
  ObjectKind kind_;
};

// The live object of that kind at `handle`, or nullptr. Never dereferences an unknown pointer.
Object* findObject(const void* handle, ObjectKind kind);
// Every live object of `kind` at the time of the call.
std::vector<Object*> liveObjects(ObjectKind kind);

template <class T>
T* lookupHandle(const void* handle) {
  return static_cast<T*>(findObject(handle, T::kKind));
}

}  // namespace rocuda::core
