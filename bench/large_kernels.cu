// Benchmark input: instantiates many CUB and Thrust algorithms (radix sort, merge sort, scan,
// reduce, histogram, select, partition, unique) over several types so that nvcc emits a large
// PTX module (several MB for sm_90), like a real library-heavy application. Never run.
#include <cstdint>

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/functional>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/unique.h>

namespace {

struct IsPositive {
  template <class T>
  __host__ __device__ bool operator()(const T& v) const { return v > T(0); }
};

// CUB device-wide algorithms for one key type (and a value type for pairs).
template <class K, class V>
void cubAlgorithms(int n) {
  void* temp = nullptr;
  size_t bytes = 0;
  K* keys = nullptr;
  K* keysOut = nullptr;
  V* values = nullptr;
  V* valuesOut = nullptr;
  int* count = nullptr;
  cub::DeviceRadixSort::SortKeys(temp, bytes, keys, keysOut, n);
  cub::DeviceRadixSort::SortKeysDescending(temp, bytes, keys, keysOut, n);
  cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keysOut, values, valuesOut, n);
  cub::DeviceScan::InclusiveSum(temp, bytes, keys, keysOut, n);
  cub::DeviceScan::ExclusiveSum(temp, bytes, keys, keysOut, n);
  cub::DeviceScan::InclusiveScan(temp, bytes, keys, keysOut, cuda::maximum<>(), n);
  cub::DeviceReduce::Sum(temp, bytes, keys, keysOut, n);
  cub::DeviceReduce::Max(temp, bytes, keys, keysOut, n);
  cub::DeviceReduce::Min(temp, bytes, keys, keysOut, n);
  cub::DeviceSelect::If(temp, bytes, keys, keysOut, count, n, IsPositive());
  cub::DeviceSelect::Unique(temp, bytes, keys, keysOut, count, n);
  cub::DevicePartition::If(temp, bytes, keys, keysOut, count, n, IsPositive());
  cub::DeviceRunLengthEncode::Encode(temp, bytes, keys, keysOut, values, count, n);
  cub::DeviceSegmentedReduce::Sum(temp, bytes, keys, keysOut, 4, count, count + 1);
}

template <class T>
void histogram(int n) {
  void* temp = nullptr;
  size_t bytes = 0;
  T* samples = nullptr;
  int* bins = nullptr;
  cub::DeviceHistogram::HistogramEven(temp, bytes, samples, bins, 257, T(0), T(256), n);
}

template <class T>
T thrustAlgorithms(int n) {
  thrust::device_vector<T> v(n);
  thrust::device_vector<T> w(n);
  thrust::sort(v.begin(), v.end());
  thrust::sort(v.begin(), v.end(), thrust::greater<T>());
  thrust::stable_sort_by_key(v.begin(), v.end(), w.begin());
  thrust::inclusive_scan(v.begin(), v.end(), w.begin());
  thrust::exclusive_scan(v.begin(), v.end(), w.begin());
  auto end = thrust::unique(v.begin(), v.end());
  return thrust::reduce(v.begin(), end) + thrust::reduce(w.begin(), w.end(), T(0),
                                                         thrust::maximum<T>());
}

}  // namespace

int runAll(int n) {
  cubAlgorithms<int, int>(n);
  cubAlgorithms<unsigned, float>(n);
  cubAlgorithms<int64_t, double>(n);
  cubAlgorithms<float, int>(n);
  cubAlgorithms<double, int64_t>(n);
  histogram<int>(n);
  histogram<float>(n);
  histogram<unsigned char>(n);
  return static_cast<int>(thrustAlgorithms<int>(n) + thrustAlgorithms<float>(n) +
                          thrustAlgorithms<double>(n) + thrustAlgorithms<int64_t>(n));
}
