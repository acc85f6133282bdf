// Non-inlined device functions, struct parameters, function pointers, recursion.
struct Params {
  int count;
  float scale;
  double offset;
  char tag[3];
};

struct Big {
  float values[32];
};

__device__ __noinline__ float scaleValue(float x, const Params& p) {
  return x * p.scale + p.offset;
}

__device__ __noinline__ Big makeBig(float seed) {
  Big b;
  for (int i = 0; i < 32; ++i) b.values[i] = seed * i;
  return b;
}

__device__ __noinline__ int factorial(int n) { return n <= 1 ? 1 : n * factorial(n - 1); }

typedef float (*UnaryOp)(float);
__device__ float negate(float x) { return -x; }
__device__ float square(float x) { return x * x; }
__device__ UnaryOp ops[2] = {negate, square};

__global__ void useParams(float* out, Params p, Big big) {
  int i = threadIdx.x;
  Big local = makeBig(out[i]);
  out[i] = scaleValue(out[i], p) + big.values[i % 32] + local.values[(i + 1) % 32] +
           factorial(p.count) + ops[i & 1](out[i]);
}
