// Thrust (and the CUB kernels under it) as applications use it: sort, stable_sort_by_key, reduce,
// transform_reduce, inclusive/exclusive scan, count_if and unique on 200,003 pseudo-random ints,
// each checked against the same algorithm from the C++ standard library.
#include <thrust/count.h>
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>
#include <thrust/unique.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "e2e_check.h"

struct IsOdd {
  __host__ __device__ bool operator()(int x) const { return (x & 1) != 0; }
};
struct Square {
  __host__ __device__ long long operator()(int x) const { return 1LL * x * x; }
};

int main() {
  Checker check("thrust_algorithms");
  const int n = 200003;
  std::vector<int> h(n);
  unsigned seed = 12345;
  for (auto& x : h) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<int>(seed >> 8) % 100000 - 50000;
  }
  thrust::device_vector<int> d(h.begin(), h.end());

  thrust::device_vector<int> sorted = d;
  thrust::sort(sorted.begin(), sorted.end());
  std::vector<int> ref = h;
  std::sort(ref.begin(), ref.end());
  thrust::host_vector<int> hostSorted = sorted;
  for (int i = 0; i < n; ++i) check.eq("sort", i, ref[i], static_cast<int>(hostSorted[i]));

  check.eq("reduce", 0, std::accumulate(h.begin(), h.end(), 0LL),
           thrust::reduce(d.begin(), d.end(), 0LL));
  long long squares = 0;
  for (int x : h) squares += 1LL * x * x;
  check.eq("transform_reduce", 0, squares,
           thrust::transform_reduce(d.begin(), d.end(), Square(), 0LL, thrust::plus<long long>()));

  thrust::device_vector<int> scanned(n);
  thrust::inclusive_scan(d.begin(), d.end(), scanned.begin());
  thrust::host_vector<int> hostScan = scanned;
  int running = 0;
  for (int i = 0; i < n; ++i) {
    running += h[i];
    check.eq("inclusive_scan", i, running, static_cast<int>(hostScan[i]));
  }
  thrust::exclusive_scan(d.begin(), d.end(), scanned.begin());
  hostScan = scanned;
  running = 0;
  for (int i = 0; i < n; ++i) {
    check.eq("exclusive_scan", i, running, static_cast<int>(hostScan[i]));
    running += h[i];
  }

  check.eq("count_if", 0,
           static_cast<long long>(std::count_if(h.begin(), h.end(), [](int x) { return x & 1; })),
           static_cast<long long>(thrust::count_if(d.begin(), d.end(), IsOdd())));
  long long unique = thrust::unique(sorted.begin(), sorted.end()) - sorted.begin();
  check.eq("unique", 0, static_cast<long long>(std::unique(ref.begin(), ref.end()) - ref.begin()),
           unique);

  thrust::device_vector<int> keys = d, values(n);
  thrust::sequence(values.begin(), values.end());
  thrust::stable_sort_by_key(keys.begin(), keys.end(), values.begin());
  thrust::host_vector<int> hostKeys = keys, hostValues = values;
  for (int i = 0; i < n; ++i) {
    check.eq("sort_by_key value", i, h[hostValues[i]], static_cast<int>(hostKeys[i]));
    if (i > 0) {
      bool ordered = hostKeys[i - 1] < hostKeys[i] ||
                     (hostKeys[i - 1] == hostKeys[i] && hostValues[i - 1] < hostValues[i]);
      check.expect(ordered, "stable_sort_by_key keeps equal keys in input order");
    }
  }
  std::printf("thrust_algorithms: %d elements\n", n);
  return check.finish();
}
