// nvJitLink test input (-dc): a kernel calling a device function of another translation unit.
extern "C" __device__ int twice(int x);
extern "C" __global__ void doubleAll(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = twice(data[i]) + 1;
}
