# CUDA language setup shared by tests/e2e and samples: nvcc with its default architectures
# (sm_75 SASS + compute_75 PTX for CUDA 13), none of the project's C++ warning flags.
include_guard(DIRECTORY)

include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  enable_language(CUDA)
  # The programs are built as a user builds them: nvcc's defaults, not the project's build type
  # (whose -DNDEBUG would remove device-side asserts, for one).
  foreach(config DEBUG RELEASE RELWITHDEBINFO MINSIZEREL)
    set(CMAKE_CUDA_FLAGS_${config} "")
  endforeach()
  # The libcuda stub for programs that call the driver API directly.
  get_filename_component(_rocuda_nvcc_bin ${CMAKE_CUDA_COMPILER} DIRECTORY)
  find_library(ROCUDA_CUDA_DRIVER_STUB cuda
    HINTS ${_rocuda_nvcc_bin}/../lib64/stubs ${_rocuda_nvcc_bin}/../lib/stubs
    NO_DEFAULT_PATH)
  # NVIDIA's cuFFT, which runs unchanged on Rocuda's driver (its kernels are PTX).
  find_library(ROCUDA_CUFFT_LIBRARY cufft
    HINTS ${_rocuda_nvcc_bin}/../lib64 ${_rocuda_nvcc_bin}/../lib
    NO_DEFAULT_PATH)
endif()

# rocuda_add_cuda_program(TARGET SOURCES ... RUNTIME Static|Shared OUTPUT_DIRECTORY DIR)
function(rocuda_add_cuda_program target)
  cmake_parse_arguments(ARG "" "RUNTIME;OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  add_executable(${target} ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    CUDA_ARCHITECTURES OFF
    CUDA_RUNTIME_LIBRARY ${ARG_RUNTIME}
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON
    RUNTIME_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
endfunction()
