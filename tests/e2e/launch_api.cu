// Launching without <<<>>>: cudaLaunchKernel with an argument array and cudaLaunchKernelEx with
// a launch configuration, block sizes chosen by the occupancy API, and kernel attributes from
// cudaFuncGetAttributes (the static shared memory size is known exactly: 1024 ints).
#include <vector>

#include "e2e_check.h"

constexpr int kMaxBlock = 1024;

// Reverses each block-sized chunk through shared memory; n is a multiple of blockDim.x.
__global__ void reverseChunks(const int* in, int* out, int n, int add) {
  __shared__ int buf[kMaxBlock];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  if (i < n) out[i] = buf[blockDim.x - 1 - threadIdx.x] + add;
}

static void checkChunks(Checker& check, const char* what, const std::vector<int>& in,
                        const std::vector<int>& out, int block, int add) {
  for (size_t i = 0; i < in.size(); ++i) {
    size_t base = i / block * block;
    size_t mirror = base + (block - 1 - (i - base));
    check.eq(what, static_cast<long long>(i), in[mirror] + add, out[i]);
  }
}

int main() {
  Checker check("launch_api");

  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, reverseChunks));
  std::printf(
      "launch_api: reverseChunks uses %zu bytes static shared, %d registers, max %d "
      "threads per block\n",
      attr.sharedSizeBytes, attr.numRegs, attr.maxThreadsPerBlock);
  check.eq("sharedSizeBytes", 0, kMaxBlock * sizeof(int), attr.sharedSizeBytes);
  check.expect(attr.maxThreadsPerBlock >= 256 && attr.maxThreadsPerBlock <= 1024,
               "maxThreadsPerBlock within [256, 1024]");
  check.expect(attr.numRegs >= 0, "numRegs >= 0");
  CHECK(cudaFuncSetCacheConfig(reverseChunks, cudaFuncCachePreferShared));

  int blocksPerSm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocksPerSm, reverseChunks, 256, 0));
  check.expect(blocksPerSm >= 1, "at least one 256-thread block fits on a multiprocessor");
  int minGrid = 0, block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&minGrid, &block, reverseChunks, 0, 0));
  std::printf("launch_api: occupancy suggests %d-thread blocks, grid >= %d, %d blocks/SM at 256\n",
              block, minGrid, blocksPerSm);
  check.expect(block >= 1 && block <= attr.maxThreadsPerBlock,
               "suggested block size within the kernel's limit");
  check.expect(minGrid >= 1, "suggested minimum grid >= 1");
  if (block < 1 || block > kMaxBlock) block = 256;  // keep going with a valid size

  const int n = block * 128;  // a multiple of both launch shapes below
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i * 5 - 777;
  int *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));

  // cudaLaunchKernel: arguments as an array of pointers to each value.
  const int* inArg = dIn;
  int* outArg = dOut;
  int nArg = n, addArg = 3;
  void* args[] = {&inArg, &outArg, &nArg, &addArg};
  CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(reverseChunks), dim3(n / block), dim3(block),
                         args, 0, nullptr));
  std::vector<int> out(n);
  CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
  checkChunks(check, "cudaLaunchKernel", in, out, block, 3);

  // cudaLaunchKernelEx: a launch configuration on a created stream, typed arguments.
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(n / 128);
  config.blockDim = dim3(128);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  CHECK(cudaLaunchKernelEx(&config, reverseChunks, static_cast<const int*>(dIn), dOut, n, -9));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
  checkChunks(check, "cudaLaunchKernelEx", in, out, 128, -9);

  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
  return check.finish();
}
