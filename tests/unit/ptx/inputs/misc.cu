// Inline PTX, texture objects, clocks, special registers, alloca, launch bounds and local arrays.
__device__ unsigned laneId() {
  unsigned id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

__global__ void __launch_bounds__(128) specials(unsigned* out, cudaTextureObject_t tex, int n) {
  unsigned smid;
  asm("mov.u32 %0, %%smid;" : "=r"(smid));
  long long start = clock64();
  float local[40];
  for (int i = 0; i < 40; ++i) local[i] = tex1Dfetch<float>(tex, i + n);
  out[0] = laneId() + smid + (unsigned)(clock64() - start) + (unsigned)local[n % 40] + gridDim.y +
           blockIdx.z + threadIdx.y;
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  out[1] = (unsigned)t;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %0, 0; @p add.u32 %0, %0, 1; }" : "+r"(out[2]));
  if (n < 0) __trap();
}

__global__ void texture2d(float4* out, cudaTextureObject_t tex) {
  out[threadIdx.x] = tex2D<float4>(tex, threadIdx.x * 0.5f, 0.25f);
}

__global__ void vectorLoads(const float4* in, float4* out, const double2* d, double2* e) {
  float4 v = __ldg(in + threadIdx.x);
  v.x += 1.0f;
  out[threadIdx.x] = v;
  e[threadIdx.x] = d[threadIdx.x];
}

// A pointer inside a packed struct: nvcc writes its initializer one byte at a time with the mask
// operator (`0xFF00(generic(packedTarget)+4)`, PTX 7.1).
__device__ int packedTarget[2];
struct __attribute__((packed)) PackedPointer {
  char tag;
  int* pointer;
};
__device__ PackedPointer packedPointer = {'p', packedTarget + 1};
__global__ void readPackedPointer(int* out) { *out = packedPointer.tag + *packedPointer.pointer; }
