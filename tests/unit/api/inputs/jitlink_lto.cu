// nvJitLink test input (-dlto -ltoir): LTO-IR that only NVIDIA's nvJitLink can turn into PTX.
extern "C" __global__ void scaleAdd(float* data, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * scale + 1.0f;
}
