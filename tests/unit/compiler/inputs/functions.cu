// Device function calls (incl. recursion and function pointers), local arrays, initialised
// __constant__ and __device__ variables.
__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__device__ __noinline__ float scale(float x, float s) { return x * s; }

extern "C" __global__ void callFib(int* out) { out[threadIdx.x] = fib(threadIdx.x); }

__constant__ float coeffs[4] = {1.5f, 2.5f, -3.0f, 4.0f};
__device__ int table[5] = {10, 20, 30, 40, 50};
__device__ int* tablePtr = table + 1;
__device__ double scalarD = 0.125;

extern "C" __global__ void useGlobals(float* out, int* out2) {
  int i = threadIdx.x;
  out[i] = scale(coeffs[i % 4], 2.0f) + (float)scalarD;
  out2[i] = tablePtr[i % 4] + table[(i + 1) % 5];
}

extern "C" __global__ void localArray(const int* in, int* out) {
  int buf[32];
  for (int k = 0; k < 32; k++) buf[k] = in[k] * (int)(threadIdx.x + 1);
  int idx = in[threadIdx.x] & 31;
  out[threadIdx.x] = buf[idx] + buf[(idx * 7) & 31];
}

typedef int (*BinaryOp)(int, int);
__device__ int addOp(int a, int b) { return a + b; }
__device__ int mulOp(int a, int b) { return a * b; }
__device__ BinaryOp ops[2] = {addOp, mulOp};

extern "C" __global__ void indirect(int* out, int sel) {
  int t = threadIdx.x;
  out[t] = ops[(t + sel) & 1](t, 3);
}

struct V3 {
  float x, y, z;
};
struct Pair {
  double a;
  long long b;
};
__device__ __noinline__ V3 cross(V3 a, V3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
__device__ __noinline__ Pair combine(Pair p, char c, short s) { return {p.a * c, p.b + s}; }

extern "C" __global__ void structCalls(const V3* a, const V3* b, V3* out, Pair* pairs) {
  int i = threadIdx.x;
  out[i] = cross(a[i], b[i]);
  pairs[i] = combine(pairs[i], (char)(i + 1), (short)(-i));
}
