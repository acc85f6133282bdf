#include "core/object.h"

#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace rocuda::core {
namespace {

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<const void*, Object*> live;
};

Registry& registry() {
  static Registry* instance = new Registry();  // outlives every static object (never destroyed)
  return *instance;
}

}  // namespace

Object::Object(ObjectKind kind) : kind_(kind) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.live[this] = this;
}

void Object::retireHandle() {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.live.erase(this);
}

Object::~Object() {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  r.live.erase(this);
}

std::vector<Object*> liveObjects(ObjectKind kind) {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<Object*> objects;
  for (const auto& [handle, object] : r.live)
    if (object->kind() == kind) objects.push_back(object);
  return objects;
}

Object* findObject(const void* handle, ObjectKind kind) {
  if (handle == nullptr) return nullptr;
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.live.find(handle);
  if (it == r.live.end() || it->second->kind() != kind) return nullptr;
  return it->second;
}

}  // namespace rocuda::core
