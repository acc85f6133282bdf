// CUDA IPC between two processes: the program forks before touching CUDA; the parent allocates
// and fills device memory, records an interprocess event and sends both handles over a pipe; the
// child opens them, waits on the event in its stream, transforms the data with a kernel and
// records the event; the parent synchronizes on that record and checks the result against a
// host reference.
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "e2e_check.h"

__global__ void fill(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = (i * 37) % 1001 - 500;
}

__global__ void transform(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * 3 + 7;
}

constexpr int kN = 100003;
constexpr int kBlock = 256;
constexpr int kGrid = (kN + kBlock - 1) / kBlock;

bool readAll(int fd, void* out, size_t bytes) {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    ssize_t got = read(fd, p, bytes);
    if (got <= 0) return false;
    p += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

int child(int fromParent, int toParent) {
  cudaIpcMemHandle_t memory;
  cudaIpcEventHandle_t event;
  if (!readAll(fromParent, &memory, sizeof memory) || !readAll(fromParent, &event, sizeof event))
    return 2;
  int* data = nullptr;
  CHECK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&data), memory,
                             cudaIpcMemLazyEnablePeerAccess));
  cudaEvent_t shared;
  CHECK(cudaIpcOpenEventHandle(&shared, event));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK(cudaStreamWaitEvent(stream, shared, 0));  // the parent's fill
  transform<<<kGrid, kBlock, 0, stream>>>(data, kN);
  CHECK_LAUNCH();
  CHECK(cudaEventRecord(shared, stream));
  char done = 'r';
  if (write(toParent, &done, 1) != 1) return 2;
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaIpcCloseMemHandle(data));
  CHECK(cudaEventDestroy(shared));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}

int main() {
  int toChild[2], toParent[2];
  if (pipe(toChild) != 0 || pipe(toParent) != 0) return 2;
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    close(toChild[1]);
    close(toParent[0]);
    return child(toChild[0], toParent[1]);
  }
  close(toChild[0]);
  close(toParent[1]);

  int* data = nullptr;
  CHECK(cudaMalloc(&data, kN * sizeof(int)));
  cudaEvent_t shared;
  CHECK(cudaEventCreateWithFlags(&shared, cudaEventInterprocess | cudaEventDisableTiming));
  fill<<<kGrid, kBlock>>>(data, kN);
  CHECK_LAUNCH();
  CHECK(cudaEventRecord(shared, 0));
  cudaIpcMemHandle_t memory;
  cudaIpcEventHandle_t event;
  CHECK(cudaIpcGetMemHandle(&memory, data));
  CHECK(cudaIpcGetEventHandle(&event, shared));
  if (write(toChild[1], &memory, sizeof memory) != sizeof memory ||
      write(toChild[1], &event, sizeof event) != sizeof event)
    return 2;

  char done = 0;
  if (!readAll(toParent[0], &done, 1) || done != 'r') {
    std::fprintf(stderr, "the child process failed before recording the event\n");
    return 2;
  }
  CHECK(cudaEventSynchronize(shared));  // the child's transform
  std::vector<int> result(kN);
  CHECK(cudaMemcpy(result.data(), data, kN * sizeof(int), cudaMemcpyDeviceToHost));
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "child process failed (status %d)\n", status);
    return 2;
  }

  Checker check("ipc_processes");
  for (int i = 0; i < kN; ++i) check.eq("data", i, ((i * 37) % 1001 - 500) * 3 + 7, result[i]);
  std::printf("ipc_processes: %d ints shared with a second process\n", kN);
  CHECK(cudaEventDestroy(shared));
  CHECK(cudaFree(data));
  return check.finish();
}
