// PTX front-end benchmark: parses (lex + parse + check) one PTX file N times and reports the
// throughput, the peak RSS growth and the AST's heap footprint against the text size.
//   ptx_parse_bench FILE [ITERATIONS]
// Output: human-readable lines, then "key=value" lines for run_ptx_parse_bench.sh.
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ptx/parser.h"

namespace {

double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double wallSeconds() {
  using Clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

long peakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

// Arena bytes in use plus mmapped blocks (large vectors go there).
size_t heapInUse() {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

std::optional<std::string> readFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Footprint {
  size_t astBytes = 0;
  size_t functions = 0;
  size_t statements = 0;
  bool errors = false;
  std::string diagnostics;
};

// One parse whose result stays alive while the heap is measured.
Footprint measureAst(const std::string& text) {
  Footprint footprint;
  size_t before = heapInUse();
  rocuda::ptx::ParseResult result = rocuda::ptx::parseModule(text, "bench.ptx");
  size_t after = heapInUse();
  footprint.astBytes = after > before ? after - before : 0;
  for (const auto& function : result.module.functions) {
    ++footprint.functions;
    footprint.statements += function.body.size();
  }
  footprint.errors = result.hasErrors();
  if (footprint.errors) footprint.diagnostics = result.formatDiagnostics().substr(0, 2000);
  return footprint;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s FILE.ptx [ITERATIONS]\n", argv[0]);
    return 2;
  }
  int iterations = argc == 3 ? std::atoi(argv[2]) : 10;
  if (iterations < 1) iterations = 1;
  std::optional<std::string> text = readFile(argv[1]);
  if (!text) {
    std::fprintf(stderr, "ptx_parse_bench: cannot read '%s'\n", argv[1]);
    return 2;
  }
  double megabytes = static_cast<double>(text->size()) / 1e6;

  long rssBefore = peakRssKiB();
  Footprint footprint = measureAst(*text);
  if (footprint.errors) {
    std::fprintf(stderr, "ptx_parse_bench: %s does not parse:\n%s", argv[1],
                 footprint.diagnostics.c_str());
    return 1;
  }
  std::vector<double> wall, cpu;
  for (int i = 0; i < iterations; ++i) {
    double w = wallSeconds(), c = cpuSeconds();
    rocuda::ptx::ParseResult result = rocuda::ptx::parseModule(*text, "bench.ptx");
    c = cpuSeconds() - c;
    w = wallSeconds() - w;
    if (result.hasErrors()) return 1;
    wall.push_back(w);
    cpu.push_back(c);
  }
  long rssGrowth = peakRssKiB() - rssBefore;

  double wallMedian = median(wall), cpuMedian = median(cpu);
  double wallMin = *std::min_element(wall.begin(), wall.end());
  double ratio = static_cast<double>(footprint.astBytes) / static_cast<double>(text->size());
  std::printf("file: %s (%.2f MB, %zu functions, %zu statements)\n", argv[1], megabytes,
              footprint.functions, footprint.statements);
  std::printf(
      "parse+check x%d: median %.3f s wall (%.1f MB/s), %.3f s CPU (%.1f MB/s), "
      "best %.3f s wall\n",
      iterations, wallMedian, megabytes / wallMedian, cpuMedian, megabytes / cpuMedian, wallMin);
  std::printf("AST heap: %.2f MB = %.2fx the text (goal <= 4x)\n",
              static_cast<double>(footprint.astBytes) / 1e6, ratio);
  std::printf("peak RSS growth: %.2f MB\n", static_cast<double>(rssGrowth) / 1024.0);
  std::printf(
      "bytes=%zu\nparse_wall_s=%.6f\nparse_cpu_s=%.6f\nparse_best_wall_s=%.6f\n"
      "ast_bytes=%zu\nast_ratio=%.3f\nrss_growth_kib=%ld\n",
      text->size(), wallMedian, cpuMedian, wallMin, footprint.astBytes, ratio, rssGrowth);
  return 0;
}
