// CUB's by-key scans and reductions (DeviceScan::InclusiveSumByKey, DeviceReduce::ReduceByKey),
// run many times on the same million-element input: their decoupled look-back reads each tile's
// 16-byte descriptor (status and value) with one vector load, which must see both halves of one
// store. On the CPU device, blocks on different workers once read a descriptor half-written in
// about one run in seventy (a wrong carry-in from a tile boundary on). Checked against the host.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "e2e_check.h"

int main() {
  Checker check("scan_by_key");
  const int n = 1200007, reps = 100;
  std::vector<int> keys(n), values(n);
  uint32_t state = 12345;
  int key = 0;
  for (int i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    if (state % 97 == 0) ++key;  // runs of about a hundred
    keys[i] = key;
    values[i] = static_cast<int>(state >> 24) - 128;
  }
  std::vector<int> scanned(n), runKeys, runSums;
  for (int i = 0; i < n; ++i) {
    scanned[i] = values[i] + (i > 0 && keys[i] == keys[i - 1] ? scanned[i - 1] : 0);
    if (i + 1 == n || keys[i + 1] != keys[i]) {
      runKeys.push_back(keys[i]);
      runSums.push_back(scanned[i]);
    }
  }
  int *dKeys = upload(keys), *dValues = upload(values), *dOut, *dUniqueKeys, *dSums, *dRuns;
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  CHECK(cudaMalloc(&dUniqueKeys, n * sizeof(int)));
  CHECK(cudaMalloc(&dSums, n * sizeof(int)));
  CHECK(cudaMalloc(&dRuns, sizeof(int)));
  size_t scanBytes = 0, reduceBytes = 0;
  CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, scanBytes, dKeys, dValues, dOut, n));
  CHECK(cub::DeviceReduce::ReduceByKey(nullptr, reduceBytes, dKeys, dUniqueKeys, dValues, dSums,
                                       dRuns, cuda::std::plus<>{}, n));
  void* temp = nullptr;
  CHECK(cudaMalloc(&temp, std::max(scanBytes, reduceBytes)));
  int wrongScans = 0, wrongReductions = 0;
  for (int rep = 0; rep < reps; ++rep) {
    CHECK(cub::DeviceScan::InclusiveSumByKey(temp, scanBytes, dKeys, dValues, dOut, n));
    if (download(dOut, n) != scanned) ++wrongScans;
    CHECK(cub::DeviceReduce::ReduceByKey(temp, reduceBytes, dKeys, dUniqueKeys, dValues, dSums,
                                         dRuns, cuda::std::plus<>{}, n));
    int runs = download(dRuns, 1)[0];
    if (runs != static_cast<int>(runKeys.size()) || download(dUniqueKeys, runs) != runKeys ||
        download(dSums, runs) != runSums)
      ++wrongReductions;
  }
  check.eq("InclusiveSumByKey runs with a wrong result", 0, 0, wrongScans);
  check.eq("ReduceByKey runs with a wrong result", 0, 0, wrongReductions);
  for (void* p : {static_cast<void*>(dKeys), static_cast<void*>(dValues), static_cast<void*>(dOut),
                  static_cast<void*>(dUniqueKeys), static_cast<void*>(dSums),
                  static_cast<void*>(dRuns), temp})
    CHECK(cudaFree(p));
  std::printf("scan_by_key: %d runs of each on %d elements (%zu keys)\n", reps, n, runKeys.size());
  return check.finish();
}
