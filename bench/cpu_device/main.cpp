// cpu_device_bench: each kernel of kernels.cu run three ways in one process -- as CUDA on
// Rocuda's CPU device, as OpenCL C on PoCL, as native OpenMP -- each checked against a host
// reference, with STREAM triad measured in the same run. Prints one Markdown table.
//
//   cpu_device_bench [--quick] [--reps N] [--budget SECONDS] [--only SUBSTRING] [--libcuda PATH]
//
// Exit status: 0 when every variant that ran verified, 1 on a wrong result (FAIL), 2 when a
// variant failed to run, 3 on bad arguments.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "workload.h"

#ifndef ROCUDA_BENCH_LIBCUDA
#define ROCUDA_BENCH_LIBCUDA "libcuda.so.1"
#endif

namespace rocuda::bench {
namespace {

struct Options {
  bool quick = false;
  MeasureOptions measure;
  std::string only;
  std::string libcuda = ROCUDA_BENCH_LIBCUDA;
};

bool parseArgs(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool hasValue = i + 1 < argc;
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--reps" && hasValue) {
      options.measure.reps = std::atoi(argv[++i]);
      if (options.measure.reps < 1) return false;
    } else if (arg == "--budget" && hasValue) {
      options.measure.budgetSeconds = std::atof(argv[++i]);
    } else if (arg == "--only" && hasValue) {
      options.only = argv[++i];
    } else if (arg == "--libcuda" && hasValue) {
      options.libcuda = argv[++i];
    } else {
      return false;
    }
  }
  if (options.quick) options.measure.reps = 1;
  return true;
}

std::string formatTime(double seconds) {
  char text[32];
  if (seconds < 1e-3)
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  else if (seconds < 1.0)
    std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  return text;
}

// "best (median)" or why there is no time.
std::string timeCell(const RunResult& r) {
  if (!r.error.empty() && !r.ran) return "ERROR";
  if (!r.ran) return "-";
  std::string cell = formatTime(r.timing.best) + " (" + formatTime(r.timing.median) + ")";
  if (r.timing.reps < 3) cell += " n=" + std::to_string(r.timing.reps);
  return cell;
}

std::string ratioCell(const RunResult& num, const RunResult& den) {
  if (!num.ran || !den.ran || den.timing.best <= 0.0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", num.timing.best / den.timing.best);
  return text;
}

// What the table needs of a workload once its buffers are gone.
struct Row {
  std::string name, size, check;
  bool memoryBound = false;
  double bytes = 0.0;
  double flops = 0.0;
  RunResult results[3];
};

std::string percentCell(const Row& row, const RunResult& r, double triad) {
  if (!r.ran || triad <= 0.0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", 100.0 * row.bytes / r.timing.best / triad);
  return text;
}

// STREAM triad on all threads before and after the kernels, and on one thread: the best is
// the reference. On a busy machine a second OpenMP thread that is not scheduled slows a static
// loop down, and one thread alone can come closer to the memory's bandwidth.
struct Triad {
  double before = 0.0, after = 0.0, oneThread = 0.0;
  double best() const { return std::max({before, after, oneThread}); }
};

void printTable(const Options& options, const Triad& triads, double load, Backend* const* backends,
                const std::vector<Row>& rows) {
  double triad = triads.best();
  std::printf("# Rocuda CPU device benchmark%s\n\n", options.quick ? " (--quick)" : "");
  std::printf("- hardware threads: %u; OpenMP threads: %d; load average at start: %.2f\n",
              std::thread::hardware_concurrency(), omp_get_max_threads(), load);
  std::printf(
      "- STREAM triad (OpenMP, float, 3 arrays of %s): %.2f GB/s, the best of: all"
      " threads before the kernels %.2f, after %.2f, one thread %.2f; %% of triad uses it\n",
      options.quick ? "256 KiB" : "64 MiB", triad / 1e9, triads.before / 1e9, triads.after / 1e9,
      triads.oneThread / 1e9);
  for (int b = 0; b < 3; ++b) {
    std::string why = backends[b]->unavailable();
    std::string note = why.empty() ? backends[b]->setupNote() : "UNAVAILABLE: " + why;
    if (!note.empty()) std::printf("- %s: %s\n", backends[b]->name(), note.c_str());
  }
  std::printf(
      "- times: best (median) per launch of up to %d runs after a warm-up run (n=: fewer"
      " runs); ratios: best time over best time, below 1.00x = Rocuda faster\n\n",
      options.measure.reps);
  std::printf(
      "| kernel | size | Rocuda | PoCL | OpenMP | Rocuda/PoCL | Rocuda/OpenMP |"
      " %% of triad (R / P / O) | check |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    const RunResult* r = row.results;
    std::string percent = "-";
    if (row.memoryBound)
      percent = percentCell(row, r[0], triad) + " / " + percentCell(row, r[1], triad) + " / " +
                percentCell(row, r[2], triad);
    std::printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.name.c_str(),
                row.size.c_str(), timeCell(r[0]).c_str(), timeCell(r[1]).c_str(),
                timeCell(r[2]).c_str(), ratioCell(r[0], r[1]).c_str(),
                ratioCell(r[0], r[2]).c_str(), percent.c_str(),
                row.check.empty() ? "ok" : row.check.c_str());
  }
  // Compute-bound rows also in GFLOP/s (best time).
  for (const Row& row : rows) {
    if (row.memoryBound || row.flops <= 0.0) continue;
    std::printf("\n%s: GFLOP/s", row.name.c_str());
    for (int b = 0; b < 3; ++b)
      if (row.results[b].ran)
        std::printf(" %s %.2f", backends[b]->name(), row.flops / row.results[b].timing.best / 1e9);
    std::printf("\n");
  }
}

// Runs one workload all three ways; adds failures to `notes` and returns the row.
Row runWorkload(const Workload& w, const Options& options, Backend* const* backends,
                std::string& notes, int& status) {
  Row row{w.name, w.size, {}, w.memoryBound, w.bytes, w.flops, {}};
  for (int b = 0; b < 3; ++b) {
    if (!backends[b]->unavailable().empty()) continue;  // reported once in the header
    std::fprintf(stderr, "cpu_device_bench: %s on %s...\n", w.name.c_str(), backends[b]->name());
    row.results[b] = backends[b]->run(w, options.measure);
    const RunResult& r = row.results[b];
    std::string which = backends[b]->name();
    if (!r.error.empty()) {
      row.check += (row.check.empty() ? "" : ", ") + ("ERROR " + which);
      notes += "- " + w.name + ", " + which + ": " + r.error + "\n";
      status = status == 1 ? 1 : 2;
    } else if (!r.verifyError.empty()) {
      row.check += (row.check.empty() ? "" : ", ") + ("FAIL " + which);
      notes += "- " + w.name + ", " + which + ": wrong result: " + r.verifyError + "\n";
      status = 1;
    }
  }
  return row;
}

int runAll(const Options& options) {
  double load[1] = {0.0};
  getloadavg(load, 1);  // the machine is shared: a busy machine hurts OpenMP's barriers most
  std::unique_ptr<Backend> rocuda = makeRocudaBackend(options.libcuda);
  std::unique_ptr<Backend> opencl = makeOpenClBackend();
  std::unique_ptr<Backend> openmp = makeNativeBackend();
  Backend* backends[3] = {rocuda.get(), opencl.get(), openmp.get()};
  std::size_t triadElements = options.quick ? (1u << 16) : (1u << 24);
  int triadReps = options.quick ? 2 : 20;
  Triad triad;
  triad.before = streamTriadBytesPerSecond(triadElements, triadReps, omp_get_max_threads());
  triad.oneThread = streamTriadBytesPerSecond(triadElements, triadReps, 1);

  // PoCL missing is reported and tolerated; Rocuda missing is a failure of the benchmark.
  int status = rocuda->unavailable().empty() ? 0 : 2;
  std::string notes;
  std::vector<Row> rows;
  for (const WorkloadFactory& factory : workloadFactories()) {
    std::unique_ptr<Workload> w = factory(options.quick);
    if (!options.only.empty() && w->name.find(options.only) == std::string::npos) continue;
    rows.push_back(runWorkload(*w, options, backends, notes, status));
  }
  triad.after = streamTriadBytesPerSecond(triadElements, triadReps, omp_get_max_threads());
  printTable(options, triad, load[0], backends, rows);
  if (!notes.empty()) std::printf("\n%s", notes.c_str());
  return status;
}

}  // namespace
}  // namespace rocuda::bench

int main(int argc, char** argv) {
  rocuda::bench::Options options;
  if (!rocuda::bench::parseArgs(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: %s [--quick] [--reps N] [--budget SECONDS] [--only SUBSTRING]"
                 " [--libcuda PATH]\n",
                 argv[0]);
    return 3;
  }
  return rocuda::bench::runAll(options);
}
