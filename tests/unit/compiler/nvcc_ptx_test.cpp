// Real nvcc output (generated at build time from inputs/*.cu for sm_75 and sm_90) compiled and
// run on the test runtime, checked against host references.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "test_runtime.h"

#ifdef ROCUDA_HAVE_NVCC

namespace rocuda::compiler::test {
namespace {

class NvccPtx : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<Loaded> load(const std::string& source) {
    std::string path =
        std::string(ROCUDA_COMPILER_PTX_DIR) + "/" + source + "_" + GetParam() + ".ptx";
    std::string text = readFile(path);
    EXPECT_FALSE(text.empty()) << path;
    return compileAndLoad(text, source + "_" + GetParam());
  }
};

TEST_P(NvccPtx, VectorAddAndSaxpy) {
  auto m = load("basic");
  ASSERT_TRUE(m);
  const int n = 1000;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = i * 0.5f;
    b[i] = 3.0f - i;
  }
  const float *pa = a.data(), *pb = b.data();
  float* pc = c.data();
  ASSERT_TRUE(launch(*m, "vecAdd", {8}, {128}, {&pa, &pb, &pc, &n}));
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
  EXPECT_FALSE(m->object.info.findKernel("vecAdd")->usesBarriers);
  EXPECT_EQ(m->object.info.findKernel("vecAdd")->paramBufferSize, 32u);

  std::vector<float> y(b);
  float alpha = 2.5f;
  float* py = y.data();
  ASSERT_TRUE(launch(*m, "saxpy", {3}, {64}, {&n, &alpha, &pa, &py}));
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], std::fma(alpha, a[i], b[i])) << i;
}

TEST_P(NvccPtx, IntegerIntrinsics) {
  auto m = load("basic");
  ASSERT_TRUE(m);
  std::vector<unsigned> a = {0, 1, 0xffffffffu, 0x80000000u, 123456789u, 0xdeadbeefu, 7, 100};
  std::vector<unsigned> b = {5, 0, 0xffffffffu, 0xffffffffu, 987654321u, 0x1234u, 0, 7};
  std::vector<unsigned long long> out(8 * a.size());
  const unsigned *pa = a.data(), *pb = b.data();
  unsigned long long* po = out.data();
  ASSERT_TRUE(launch(*m, "intOps", {}, {static_cast<uint32_t>(a.size())}, {&pa, &pb, &po}));
  for (size_t i = 0; i < a.size(); ++i) {
    unsigned x = a[i], y = b[i];
    const unsigned long long* o = &out[8 * i];
    EXPECT_EQ(o[0], (static_cast<uint64_t>(x) * y) >> 32);
    EXPECT_EQ(o[1], static_cast<unsigned>(
                        (static_cast<int64_t>(static_cast<int>(x)) * static_cast<int>(y)) >> 32));
    EXPECT_EQ(o[2], static_cast<unsigned long long>(x) * y + 7);
    EXPECT_EQ(o[3], static_cast<unsigned long long>(static_cast<long long>(static_cast<int>(x)) *
                                                    static_cast<int>(y)));
    EXPECT_EQ(o[4], y ? (x / y) * 1000ull + x % y : 0ull);
    EXPECT_EQ(o[5], static_cast<unsigned long long>(__builtin_popcount(x) +
                                                    100 * (y ? __builtin_clz(y) : 32)));
    unsigned rev = 0;
    for (int k = 0; k < 32; ++k) rev |= ((x >> k) & 1) << (31 - k);
    EXPECT_EQ(o[6], rev);
    uint64_t bytes = x | (static_cast<uint64_t>(y) << 32);
    unsigned perm = 0;
    unsigned sel = 0x5140;
    for (int k = 0; k < 4; ++k) perm |= ((bytes >> (((sel >> (4 * k)) & 7) * 8)) & 0xff) << (8 * k);
    long long q = static_cast<long long>(static_cast<int>(x)) / static_cast<int>(y | 1);
    EXPECT_EQ(o[7], static_cast<unsigned long long>(static_cast<long long>(perm) ^ q)) << i;
  }
}

TEST_P(NvccPtx, StructParameterLayout) {
  auto m = load("basic");
  ASSERT_TRUE(m);
  const KernelInfo* k = m->object.info.findKernel("structParam");
  ASSERT_TRUE(k);
  ASSERT_EQ(k->params.size(), 4u);
  EXPECT_EQ(k->params[0].offset, 0u);
  EXPECT_EQ(k->params[0].size, 24u);
  EXPECT_EQ(k->params[0].alignment, 8u);
  EXPECT_EQ(k->params[1].offset, 24u);
  EXPECT_EQ(k->params[2].offset, 26u);
  EXPECT_EQ(k->params[3].offset, 32u);
  EXPECT_EQ(k->paramBufferSize, 40u);
  struct Mixed {
    char c;
    double d;
    int i;
  } mixed{3, 0.25, -40};
  char c2 = 5;
  short s = 1000;
  double result = 0;
  double* pr = &result;
  ASSERT_TRUE(launch(*m, "structParam", {}, {}, {&mixed, &c2, &s, &pr}));
  EXPECT_EQ(result, 3 + 0.25 - 40 + 5 + 1000);
}

TEST_P(NvccPtx, PrintfCallsVprintf) {
  auto m = load("basic");
  ASSERT_TRUE(m);
  int before = vprintfCalls();
  std::vector<int> flags(4, 0);
  int* pf = flags.data();
  ASSERT_TRUE(launch(*m, "hello", {}, {4}, {&pf}));
  EXPECT_EQ(vprintfCalls() - before, 4);
  EXPECT_EQ(flags, std::vector<int>(4, 1));
}

int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

TEST_P(NvccPtx, RecursionGlobalsLocalArraysIndirectCalls) {
  auto m = load("functions");
  ASSERT_TRUE(m);
  std::vector<int> fibs(20, -1);
  int* pf = fibs.data();
  ASSERT_TRUE(launch(*m, "callFib", {}, {20}, {&pf}));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(fibs[i], fib(i)) << i;

  // Initialised globals are visible to the host through lookup.
  auto* coeffs = static_cast<float*>(m->code->lookup("coeffs"));
  auto* table = static_cast<int*>(m->code->lookup("table"));
  ASSERT_TRUE(coeffs && table);
  EXPECT_EQ(coeffs[2], -3.0f);
  EXPECT_EQ(table[4], 50);
  auto* tablePtr = static_cast<int**>(m->code->lookup("tablePtr"));
  ASSERT_TRUE(tablePtr);
  EXPECT_EQ(*tablePtr, table + 1);
  const GlobalInfo* g = m->object.info.findGlobal("coeffs");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->size, 16u);
  EXPECT_EQ(g->space, ptx::StateSpace::Const);
  coeffs[3] = 10.0f;  // the host may rewrite __constant__ data between launches

  std::vector<float> out(8);
  std::vector<int> out2(8);
  float* po = out.data();
  int* po2 = out2.data();
  ASSERT_TRUE(launch(*m, "useGlobals", {}, {8}, {&po, &po2}));
  const float c[4] = {1.5f, 2.5f, -3.0f, 10.0f};
  const int t[5] = {10, 20, 30, 40, 50};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(out[i], c[i % 4] * 2.0f + 0.125f) << i;
    EXPECT_EQ(out2[i], t[1 + i % 4] + t[(i + 1) % 5]) << i;
  }

  std::vector<int> in(32), res(32);
  for (int i = 0; i < 32; ++i) in[i] = (i * 13 + 5) % 97;
  const int* pin = in.data();
  int* pres = res.data();
  ASSERT_TRUE(launch(*m, "localArray", {}, {32}, {&pin, &pres}));
  for (int i = 0; i < 32; ++i) {
    int idx = in[i] & 31;
    EXPECT_EQ(res[i], in[idx] * (i + 1) + in[(idx * 7) & 31] * (i + 1)) << i;
  }

  std::vector<int> ind(6);
  int* pind = ind.data();
  int sel = 1;
  ASSERT_TRUE(launch(*m, "indirect", {}, {6}, {&pind, &sel}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ind[i], ((i + 1) & 1) ? i * 3 : i + 3) << i;
}

TEST_P(NvccPtx, StructArgumentsAndReturnsByValue) {
  auto m = load("functions");
  ASSERT_TRUE(m);
  struct V3 {
    float x, y, z;
  };
  struct Pair {
    double a;
    long long b;
  };
  std::vector<V3> a(8), b(8), out(8);
  std::vector<Pair> pairs(8);
  for (int i = 0; i < 8; ++i) {
    a[i] = {1.0f + i, 2.0f - i, 0.5f * i};
    b[i] = {-3.0f, 0.25f * i, 4.0f + i};
    pairs[i] = {1.5 * i, 1000LL * i};
  }
  const V3 *pa = a.data(), *pb = b.data();
  V3* po = out.data();
  Pair* pp = pairs.data();
  ASSERT_TRUE(launch(*m, "structCalls", {}, {8}, {&pa, &pb, &po, &pp}));
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(out[i].x, a[i].y * b[i].z - a[i].z * b[i].y) << i;
    EXPECT_EQ(out[i].y, a[i].z * b[i].x - a[i].x * b[i].z) << i;
    EXPECT_EQ(out[i].z, a[i].x * b[i].y - a[i].y * b[i].x) << i;
    EXPECT_EQ(pairs[i].a, 1.5 * i * (i + 1)) << i;
    EXPECT_EQ(pairs[i].b, 1000LL * i - i) << i;
  }
}

TEST_P(NvccPtx, SharedMemoryBarriersAndAtomics) {
  auto m = load("sync");
  ASSERT_TRUE(m);
  const KernelInfo* reduce = m->object.info.findKernel("reduceSum");
  ASSERT_TRUE(reduce);
  EXPECT_TRUE(reduce->usesBarriers);
  std::vector<float> in(3 * 64), out(3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 17);
  const float* pin = in.data();
  float* pout = out.data();
  ASSERT_TRUE(launch(*m, "reduceSum", {3}, {64}, {&pin, &pout}, 64 * sizeof(float)));
  for (int b = 0; b < 3; ++b)
    EXPECT_EQ(out[b], std::accumulate(in.begin() + 64 * b, in.begin() + 64 * (b + 1), 0.0f));

  std::vector<int> sums(2);
  int* ps = sums.data();
  ASSERT_TRUE(launch(*m, "sharedAtomics", {2}, {32}, {&ps}));
  EXPECT_EQ(sums[0], 100 + 31 * 32 / 2);
  EXPECT_EQ(sums[1], 100 + 31 * 32 / 2);

  int iv[6] = {0, -5, 5, 0, 0, 0};
  unsigned uv[6] = {0, 0, 0, 0xffffffffu, 0, 0};
  float fv = 0;
  unsigned long long ull = 1;
  double dv = 0;
  int* pi = iv;
  unsigned* pu = uv;
  float* pfv = &fv;
  unsigned long long* pull = &ull;
  double* pd = &dv;
  const int threads = 40;
  ASSERT_TRUE(launch(*m, "atomics", {}, {threads}, {&pi, &pu, &pfv, &pull, &pd}));
  EXPECT_EQ(iv[0], threads);
  EXPECT_EQ(iv[1], threads - 1);
  EXPECT_EQ(iv[2], -(threads - 1));
  EXPECT_EQ(iv[3], 7);
  EXPECT_EQ(iv[4], threads);  // threads run in order: each CAS matches
  EXPECT_EQ(iv[5], -2 * threads);
  EXPECT_EQ(uv[0], static_cast<unsigned>(threads % 10));  // inc wraps at 9 -> 0
  // dec: 0 -> 9 (wrap), then 8, 7, ... : after 40 decrements of a 10-cycle: 0.
  EXPECT_EQ(uv[1], 0u);
  EXPECT_EQ(uv[2], 0xffffffffu);
  EXPECT_EQ(uv[3], 0u);
  unsigned x = 0;
  for (unsigned t = 0; t < threads; ++t) x ^= t;
  EXPECT_EQ(uv[4], x);
  EXPECT_EQ(uv[5], (threads - 1) * 3u);
  EXPECT_EQ(fv, 0.5f * threads);
  EXPECT_EQ(ull, 1 + 3ull * threads);
  EXPECT_EQ(dv, 0.25 * threads);
}

TEST_P(NvccPtx, WarpCollectivesAndBarrierReductions) {
  auto m = load("sync");
  ASSERT_TRUE(m);
  const KernelInfo* k = m->object.info.findKernel("warpOps");
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->usesBarriers);
  EXPECT_TRUE(k->usesWarpCollectives);
  EXPECT_FALSE(m->object.info.findKernel("reduceSum")->usesWarpCollectives);
  std::vector<int> in(32), out(36, -1);
  for (int i = 0; i < 32; ++i) in[i] = (i * 7 + 3) % 41;
  const int* pin = in.data();
  int* pout = out.data();
  ASSERT_TRUE(launch(*m, "warpOps", {}, {32}, {&pin, &pout}));
  for (int t = 0; t < 32; ++t) {
    int up = t >= 3 ? in[t - 3] : in[t];
    int idx = in[(t & ~15) | 5];
    EXPECT_EQ(out[t], in[t ^ 1] + 1000 * up + 1000000 * idx) << t;
  }
  // The shfl_down tree sums into lane 0 (lanes past the end keep their own value).
  int sum = std::accumulate(in.begin(), in.end(), 0);
  EXPECT_EQ(out[32], sum);
  unsigned ballot = 0;
  int odd = 0;
  bool any7 = false, has30 = false;
  for (int i = 0; i < 32; ++i) {
    ballot |= (in[i] > 10 ? 1u : 0u) << i;
    odd += in[i] & 1;
    any7 |= in[i] == 7;
    has30 |= in[i] == 30;
  }
  EXPECT_EQ(static_cast<unsigned>(out[33]), ballot);
  EXPECT_EQ(out[34], 1 + (any7 ? 2 : 0) + (has30 ? 4 : 0));
  EXPECT_EQ(out[35], odd);
}

// Relative error against the host's libm, with CUDA's documented accuracy as the bound.
void expectClose(double got, double want, double relTolerance, const char* what, int i) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << " " << i;
    return;
  }
  if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what << " " << i;
    return;
  }
  double scale = std::max(std::fabs(want), 1e-30);
  EXPECT_LE(std::fabs(got - want) / scale, relTolerance)
      << what << "[" << i << "] got " << got << " want " << want;
}

TEST_P(NvccPtx, MathLibrary) {
  auto m = load("math");
  ASSERT_TRUE(m);
  std::vector<float> in;
  for (int i = 0; i < 64; ++i) in.push_back((i - 32) * 0.73f + 0.01f * i * i);
  in.push_back(1e-20f);
  in.push_back(-88.0f);
  in.push_back(1234.5f);
  int n = static_cast<int>(in.size());
  std::vector<float> out(12 * n);
  const float* pin = in.data();
  float* pout = out.data();
  ASSERT_TRUE(launch(*m, "mathF", {2}, {64}, {&pin, &pout, &n}));
  for (int i = 0; i < n; ++i) {
    double x = in[i];
    const float* o = &out[12 * i];
    // sin/cos: absolute error for large arguments, where the result is near zero.
    EXPECT_NEAR(o[0], std::sin(x), 2e-6) << i;
    EXPECT_NEAR(o[1], std::cos(x), 2e-6) << i;
    expectClose(o[2], std::exp(static_cast<float>(x * 0.1f)), 3e-7, "expf", i);
    expectClose(o[3], std::log(std::fabs(x) + 1.0), 3e-7, "logf", i);
    expectClose(o[4], std::pow(std::fabs(x) + 0.5, 1.7), 1e-6, "powf", i);
    expectClose(o[5], std::sqrt(std::fabs(x)), 1.2e-7, "sqrtf", i);
    EXPECT_NEAR(o[6], std::tanh(static_cast<float>(x * 0.3f)), 5e-7) << i;
    expectClose(o[7], std::atan2(x, 1.5), 5e-7, "atan2f", i);
    EXPECT_NEAR(o[8], std::erf(static_cast<float>(x * 0.2f)), 5e-7) << i;
    float xf = in[i];
    expectClose(o[9], xf / (xf * xf + 1.0f), 1.2e-7, "div", i);
    expectClose(o[10], 1.0 / std::sqrt(std::fabs(x) + 1.0), 5e-7, "rsqrtf", i);
    EXPECT_EQ(o[11], std::fmod(in[i], 2.5f)) << i;
  }

  std::vector<double> ind;
  for (int i = 0; i < 64; ++i) ind.push_back((i - 32) * 0.731 + 0.013 * i * i);
  ind.push_back(1e-300);
  ind.push_back(-700.0);
  std::vector<double> outd(8 * ind.size());
  n = static_cast<int>(ind.size());
  const double* pind = ind.data();
  double* poutd = outd.data();
  ASSERT_TRUE(launch(*m, "mathD", {2}, {64}, {&pind, &poutd, &n}));
  for (int i = 0; i < n; ++i) {
    double x = ind[i];
    const double* o = &outd[8 * i];
    EXPECT_NEAR(o[0], std::sin(x), 1e-15 * std::max(1.0, std::fabs(x))) << i;
    EXPECT_NEAR(o[1], std::cos(x), 1e-15 * std::max(1.0, std::fabs(x))) << i;
    expectClose(o[2], std::exp(x * 0.1), 3e-16, "exp", i);
    expectClose(o[3], std::log(std::fabs(x) + 1.0), 3e-16, "log", i);
    expectClose(o[4], std::pow(std::fabs(x) + 0.5, 1.7), 3e-16, "pow", i);
    EXPECT_EQ(o[5], std::sqrt(std::fabs(x))) << i;
    EXPECT_EQ(o[6], x / (x * x + 1.0)) << i;
    // CUDA's cbrt (1 ulp) against glibc's (1 ulp), and rcp.approx.f64 computed exactly here.
    expectClose(o[7], std::cbrt(x), 1e-15, "cbrt", i);
  }
}

// Type suffixes swapped one line at a time: every result must be a clean error or an object,
// never a crash and never IR that fails verification (an Internal error).
TEST_P(NvccPtx, MutatedTypesGiveCleanErrors) {
  std::string path = std::string(ROCUDA_COMPILER_PTX_DIR) + "/sync_" + GetParam() + ".ptx";
  std::string text = readFile(path);
  ASSERT_FALSE(text.empty());
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(text.substr(start, nl - start));
  const std::pair<const char*, const char*> swaps[] = {
      {".u32", ".f64"}, {".f32", ".b16"}, {".u64", ".s8"}, {".s32", ".pred"}, {".b32", ".f16"}};
  int mutated = 0;
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string line = lines[k];
    bool changed = false;
    for (const auto& [from, to] : swaps)
      if (size_t p = line.find(from); !changed && p != std::string::npos) {
        line.replace(p, std::strlen(from), to);
        changed = true;
      }
    if (!changed) continue;
    std::string copy;
    for (size_t j = 0; j < lines.size(); ++j) copy += (j == k ? line : lines[j]) + "\n";
    CompileOptions options;
    options.optLevel = 0;
    auto result = compileForHost(copy, "mutated", options);
    ++mutated;
    if (!result.ok()) {
      EXPECT_NE(result.error().code, ErrorCode::Internal)
          << "line " << k + 1 << ": " << line << "\n"
          << result.error().message;
    }
  }
  EXPECT_GT(mutated, 20);
}

INSTANTIATE_TEST_SUITE_P(Arch, NvccPtx, ::testing::Values("sm_75", "sm_90", "sm_86G"));

}  // namespace
}  // namespace rocuda::compiler::test

#endif  // ROCUDA_HAVE_NVCC
