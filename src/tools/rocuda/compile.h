// `rocuda compile INPUT --target gfxNNNN[:features] [-o OUT] [--code-object-version 4|5]`:
// ahead-of-time compilation of a PTX file, or of every PTX in an executable or fatbin, to AMD GPU
// code objects.
#pragma once

#include <string>
#include <vector>

namespace rocuda::tools {

int commandCompile(const std::vector<std::string>& args);

}  // namespace rocuda::tools
