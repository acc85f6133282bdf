// The CPU device's primary context, for core tests.
#pragma once

#include <gtest/gtest.h>

#include "core/context.h"
#include "core/platform.h"

namespace rocuda::core::testing {

inline Context& primaryContext() {
  Platform& platform = Platform::instance();
  EXPECT_TRUE(platform.initialize().ok());
  return platform.device(0)->primaryContext();
}

}  // namespace rocuda::core::testing
