// Device-side kernel launches (needs -rdc=true): parameter buffers and device runtime calls.
__global__ void child(int* data, int value) { data[threadIdx.x] = value; }

__global__ void parent(int* data) {
  if (threadIdx.x == 0) {
    child<<<1, 32>>>(data, 7);
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    child<<<1, 32, 0, stream>>>(data + 32, 8);
    cudaStreamDestroy(stream);
  }
}
