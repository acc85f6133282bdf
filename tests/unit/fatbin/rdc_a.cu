// -rdc=true: a kernel calling a device function defined in another translation unit.
extern __device__ int helper(int);
__global__ void useHelper(int* p) { p[threadIdx.x] = helper(p[threadIdx.x]); }
