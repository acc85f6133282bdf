#include "core/texture.h"

#include <mutex>
#include <unordered_map>

#include "core/array.h"
#include "core/context.h"
#include "core/platform.h"

namespace rocuda::core {
namespace {

struct TextureTable {
  std::mutex mutex;
  std::unordered_map<uint64_t, std::unique_ptr<TextureObject>> live;
};

TextureTable& table() {
  static TextureTable* instance = new TextureTable();  // outlives static destructors
  return *instance;
}

}  // namespace

void describeArray(support::TextureView& view, const Array& array) {
  const ArrayDescriptor& desc = array.descriptor();
  view.format = array.texelFormat();
  view.normalizedFormat = normalizedFormatChannels(desc.format) != 0;
  view.channels = static_cast<uint8_t>(desc.channels);
  view.texelBytes = static_cast<uint8_t>(array.texelBytes());
  view.data = array.data();
  view.width = desc.width;
  view.rowPitch = array.rowPitch();
  view.slicePitch = array.slicePitch();
  view.layered = (desc.flags & kArrayLayered) != 0;
  view.cubemap = (desc.flags & kArrayCubemap) != 0;
  view.height = array.rows();
  view.depth = 1;
  view.layers = 1;
  if (view.layered || view.cubemap) {
    view.layers = desc.depth;
    view.shape = desc.height == 0 ? support::TextureShape::Array1D : support::TextureShape::Array2D;
  } else if (desc.depth != 0) {
    view.depth = desc.depth;
    view.shape = support::TextureShape::Array3D;
  } else {
    view.shape = desc.height == 0 ? support::TextureShape::Array1D : support::TextureShape::Array2D;
  }
}

TextureObject::~TextureObject() {
  if (handle_ != 0) context_.device().backend().releaseTextureViews(handle_);
}

Result<uint64_t> registerTexture(std::unique_ptr<TextureObject> object) {
  auto placed =
      object->context().device().backend().placeTextureViews(object->view(), object->levelViews);
  if (!placed.ok()) return placed.takeError();
  uint64_t handle = object->handle_ = *placed;
  TextureTable& t = table();
  std::lock_guard lock(t.mutex);
  t.live[handle] = std::move(object);
  return handle;
}

TextureObject* findTexture(uint64_t handle, bool surface) {
  TextureTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.live.find(handle);
  if (it == t.live.end() || it->second->isSurface() != surface) return nullptr;
  return it->second.get();
}

Status destroyTexture(uint64_t handle, bool surface) {
  std::unique_ptr<TextureObject> doomed;
  TextureTable& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.live.find(handle);
  if (it == t.live.end() || it->second->isSurface() != surface)
    return makeError(ErrorCode::InvalidHandle,
                     surface ? "not a live surface object" : "not a live texture object");
  doomed = std::move(it->second);
  t.live.erase(it);
  return Status::success();
}

void destroyContextTextures(Context& context) {
  std::vector<std::unique_ptr<TextureObject>> doomed;
  TextureTable& t = table();
  std::lock_guard lock(t.mutex);
  for (auto it = t.live.begin(); it != t.live.end();) {
    if (&it->second->context() == &context) {
      doomed.push_back(std::move(it->second));
      it = t.live.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace rocuda::core
