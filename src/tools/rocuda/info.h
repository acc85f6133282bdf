// `rocuda info [--json]`: every device of every backend, with its CUDA-facing identity and its
// native one, and why no AMD GPU is in use when none is.
#pragma once

#include <string>
#include <vector>

namespace rocuda::tools {

int commandInfo(const std::vector<std::string>& args);

}  // namespace rocuda::tools
