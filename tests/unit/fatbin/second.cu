// A second translation unit with a host main, for a two-TU executable.
__global__ void second(int* p) { p[threadIdx.x] = 2; }
int main() { return 0; }
