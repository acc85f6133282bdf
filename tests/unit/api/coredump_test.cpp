// GPU core dump settings through libcuda.so.1 (cuCoredump{Get,Set}Attribute[Global]): the
// documented defaults and sizes, process and context values, refusals, and what a kernel fault
// does with them: the dump file, then the abort unless the settings skip it.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

using Access = CUresult (*)(CUcoredumpSettings, void*, size_t*);
Access getGlobal() { return proc<Access>("cuCoredumpGetAttributeGlobal", 12090); }
Access setGlobal() { return proc<Access>("cuCoredumpSetAttributeGlobal", 12090); }
Access getLocal() { return proc<Access>("cuCoredumpGetAttribute", 12090); }
Access setLocal() { return proc<Access>("cuCoredumpSetAttribute", 12090); }

bool flagOf(Access get, CUcoredumpSettings which) {
  bool value = false;
  size_t size = sizeof value;
  EXPECT_EQ(get(which, &value, &size), CUDA_SUCCESS) << which;
  return value;
}

std::string textOf(Access get, CUcoredumpSettings which) {
  char text[1024] = {};
  size_t size = sizeof text;
  EXPECT_EQ(get(which, text, &size), CUDA_SUCCESS) << which;
  return text;
}

void setFlag(Access set, CUcoredumpSettings which, bool value) {
  size_t size = sizeof value;
  EXPECT_EQ(set(which, &value, &size), CUDA_SUCCESS) << which;
}

void setText(Access set, CUcoredumpSettings which, const std::string& text) {
  size_t size = text.size() + 1;
  EXPECT_EQ(set(which, const_cast<char*>(text.c_str()), &size), CUDA_SUCCESS) << which;
}

std::string hostName() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// fault(): one thread traps (a GPU exception).
constexpr const char* kTrapPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .entry fault()
{
  trap;
}
)";

// Launches `fault` and waits for it: CUDA_ERROR_LAUNCH_FAILED, sticky.
CUresult launchFault() {
  CUmodule module = nullptr;
  CUfunction f = nullptr;
  EXPECT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kTrapPtx), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "fault"),
            CUDA_SUCCESS);
  auto launch = reinterpret_cast<Launch>(proc<void*>("cuLaunchKernel", 12090));
  EXPECT_EQ(launch(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  return CU(cuCtxSynchronize)();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(Driver, CoredumpSettingsDefaultsAndSizes) {
  EXPECT_FALSE(flagOf(getGlobal(), CU_COREDUMP_ENABLE_ON_EXCEPTION));
  EXPECT_TRUE(flagOf(getGlobal(), CU_COREDUMP_TRIGGER_HOST));
  EXPECT_FALSE(flagOf(getGlobal(), CU_COREDUMP_LIGHTWEIGHT));
  EXPECT_FALSE(flagOf(getGlobal(), CU_COREDUMP_ENABLE_USER_TRIGGER));
  std::string suffix = hostName() + "." + std::to_string(getpid());
  EXPECT_EQ(textOf(getGlobal(), CU_COREDUMP_FILE), "core.cuda." + suffix);
  EXPECT_EQ(textOf(getGlobal(), CU_COREDUMP_PIPE), "corepipe.cuda." + suffix);
  int flags = -1;
  size_t size = sizeof flags;
  ASSERT_EQ(getGlobal()(CU_COREDUMP_GENERATION_FLAGS, &flags, &size), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_COREDUMP_DEFAULT_FLAGS);
  // A NULL value asks for the size of the value.
  for (auto [which, expected] : {std::pair{CU_COREDUMP_TRIGGER_HOST, sizeof(bool)},
                                 std::pair{CU_COREDUMP_FILE, size_t{1024}},
                                 std::pair{CU_COREDUMP_GENERATION_FLAGS, sizeof(int)}}) {
    size = 0;
    EXPECT_EQ(getGlobal()(which, nullptr, &size), CUDA_SUCCESS);
    EXPECT_EQ(size, expected) << which;
    size = 0;
    EXPECT_EQ(setLocal()(which, nullptr, &size), CUDA_SUCCESS);
    EXPECT_EQ(size, expected) << which;
  }
  bool value = true;
  EXPECT_EQ(getGlobal()(CU_COREDUMP_MAX, &value, &size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getGlobal()(static_cast<CUcoredumpSettings>(0), &value, &size),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getGlobal()(CU_COREDUMP_TRIGGER_HOST, &value, nullptr), CUDA_ERROR_INVALID_VALUE);
  char small[4] = {};
  size = sizeof small;  // the default file name does not fit
  EXPECT_EQ(getGlobal()(CU_COREDUMP_FILE, small, &size), CUDA_ERROR_INVALID_VALUE);
}

// What NVIDIA's own driver tests (cuda-python's test_cuda_coredump_attr) set and read back, then
// a context's own values over the process's.
TEST_F(Driver, CoredumpSettingsProcessAndContext) {
  setFlag(setGlobal(), CU_COREDUMP_TRIGGER_HOST, false);
  setText(setGlobal(), CU_COREDUMP_FILE, "corefile");
  setText(setGlobal(), CU_COREDUMP_PIPE, "corepipe");
  setFlag(setGlobal(), CU_COREDUMP_LIGHTWEIGHT, true);
  EXPECT_FALSE(flagOf(getGlobal(), CU_COREDUMP_TRIGGER_HOST));
  EXPECT_EQ(textOf(getGlobal(), CU_COREDUMP_FILE), "corefile");
  EXPECT_EQ(textOf(getGlobal(), CU_COREDUMP_PIPE), "corepipe");
  EXPECT_TRUE(flagOf(getGlobal(), CU_COREDUMP_LIGHTWEIGHT));
  // The context sees the process's values until it sets its own.
  EXPECT_EQ(textOf(getLocal(), CU_COREDUMP_FILE), "corefile");
  setText(setLocal(), CU_COREDUMP_FILE, "contextfile");
  setFlag(setLocal(), CU_COREDUMP_ENABLE_ON_EXCEPTION, true);
  EXPECT_EQ(textOf(getLocal(), CU_COREDUMP_FILE), "contextfile");
  EXPECT_TRUE(flagOf(getLocal(), CU_COREDUMP_ENABLE_ON_EXCEPTION));
  EXPECT_EQ(textOf(getGlobal(), CU_COREDUMP_FILE), "corefile");
  EXPECT_FALSE(flagOf(getGlobal(), CU_COREDUMP_ENABLE_ON_EXCEPTION));
  // The user trigger and its pipe are process-wide only; enabling the trigger is refused here.
  bool on = true;
  size_t size = sizeof on;
  EXPECT_EQ(setLocal()(CU_COREDUMP_ENABLE_USER_TRIGGER, &on, &size), CUDA_ERROR_INVALID_VALUE);
  char pipe[] = "p";
  size = sizeof pipe;
  EXPECT_EQ(setLocal()(CU_COREDUMP_PIPE, pipe, &size), CUDA_ERROR_INVALID_VALUE);
  size = sizeof on;
  EXPECT_EQ(setGlobal()(CU_COREDUMP_ENABLE_USER_TRIGGER, &on, &size), CUDA_ERROR_NOT_PERMITTED);
  // Text of more than 1023 characters.
  std::string tooLong(1100, 'x');
  size = tooLong.size() + 1;
  EXPECT_EQ(setGlobal()(CU_COREDUMP_FILE, tooLong.data(), &size), CUDA_ERROR_INVALID_VALUE);
  // A reset of the primary context forgets its own values.
  ASSERT_EQ(CU(cuDevicePrimaryCtxReset, CUdevice)(0), CUDA_SUCCESS);
  EXPECT_EQ(textOf(getLocal(), CU_COREDUMP_FILE), "corefile");
  // Without a current context the per-context calls refuse.
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(nullptr), CUDA_SUCCESS);
  size = sizeof on;
  EXPECT_EQ(getLocal()(CU_COREDUMP_TRIGGER_HOST, &on, &size), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// A fault with dumps on writes the report where CU_COREDUMP_FILE says (%p the process id) and,
// with the host trigger off, the process goes on with the usual sticky error.
TEST_F(Driver, CoredumpWrittenOnAFault) {
  std::string pattern = ::testing::TempDir() + "rocuda-core.%p";
  std::string path = ::testing::TempDir() + "rocuda-core." + std::to_string(getpid());
  std::remove(path.c_str());
  setText(setGlobal(), CU_COREDUMP_FILE, pattern);
  setFlag(setGlobal(), CU_COREDUMP_TRIGGER_HOST, false);
  setFlag(setLocal(), CU_COREDUMP_ENABLE_ON_EXCEPTION, true);
  EXPECT_EQ(launchFault(), CUDA_ERROR_LAUNCH_FAILED);
  std::string dump = readFile(path);
  EXPECT_NE(dump.find("Rocuda GPU core dump"), std::string::npos) << dump;
  EXPECT_NE(dump.find("fault"), std::string::npos) << dump;  // the kernel's name
  EXPECT_NE(dump.find("process: " + std::to_string(getpid())), std::string::npos) << dump;
  std::remove(path.c_str());
  // A reset clears the sticky error (and the context's own settings).
  ASSERT_EQ(CU(cuDevicePrimaryCtxReset, CUdevice)(0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  // Dumps off: nothing is written.
  EXPECT_EQ(launchFault(), CUDA_ERROR_LAUNCH_FAILED);
  EXPECT_FALSE(std::ifstream(path).good());
  ASSERT_EQ(CU(cuDevicePrimaryCtxReset, CUdevice)(0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// With the host trigger on (the default), the dump is followed by abort(), as NVIDIA's driver
// does so that the system writes the host's core file.
TEST_F(Driver, CoredumpThenAbortByDefault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::string path = ::testing::TempDir() + "rocuda-core-abort";
  EXPECT_DEATH(
      {
        setText(setGlobal(), CU_COREDUMP_FILE, path);
        setFlag(setGlobal(), CU_COREDUMP_ENABLE_ON_EXCEPTION, true);
        launchFault();
      },
      "core dump written to");
  EXPECT_NE(readFile(path).find("Rocuda GPU core dump"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rocuda::cuda::testing
