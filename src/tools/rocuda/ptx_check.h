// `rocuda ptx-check [-v] FILE...`: parse and check the PTX in text files, ELF executables and
// objects, and fatbin files, printing diagnostics in compiler form.
#pragma once

#include <string>
#include <vector>

namespace rocuda::tools {

// Runs the command on its arguments (those after "ptx-check"). Returns the exit status: 0 when
// every file is valid PTX, 1 when any file has errors or carries no PTX, 2 on a usage error or
// an unreadable file.
int commandPtxCheck(const std::vector<std::string>& args);

}  // namespace rocuda::tools
