// Texture and surface references: the texture API before texture objects, deprecated since
// CUDA 11 and still exported by NVIDIA's driver (PyCUDA links it). A reference made by
// cuTexRefCreate holds what it is bound to and how it samples, as its getters report. No kernel
// can sample one: CUDA 12 removed references from the language, and cuModuleGetTexRef finds none
// in any module (module.cpp), so cuParamSetTexRef only checks its arguments, as NVIDIA's driver
// has done since CUDA 3. No surface reference can be obtained at all: the surface-reference
// calls reject every handle.
#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "api/cuda/array_handles.h"
#include "api/cuda/boundary.h"
#include "core/array.h"
#include "core/context.h"
#include "core/module.h"

namespace rocuda::api {
namespace {

using namespace cuda;

struct TextureReference {
  CUarray array = nullptr;  // bound CUDA array, or
  CUdeviceptr address = 0;  // bound linear memory (1D, or 2D with a pitch)
  CUarray_format format = CU_AD_FORMAT_FLOAT;
  int channels = 1;
  CUaddress_mode addressModes[3] = {CU_TR_ADDRESS_MODE_WRAP, CU_TR_ADDRESS_MODE_WRAP,
                                    CU_TR_ADDRESS_MODE_WRAP};
  CUfilter_mode filterMode = CU_TR_FILTER_MODE_POINT;
  unsigned flags = 0;
  CUmipmappedArray mipmappedArray = nullptr;  // bound mipmapped array
  CUfilter_mode mipmapFilterMode = CU_TR_FILTER_MODE_POINT;
  float mipmapLevelBias = 0, minMipmapLevelClamp = 0, maxMipmapLevelClamp = 0;
  unsigned maxAnisotropy = 0;
  float borderColor[4] = {0, 0, 0, 0};
};

struct TextureReferences {
  std::mutex mutex;
  std::unordered_map<CUtexref, std::unique_ptr<TextureReference>> live;
};

TextureReferences& references() {
  static TextureReferences* instance = new TextureReferences();
  return *instance;
}

// Runs `f` on the live reference `handle` under the registry's lock.
template <class F>
Outcome withReference(CUtexref handle, F&& f) {
  TextureReferences& r = references();
  std::lock_guard lock(r.mutex);
  auto it = r.live.find(handle);
  if (it == r.live.end()) return invalidValue("not a texture reference");
  return f(*it->second);
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuTexRefCreate(CUtexref* pTexRef) {
  return ROCUDA_API((pTexRef), [&]() -> api::Outcome {
    if (pTexRef == nullptr) return api::invalidValue("pTexRef is NULL");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    auto reference = std::make_unique<api::TextureReference>();
    auto handle = reinterpret_cast<CUtexref>(reference.get());
    api::TextureReferences& r = api::references();
    std::lock_guard lock(r.mutex);
    r.live.emplace(handle, std::move(reference));
    *pTexRef = handle;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuTexRefDestroy(CUtexref hTexRef) {
  return ROCUDA_API((hTexRef), [&]() -> api::Outcome {
    api::TextureReferences& r = api::references();
    std::lock_guard lock(r.mutex);
    if (r.live.erase(hTexRef) == 0) return api::invalidValue("not a texture reference");
    return {};
  });
}

// Binding an array supersedes any memory bound before; the reference takes the array's format.
ROCUDA_EXPORT CUresult cuTexRefSetArray(CUtexref hTexRef, CUarray hArray, unsigned int Flags) {
  return ROCUDA_API((hTexRef, hArray, Flags), [&]() -> api::Outcome {
    if (Flags != CU_TRSA_OVERRIDE_FORMAT)
      return api::invalidValue("Flags must be CU_TRSA_OVERRIDE_FORMAT");
    Result<core::Array*> array = api::lookupArray(hArray);
    if (!array) return array.error();
    const core::ArrayDescriptor& desc = (*array)->descriptor();
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.array = hArray;
      ref.address = 0;
      ref.format = static_cast<CUarray_format>(desc.format);
      ref.channels = static_cast<int>(desc.channels);
      return {};
    });
  });
}

// Linear memory: any address is accepted as it is, so the offset to apply in the kernel is 0.
ROCUDA_EXPORT CUresult cuTexRefSetAddress_v2(size_t* ByteOffset, CUtexref hTexRef, CUdeviceptr dptr,
                                             size_t bytes) {
  return ROCUDA_API((ByteOffset, hTexRef, dptr, bytes), [&]() -> api::Outcome {
    if (dptr == 0 && bytes != 0) return api::invalidValue("dptr is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.array = nullptr;
      ref.address = dptr;
      if (ByteOffset != nullptr) *ByteOffset = 0;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetAddress2D_v3(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc,
                                               CUdeviceptr dptr, size_t Pitch) {
  return ROCUDA_API((hTexRef, desc, dptr, Pitch), [&]() -> api::Outcome {
    if (desc == nullptr || dptr == 0) return api::invalidValue("NULL argument");
    if (Status valid = core::validateTexelFormat(desc->Format, desc->NumChannels); !valid)
      return valid;
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.array = nullptr;
      ref.address = dptr;
      ref.format = desc->Format;
      ref.channels = static_cast<int>(desc->NumChannels);
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetFormat(CUtexref hTexRef, CUarray_format fmt,
                                         int NumPackedComponents) {
  return ROCUDA_API((hTexRef, fmt, NumPackedComponents), [&]() -> api::Outcome {
    if (Status valid = core::validateTexelFormat(fmt, NumPackedComponents); !valid) return valid;
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.format = fmt;
      ref.channels = NumPackedComponents;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetAddressMode(CUtexref hTexRef, int dim, CUaddress_mode am) {
  return ROCUDA_API((hTexRef, dim, am), [&]() -> api::Outcome {
    if (dim < 0 || dim > 2) return api::invalidValue("dim must be 0, 1 or 2");
    if (am < CU_TR_ADDRESS_MODE_WRAP || am > CU_TR_ADDRESS_MODE_BORDER)
      return api::invalidValue("unknown address mode");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.addressModes[dim] = am;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  return ROCUDA_API((hTexRef, fm), [&]() -> api::Outcome {
    if (fm != CU_TR_FILTER_MODE_POINT && fm != CU_TR_FILTER_MODE_LINEAR)
      return api::invalidValue("unknown filter mode");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.filterMode = fm;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetFlags(CUtexref hTexRef, unsigned int Flags) {
  return ROCUDA_API((hTexRef, Flags), [&]() -> api::Outcome {
    constexpr unsigned kKnown = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                                CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                                CU_TRSF_SEAMLESS_CUBEMAP;
    if ((Flags & ~kKnown) != 0) return api::invalidValue("unknown flags");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.flags = Flags;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetAddress_v2(CUdeviceptr* pdptr, CUtexref hTexRef) {
  return ROCUDA_API((pdptr, hTexRef), [&]() -> api::Outcome {
    if (pdptr == nullptr) return api::invalidValue("pdptr is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      if (ref.address == 0) return api::invalidValue("no memory is bound to the reference");
      *pdptr = ref.address;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetArray(CUarray* phArray, CUtexref hTexRef) {
  return ROCUDA_API((phArray, hTexRef), [&]() -> api::Outcome {
    if (phArray == nullptr) return api::invalidValue("phArray is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      if (ref.array == nullptr) return api::invalidValue("no array is bound to the reference");
      *phArray = ref.array;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetAddressMode(CUaddress_mode* pam, CUtexref hTexRef, int dim) {
  return ROCUDA_API((pam, hTexRef, dim), [&]() -> api::Outcome {
    if (pam == nullptr) return api::invalidValue("pam is NULL");
    if (dim < 0 || dim > 2) return api::invalidValue("dim must be 0, 1 or 2");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pam = ref.addressModes[dim];
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return ROCUDA_API((pfm, hTexRef), [&]() -> api::Outcome {
    if (pfm == nullptr) return api::invalidValue("pfm is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pfm = ref.filterMode;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetFormat(CUarray_format* pFormat, int* pNumChannels,
                                         CUtexref hTexRef) {
  return ROCUDA_API((pFormat, pNumChannels, hTexRef), [&]() -> api::Outcome {
    if (pFormat == nullptr) return api::invalidValue("pFormat is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pFormat = ref.format;
      if (pNumChannels != nullptr) *pNumChannels = ref.channels;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetFlags(unsigned int* pFlags, CUtexref hTexRef) {
  return ROCUDA_API((pFlags, hTexRef), [&]() -> api::Outcome {
    if (pFlags == nullptr) return api::invalidValue("pFlags is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pFlags = ref.flags;
      return {};
    });
  });
}

// The sampling state of mipmapped references (CUDA 5.0): recorded and reported back.
ROCUDA_EXPORT CUresult cuTexRefSetMipmappedArray(CUtexref hTexRef, CUmipmappedArray hMipmappedArray,
                                                 unsigned int Flags) {
  return ROCUDA_API((hTexRef, hMipmappedArray, Flags), [&]() -> api::Outcome {
    if (Flags != CU_TRSA_OVERRIDE_FORMAT)
      return api::invalidValue("Flags must be CU_TRSA_OVERRIDE_FORMAT");
    Result<core::MipmappedArray*> mipmapped = api::lookupMipmappedArray(hMipmappedArray);
    if (!mipmapped) return mipmapped.error();
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.mipmappedArray = hMipmappedArray;
      ref.array = nullptr;
      ref.address = 0;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetMipmappedArray(CUmipmappedArray* phMipmappedArray,
                                                 CUtexref hTexRef) {
  return ROCUDA_API((phMipmappedArray, hTexRef), [&]() -> api::Outcome {
    if (phMipmappedArray == nullptr) return api::invalidValue("phMipmappedArray is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      if (ref.mipmappedArray == nullptr)
        return api::invalidValue("no mipmapped array is bound to the reference");
      *phMipmappedArray = ref.mipmappedArray;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetMipmapFilterMode(CUtexref hTexRef, CUfilter_mode fm) {
  return ROCUDA_API((hTexRef, fm), [&]() -> api::Outcome {
    if (fm != CU_TR_FILTER_MODE_POINT && fm != CU_TR_FILTER_MODE_LINEAR)
      return api::invalidValue("unknown filter mode");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.mipmapFilterMode = fm;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetMipmapFilterMode(CUfilter_mode* pfm, CUtexref hTexRef) {
  return ROCUDA_API((pfm, hTexRef), [&]() -> api::Outcome {
    if (pfm == nullptr) return api::invalidValue("pfm is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pfm = ref.mipmapFilterMode;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetMipmapLevelBias(CUtexref hTexRef, float bias) {
  return ROCUDA_API((hTexRef, bias), [&]() -> api::Outcome {
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.mipmapLevelBias = bias;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetMipmapLevelBias(float* pbias, CUtexref hTexRef) {
  return ROCUDA_API((pbias, hTexRef), [&]() -> api::Outcome {
    if (pbias == nullptr) return api::invalidValue("pbias is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pbias = ref.mipmapLevelBias;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetMipmapLevelClamp(CUtexref hTexRef, float minMipmapLevelClamp,
                                                   float maxMipmapLevelClamp) {
  return ROCUDA_API((hTexRef, minMipmapLevelClamp, maxMipmapLevelClamp), [&]() -> api::Outcome {
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.minMipmapLevelClamp = minMipmapLevelClamp;
      ref.maxMipmapLevelClamp = maxMipmapLevelClamp;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetMipmapLevelClamp(float* pminMipmapLevelClamp,
                                                   float* pmaxMipmapLevelClamp, CUtexref hTexRef) {
  return ROCUDA_API((pminMipmapLevelClamp, pmaxMipmapLevelClamp, hTexRef), [&]() -> api::Outcome {
    if (pminMipmapLevelClamp == nullptr || pmaxMipmapLevelClamp == nullptr)
      return api::invalidValue("NULL output");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pminMipmapLevelClamp = ref.minMipmapLevelClamp;
      *pmaxMipmapLevelClamp = ref.maxMipmapLevelClamp;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetMaxAnisotropy(CUtexref hTexRef, unsigned int maxAniso) {
  return ROCUDA_API((hTexRef, maxAniso), [&]() -> api::Outcome {
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      ref.maxAnisotropy = maxAniso;
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetMaxAnisotropy(int* pmaxAniso, CUtexref hTexRef) {
  return ROCUDA_API((pmaxAniso, hTexRef), [&]() -> api::Outcome {
    if (pmaxAniso == nullptr) return api::invalidValue("pmaxAniso is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      *pmaxAniso = static_cast<int>(ref.maxAnisotropy);
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefSetBorderColor(CUtexref hTexRef, float* pBorderColor) {
  return ROCUDA_API((hTexRef, pBorderColor), [&]() -> api::Outcome {
    if (pBorderColor == nullptr) return api::invalidValue("pBorderColor is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      std::copy(pBorderColor, pBorderColor + 4, ref.borderColor);
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuTexRefGetBorderColor(float* pBorderColor, CUtexref hTexRef) {
  return ROCUDA_API((pBorderColor, hTexRef), [&]() -> api::Outcome {
    if (pBorderColor == nullptr) return api::invalidValue("pBorderColor is NULL");
    return api::withReference(hTexRef, [&](api::TextureReference& ref) -> api::Outcome {
      std::copy(ref.borderColor, ref.borderColor + 4, pBorderColor);
      return {};
    });
  });
}

ROCUDA_EXPORT CUresult cuParamSetTexRef(CUfunction hfunc, int texunit, CUtexref hTexRef) {
  return ROCUDA_API((hfunc, texunit, hTexRef), [&]() -> api::Outcome {
    if (texunit != CU_PARAM_TR_DEFAULT) return api::invalidValue("texunit must be -1");
    Result<core::Kernel*> kernel = api::lookupKernel(hfunc);
    if (!kernel) return kernel.error();
    return api::withReference(hTexRef, [](api::TextureReference&) -> api::Outcome { return {}; });
  });
}

ROCUDA_EXPORT CUresult cuSurfRefSetArray(CUsurfref hSurfRef, CUarray hArray, unsigned int Flags) {
  return ROCUDA_API((hSurfRef, hArray, Flags), [&]() -> api::Outcome {
    return api::invalidValue("not a surface reference (no module declares one)");
  });
}

ROCUDA_EXPORT CUresult cuSurfRefGetArray(CUarray* phArray, CUsurfref hSurfRef) {
  return ROCUDA_API((phArray, hSurfRef), [&]() -> api::Outcome {
    if (phArray == nullptr) return api::invalidValue("phArray is NULL");
    return api::invalidValue("not a surface reference (no module declares one)");
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
