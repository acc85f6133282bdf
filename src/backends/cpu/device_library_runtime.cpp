// The device library's functions as the CPU device's runtime symbols.
#include "backends/cpu/device_library_runtime.h"

namespace rocuda::backends::cpu {

std::vector<std::pair<std::string, void*>> deviceLibrarySymbols() {
  auto fn = [](auto f) { return reinterpret_cast<void*>(f); };
  return {{"__rocuda_tex_fetch_f", fn(__rocuda_tex_fetch_f)},
          {"__rocuda_tex_fetch_i", fn(__rocuda_tex_fetch_i)},
          {"__rocuda_tex_gather", fn(__rocuda_tex_gather)},
          {"__rocuda_tex_fetch_lod", fn(__rocuda_tex_fetch_lod)},
          {"__rocuda_tex_fetch_grad", fn(__rocuda_tex_fetch_grad)},
          {"__rocuda_tex_query", fn(__rocuda_tex_query)},
          {"__rocuda_surf_query", fn(__rocuda_surf_query)},
          {"__rocuda_surf_load", fn(__rocuda_surf_load)},
          {"__rocuda_surf_store", fn(__rocuda_surf_store)},
          {"__rocuda_surf_store_p", fn(__rocuda_surf_store_p)},
          {"__rocuda_surf_reduce", fn(__rocuda_surf_reduce)},
          {"__rocuda_tensor_load", fn(__rocuda_tensor_load)},
          {"__rocuda_tensor_store", fn(__rocuda_tensor_store)}};
}

}  // namespace rocuda::backends::cpu
