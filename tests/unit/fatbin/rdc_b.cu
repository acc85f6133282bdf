__device__ int helper(int x) { return x * 2; }
__global__ void other(int* p) { p[0] = helper(3); }
int main() { return 0; }
