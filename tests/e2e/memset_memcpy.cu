// Memory operations: cudaMemset (including unaligned offsets and sizes), cudaMemcpy of every
// kind (HtoD, DtoH, DtoD, HtoH, cudaMemcpyDefault in both directions), pitched allocations with
// cudaMallocPitch / cudaMemcpy2D / cudaMemset2D read by a kernel through the pitch, and the
// async variants on the legacy default stream.
#include <algorithm>
#include <cstring>
#include <vector>

#include "e2e_check.h"

__global__ void addPitched(unsigned char* base, size_t pitch, int width, int height, int add) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) {
    int* row = reinterpret_cast<int*>(base + y * pitch);
    row[x] += add;
  }
}

static void linearCopies(Checker& check) {
  const int n = 1 << 18;
  std::vector<unsigned char> host(n), back(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 131 + 7);
  unsigned char *d1, *d2;
  CHECK(cudaMalloc(&d1, n));
  CHECK(cudaMalloc(&d2, n));

  // Memset whole, then an unaligned middle range.
  CHECK(cudaMemset(d1, 0x3C, n));
  CHECK(cudaMemset(d1 + 13, 0xC3, 1001));
  CHECK(cudaMemcpy(back.data(), d1, n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    check.eq("memset", i, static_cast<unsigned char>(i >= 13 && i < 1014 ? 0xC3 : 0x3C), back[i]);

  // HtoD, DtoD (unaligned source and destination offsets), DtoH.
  CHECK(cudaMemcpy(d1, host.data(), n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d2, 0, n));
  CHECK(cudaMemcpy(d2 + 3, d1 + 5, n - 100, cudaMemcpyDeviceToDevice));
  CHECK(cudaMemcpy(back.data(), d2, n, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    unsigned char expected = (i >= 3 && i < 3 + n - 100) ? host[i + 2] : 0;
    check.eq("DtoD", i, expected, back[i]);
  }

  // cudaMemcpyDefault infers the direction from the pointers (unified addressing).
  std::vector<unsigned char> other(n);
  for (int i = 0; i < n; ++i) other[i] = static_cast<unsigned char>(255 - i % 251);
  CHECK(cudaMemcpy(d2, other.data(), n, cudaMemcpyDefault));
  CHECK(cudaMemcpy(d1, d2, n, cudaMemcpyDefault));
  std::fill(back.begin(), back.end(), 0);
  CHECK(cudaMemcpy(back.data(), d1, n, cudaMemcpyDefault));
  for (int i = 0; i < n; ++i) check.eq("cudaMemcpyDefault", i, other[i], back[i]);

  // HtoH through the runtime.
  std::vector<unsigned char> hostCopy(n, 0);
  CHECK(cudaMemcpy(hostCopy.data(), host.data(), n, cudaMemcpyHostToHost));
  check.expect(std::memcmp(hostCopy.data(), host.data(), n) == 0, "HtoH copy");

  // Async variants on the default stream, then synchronise that stream.
  CHECK(cudaMemsetAsync(d1, 0x11, n, 0));
  CHECK(cudaMemcpyAsync(d1 + 64, host.data() + 64, 4096, cudaMemcpyHostToDevice, 0));
  CHECK(cudaMemcpyAsync(d2, d1, n, cudaMemcpyDeviceToDevice, 0));
  CHECK(cudaMemcpyAsync(back.data(), d2, n, cudaMemcpyDeviceToHost, 0));
  CHECK(cudaStreamSynchronize(0));
  for (int i = 0; i < n; ++i) {
    unsigned char expected = (i >= 64 && i < 64 + 4096) ? host[i] : 0x11;
    check.eq("async default stream", i, expected, back[i]);
  }

  // Zero-size operations are valid no-ops.
  CHECK(cudaMemcpy(d1, host.data(), 0, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d1, 0, 0));
  CHECK(cudaFree(d1));
  CHECK(cudaFree(d2));
}

static void pitchedCopies(Checker& check) {
  const int width = 333, height = 97;  // ints per row; the row bytes are not a pitch multiple
  const size_t rowBytes = width * sizeof(int);
  unsigned char* dImg;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&dImg), &pitch, rowBytes, height));
  check.expect(pitch >= rowBytes, "pitch >= requested row bytes");
  // Rows must at least start on a 32-byte boundary (NVIDIA uses 512; any such choice is fine).
  check.expect(pitch % 32 == 0, "pitch is a multiple of 32 bytes");
  std::printf("memset_memcpy: cudaMallocPitch(%zu bytes x %d rows) -> pitch %zu\n", rowBytes,
              height, pitch);

  std::vector<int> host(width * height);
  for (int i = 0; i < width * height; ++i) host[i] = i * 3 - 5000;
  CHECK(cudaMemset2D(dImg, pitch, 0x7F, pitch, height));  // also fills the padding
  CHECK(cudaMemcpy2D(dImg, pitch, host.data(), rowBytes, rowBytes, height, cudaMemcpyHostToDevice));
  dim3 block(32, 8);
  dim3 grid((width + 31) / 32, (height + 7) / 8);
  addPitched<<<grid, block>>>(dImg, pitch, width, height, 1000);
  CHECK_LAUNCH();

  // Full readback including padding: data rows changed, padding still 0x7F.
  std::vector<unsigned char> raw(pitch * height);
  CHECK(cudaMemcpy(raw.data(), dImg, raw.size(), cudaMemcpyDeviceToHost));
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      int v;
      std::memcpy(&v, &raw[y * pitch + x * sizeof(int)], sizeof v);
      check.eq("pitched kernel", y * width + x, host[y * width + x] + 1000, v);
    }
    for (size_t b = rowBytes; b < pitch; ++b)
      check.eq("pitch padding", static_cast<long long>(y * pitch + b),
               static_cast<unsigned char>(0x7F), raw[y * pitch + b]);
  }

  // DtoD 2D copy of a sub-rectangle into a second pitched image, then DtoH 2D into a dense array.
  unsigned char* dSub;
  size_t subPitch = 0;
  const int subW = 100, subH = 40, x0 = 17, y0 = 9;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&dSub), &subPitch, subW * sizeof(int), subH));
  CHECK(cudaMemcpy2D(dSub, subPitch, dImg + y0 * pitch + x0 * sizeof(int), pitch,
                     subW * sizeof(int), subH, cudaMemcpyDeviceToDevice));
  std::vector<int> sub(subW * subH, 0);
  CHECK(cudaMemcpy2DAsync(sub.data(), subW * sizeof(int), dSub, subPitch, subW * sizeof(int), subH,
                          cudaMemcpyDeviceToHost, 0));
  CHECK(cudaDeviceSynchronize());
  for (int y = 0; y < subH; ++y)
    for (int x = 0; x < subW; ++x)
      check.eq("2D sub-rectangle", y * subW + x, host[(y + y0) * width + x + x0] + 1000,
               sub[y * subW + x]);
  CHECK(cudaFree(dImg));
  CHECK(cudaFree(dSub));
}

int main() {
  Checker check("memset_memcpy");
  linearCopies(check);
  pitchedCopies(check);
  return check.finish();
}
