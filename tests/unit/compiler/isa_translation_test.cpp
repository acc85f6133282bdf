// Every instruction of the ISA corpus (tests/unit/ptx/isa: the ISA instruction by instruction,
// each file accepted by ptxas) translates to valid target-neutral IR, except the forms listed in
// isa_refused.txt. Each file is translated; a refused instruction must name its line and column
// (it is then blanked and the file translated again), and the final module must verify. The
// refused lines found must be exactly the listed ones: a form that stops translating fails the
// test, and so does one that starts translating until the list says so. The list is the
// project's inventory of what the translator does not do yet.
#include <gtest/gtest.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/translator.h"

namespace rocuda::compiler {
namespace {

std::vector<std::string> corpusFiles() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ROCUDA_PTX_ISA_DIR, ec))
    if (entry.path().extension() == ".ptx") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "1-3,7" -> {1, 2, 3, 7}.
std::set<int> parseRanges(const std::string& text) {
  std::set<int> lines;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    if (item.empty()) continue;
    size_t dash = item.find('-');
    int first = std::stoi(item.substr(0, dash));
    int last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
    for (int line = first; line <= last; ++line) lines.insert(line);
  }
  return lines;
}

std::string formatRanges(const std::set<int>& lines) {
  std::string out;
  for (auto it = lines.begin(); it != lines.end();) {
    int first = *it, last = first;
    while (++it != lines.end() && *it == last + 1) last = *it;
    if (!out.empty()) out += ",";
    out += std::to_string(first);
    if (last != first) out += "-" + std::to_string(last);
  }
  return out;
}

// isa_refused.txt: `file.ptx: ranges` per line; `#` starts a comment.
std::map<std::string, std::set<int>> expectedRefusals() {
  std::map<std::string, std::set<int>> expected;
  std::stringstream in(readText(ROCUDA_ISA_REFUSED_LIST));
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    expected[line.substr(0, colon)] = parseRanges(line.substr(colon + 1));
  }
  return expected;
}

// The 1-based line of a translator error ("... at 36:5 in function 'f'") or of the first parser
// diagnostic ("name.ptx:36:5: error: ..."); 0 when the message names none.
int lineOf(const std::string& message) {
  static const std::regex located(R"((?:at |\.ptx:)(\d+):(\d+))");
  std::smatch match;
  return std::regex_search(message, match, located) ? std::stoi(match[1]) : 0;
}

class IsaTranslation : public ::testing::TestWithParam<std::string> {};

TEST_P(IsaTranslation, OnlyTheListedFormsAreRefused) {
  const std::string& name = GetParam();
  std::vector<std::string> lines;
  {
    std::stringstream text(readText(std::string(ROCUDA_PTX_ISA_DIR) + "/" + name));
    for (std::string line; std::getline(text, line);) lines.push_back(line);
  }
  ASSERT_FALSE(lines.empty());
  std::map<int, std::string> refused;  // line -> the instruction and why
  for (;;) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    llvm::LLVMContext context;
    ModuleInfo info;
    auto module = detail::translatePtx(context, text, name, info);
    if (module.ok()) {
      Status verified = detail::verifiedIr(**module, name, "translated");
      EXPECT_TRUE(verified.ok()) << verified.error().message;
      break;
    }
    const std::string& message = module.error().message;
    int line = lineOf(message);
    ASSERT_GT(line, 0) << "a refusal that names no line: " << message;
    ASSERT_LE(line, static_cast<int>(lines.size())) << message;
    ASSERT_EQ(refused.count(line), 0u) << "line " << line << " refused again: " << message;
    EXPECT_TRUE(module.error().code == ErrorCode::UnsupportedPtx)
        << "not an UnsupportedPtx refusal: " << message;
    std::string instruction = lines[static_cast<size_t>(line - 1)];
    instruction.erase(0, instruction.find_first_not_of(" \t"));
    refused[line] = instruction + "  (" + message + ")";
    lines[static_cast<size_t>(line - 1)].clear();
  }

  std::map<std::string, std::set<int>> expected = expectedRefusals();
  std::set<int> listed = expected.count(name) ? expected[name] : std::set<int>{};
  std::set<int> found;
  for (const auto& [line, what] : refused) found.insert(line);
  std::string newlyRefused, nowTranslated;
  for (const auto& [line, what] : refused)
    if (!listed.count(line))
      newlyRefused += "\n  " + name + ":" + std::to_string(line) + ": " + what;
  for (int line : listed)
    if (!found.count(line)) nowTranslated += " " + std::to_string(line);
  EXPECT_TRUE(newlyRefused.empty())
      << "refused but not listed in isa_refused.txt:" << newlyRefused
      << "\nthe list's line for this file would be: " << name << ": " << formatRanges(found);
  EXPECT_TRUE(nowTranslated.empty())
      << "listed in isa_refused.txt but translated now (lines" << nowTranslated
      << "): the list's line for this file would be: " << name << ": " << formatRanges(found);
}

INSTANTIATE_TEST_SUITE_P(Corpus, IsaTranslation, ::testing::ValuesIn(corpusFiles()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param.substr(0, info.param.size() - 4);
                           for (char& c : id)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return id;
                         });

}  // namespace
}  // namespace rocuda::compiler
