// CUresult names and texts, and the ErrorCode -> CUresult mapping.
#include "api/cuda/result_codes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rocuda::api {
namespace {

using namespace cuda;

TEST(ResultCodes, NamesAndTexts) {
  EXPECT_STREQ(resultName(CUDA_SUCCESS), "CUDA_SUCCESS");
  EXPECT_STREQ(resultDescription(CUDA_SUCCESS), "no error");
  EXPECT_STREQ(resultName(CUDA_ERROR_NOT_FOUND), "CUDA_ERROR_NOT_FOUND");
  EXPECT_STREQ(resultDescription(CUDA_ERROR_INVALID_VALUE), "invalid argument");
  EXPECT_STREQ(resultName(CUDA_ERROR_UNKNOWN), "CUDA_ERROR_UNKNOWN");
  EXPECT_STREQ(resultName(CUDA_ERROR_INVALID_PTX), "CUDA_ERROR_INVALID_PTX");
  EXPECT_EQ(resultName(static_cast<CUresult>(12345)), nullptr);
  EXPECT_EQ(resultDescription(static_cast<CUresult>(-1)), nullptr);
}

TEST(ResultCodes, EveryCodeUpToUnknownThatHasANameHasAText) {
  std::set<std::string> names;
  int named = 0;
  for (int code = 0; code <= 1000; ++code) {
    const char* name = resultName(static_cast<CUresult>(code));
    const char* text = resultDescription(static_cast<CUresult>(code));
    EXPECT_EQ(name == nullptr, text == nullptr) << code;
    if (name == nullptr) continue;
    ++named;
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(std::string(name).rfind("CUDA_", 0), 0u) << name;
    EXPECT_GT(std::string(text).size(), 2u) << name;
  }
  EXPECT_EQ(named, 101);  // every CUresult of CUDA 13.0
}

TEST(ResultCodes, ErrorCodeMapping) {
  EXPECT_EQ(toCuResult(ErrorCode::InvalidValue), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(toCuResult(ErrorCode::OutOfMemory), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(toCuResult(ErrorCode::InvalidContext), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(toCuResult(ErrorCode::InvalidHandle), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(toCuResult(ErrorCode::InvalidPtx), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(toCuResult(ErrorCode::UnsupportedPtx), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(toCuResult(ErrorCode::NoBinaryForGpu), CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(toCuResult(ErrorCode::NotFound), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(toCuResult(ErrorCode::NotReady), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(toCuResult(ErrorCode::InvalidConfiguration), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(toCuResult(ErrorCode::StreamCaptureUnsupported), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(toCuResult(ErrorCode::StreamCaptureImplicit), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  EXPECT_EQ(toCuResult(ErrorCode::Internal), CUDA_ERROR_UNKNOWN);
}

}  // namespace
}  // namespace rocuda::api
