// Warp shuffles, votes, match, reduce and cooperative groups.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__global__ void warpOps(int* out, const float* in) {
  int lane = threadIdx.x & 31;
  float v = in[threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
  v += __shfl_xor_sync(0xffffffff, v, 1) + __shfl_sync(0xffffffff, v, 0) +
       __shfl_up_sync(0xffffffff, v, 1);
  unsigned ballot = __ballot_sync(0xffffffff, v > 0);
  int all = __all_sync(0xffffffff, v > 0);
  int any = __any_sync(0xffffffff, v > 0);
  unsigned active = __activemask();
  unsigned match = __match_any_sync(0xffffffff, lane / 4);
  __syncwarp();
  out[threadIdx.x] = ballot + all + any + active + match + (int)v + warpSize;
}

__global__ void groups(const int* in, int* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int v = in[block.thread_rank()];
  int sum = cg::reduce(tile, v, cg::plus<int>());
  block.sync();
  if (tile.thread_rank() == 0) atomicAdd(out, sum);
  cg::coalesced_group active = cg::coalesced_threads();
  if (v & 1) out[1 + active.thread_rank()] = active.size();
}

__global__ void gridSync(int* data) {
  cg::grid_group grid = cg::this_grid();
  data[grid.thread_rank()] += 1;
  grid.sync();
  data[0] = data[grid.size() - 1];
}
