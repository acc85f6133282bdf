# Everything comes from Debian packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)

# Debian's llvm-19-dev; its version file only accepts an exact major.minor, so check the major here.
find_package(LLVM REQUIRED CONFIG PATHS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "LLVM 19 is required, found ${LLVM_PACKAGE_VERSION} (scripts/install-deps.sh)")
endif()
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
# Link the shared libLLVM: linking static LLVM components costs minutes per build.
add_library(rocuda_llvm INTERFACE)
target_include_directories(rocuda_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(rocuda_llvm INTERFACE ${LLVM_DEFINITIONS})
target_link_libraries(rocuda_llvm INTERFACE LLVM)
set(ROCUDA_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})

find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)

if(ROCUDA_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
