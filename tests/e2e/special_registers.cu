// Special registers whose values depend on the launch: the shared-memory sizes
// (%dynamic_smem_size, %total_smem_size with static and dynamic shared memory, %aggr_smem_size
// with the driver's reserved region too), %is_explicit_cluster (a cluster named at launch or by
// __cluster_dims__), and the halves of the clocks (%clock_hi, %globaltimer_lo/_hi) next to the
// registers they come from; checked against what the host launched and the device reports.
#include <vector>

#include "e2e_check.h"

__global__ void sharedSizes(unsigned* out) {
  __shared__ int s[100];
  extern __shared__ int dynamicShared[];
  s[threadIdx.x] = dynamicShared[threadIdx.x] = static_cast<int>(threadIdx.x);
  unsigned dynamicSize, total, aggregate;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamicSize));
  asm volatile("mov.u32 %0, %%total_smem_size;" : "=r"(total));
  asm volatile("mov.u32 %0, %%aggr_smem_size;" : "=r"(aggregate));
  if (threadIdx.x != 0) return;
  out[0] = dynamicSize;
  out[1] = total;
  out[2] = aggregate;
  out[3] = static_cast<unsigned>(s[0] + dynamicShared[0]);
}

__global__ void clockHalves(unsigned* out) {
  unsigned timerHi, clockHi;
  unsigned long long timer, clock;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(timer));
  asm volatile("mov.u32 %0, %%globaltimer_hi;" : "=r"(timerHi));
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(clock));
  asm volatile("mov.u32 %0, %%clock_hi;" : "=r"(clockHi));
  unsigned timerLo;
  unsigned long long later;
  asm volatile("mov.u32 %0, %%globaltimer_lo;" : "=r"(timerLo));
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(later));
  out[0] = timerHi - static_cast<unsigned>(timer >> 32);  // 0, or 1 across a carry
  out[1] = clockHi - static_cast<unsigned>(clock >> 32);
  // The low half read between two whole reads lies between their low halves (no wrap in 1 s).
  out[2] = static_cast<unsigned>(later - timer) < 1000000000u &&
                   timerLo - static_cast<unsigned>(timer) <= static_cast<unsigned>(later - timer)
               ? 1u
               : 0u;
}

__device__ void recordExplicitCluster(unsigned* out) {
  unsigned explicitCluster;
  asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }"
               : "=r"(explicitCluster));
  if (threadIdx.x == 0) out[0] = explicitCluster;
}
__global__ void __cluster_dims__(1, 1, 1) declaredCluster(unsigned* out) {
  recordExplicitCluster(out);
}
__global__ void anyCluster(unsigned* out) { recordExplicitCluster(out); }

int main() {
  Checker check("special_registers");
  unsigned* out = nullptr;
  CHECK(cudaMalloc(&out, 8 * sizeof(unsigned)));

  int reserved = 0;
  CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  sharedSizes<<<1, 64, 256>>>(out);
  CHECK_LAUNCH();
  std::vector<unsigned> sizes = download(out, 3);
  check.eq("%dynamic_smem_size", 0, 256u, sizes[0]);
  // The dynamic part may start at an aligned offset after the static 400 bytes.
  check.expect(sizes[1] >= 400u + 256u && sizes[1] <= 400u + 256u + 16u,
               "%total_smem_size: static and dynamic shared memory");
  check.eq("%aggr_smem_size", 0, sizes[1] + static_cast<unsigned>(reserved), sizes[2]);

  clockHalves<<<1, 1>>>(out);
  CHECK_LAUNCH();
  std::vector<unsigned> clocks = download(out, 3);
  check.expect(clocks[0] <= 1u, "%globaltimer_hi is the high half of %globaltimer");
  check.expect(clocks[1] <= 1u, "%clock_hi is the high half of %clock64");
  check.eq("%globaltimer_lo between two reads of %globaltimer", 0, 1u, clocks[2]);

  declaredCluster<<<1, 32>>>(out);
  CHECK_LAUNCH();
  anyCluster<<<1, 32>>>(out + 1);
  CHECK_LAUNCH();
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  cudaLaunchAttribute attribute = {};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&config, anyCluster, out + 2));
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned> kinds = download(out, 3);
  check.eq("%is_explicit_cluster, __cluster_dims__", 0, 1u, kinds[0]);
  check.eq("%is_explicit_cluster, plain launch", 1, 0u, kinds[1]);
  check.eq("%is_explicit_cluster, cluster attribute", 2, 1u, kinds[2]);

  CHECK(cudaFree(out));
  std::printf("special_registers: shared-memory sizes, explicit clusters, clock halves\n");
  return check.finish();
}
