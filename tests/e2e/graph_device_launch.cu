// Graphs launched from device code (CUDA's device graph launch): a fire-and-forget launch from a
// kernel of a host-launched graph, a graph relaunching itself through tail launches until a
// counter stops it (cudaGetCurrentGraphExec), tail launches queued by a tail graph running before
// the rest of the list, a sibling launch, an update that takes effect at the next upload, the
// instantiation rules for device graphs, and a device-updatable kernel node whose parameter,
// enabled state and grid a kernel before it changes at each launch. Every result is checked
// against a host reference.
#include <vector>

#include "e2e_check.h"

__global__ void addToAll(int* data, int amount, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += amount;
}

// One thread launches `graph` in the launch mode `mode`; the answer goes to *error.
__global__ void launchGraph(cudaGraphExec_t graph, int mode, int* error) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  cudaStream_t stream = mode == 0   ? cudaStreamGraphFireAndForget
                        : mode == 1 ? cudaStreamGraphTailLaunch
                                    : cudaStreamGraphFireAndForgetAsSibling;
  *error = cudaGraphLaunch(graph, stream);
}

// Counts its runs and relaunches its own graph until `limit` runs; notes whether
// cudaGetCurrentGraphExec named the graph it was told it runs in.
__global__ void relaunchSelf(int* runs, int limit, cudaGraphExec_t expected, int* sameGraph) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  if (cudaGetCurrentGraphExec() != expected) *sameGraph = 0;
  if (++*runs < limit) cudaGraphLaunch(cudaGetCurrentGraphExec(), cudaStreamGraphTailLaunch);
}

// Appends `id` to the order log, then tail-launches up to two graphs (null: none).
__global__ void logAndTail(int id, int* log, cudaGraphExec_t first, cudaGraphExec_t second) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  log[atomicAdd(&log[0], 1) + 1] = id;
  if (first != nullptr) cudaGraphLaunch(first, cudaStreamGraphTailLaunch);
  if (second != nullptr) cudaGraphLaunch(second, cudaStreamGraphTailLaunch);
}

// Before the device-updatable node `node` (addToAll) at each graph launch: the first launch
// makes it add 10, the second disables it, the third makes it add 30 over one block only.
__global__ void updateNode(cudaGraphDeviceNode_t node, int* launches, int* errors) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  int launch = ++*launches;
  int amount = launch * 10;
  cudaError_t error = cudaGraphKernelNodeSetParam(node, sizeof(int*), &amount, sizeof amount);
  if (error == cudaSuccess) error = cudaGraphKernelNodeSetEnabled(node, launch != 2);
  if (error == cudaSuccess && launch == 3) {
    cudaGraphKernelNodeUpdate update = {};
    update.node = node;
    update.field = cudaGraphKernelNodeFieldGridDim;
    update.updateData.gridDim = dim3(1, 1, 1);
    error = cudaGraphKernelNodeUpdatesApply(&update, 1);
  }
  // Past the parameters: refused.
  if (error == cudaSuccess &&
      cudaGraphKernelNodeSetParam(node, 64, &amount, sizeof amount) != cudaErrorInvalidValue)
    error = cudaErrorUnknown;
  if (error != cudaSuccess) atomicAdd(errors, 1);
}

// What cudaGetCurrentGraphExec answers in a kernel of a host graph: NULL.
__global__ void currentGraph(unsigned long long* out) {
  *out = reinterpret_cast<unsigned long long>(cudaGetCurrentGraphExec());
}

namespace {

const int kN = 1000;
const int kThreads = 128;
const int kBlocks = (kN + kThreads - 1) / kThreads;

cudaGraphNode_t addKernel(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& deps, void* func,
                          void** args, int blocks, int threads) {
  cudaGraphNodeParams p = {};
  p.type = cudaGraphNodeTypeKernel;
  p.kernel.func = func;
  p.kernel.gridDim = dim3(blocks);
  p.kernel.blockDim = dim3(threads);
  p.kernel.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, graph, deps.data(), nullptr, deps.size(), &p));
  return node;
}

// A device graph of one kernel node (instantiated for device launch, uploaded to `stream`).
cudaGraphExec_t deviceGraphOf(void* func, void** args, int blocks, int threads, cudaStream_t stream,
                              cudaGraph_t* graphOut = nullptr, cudaGraphNode_t* nodeOut = nullptr) {
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t node = addKernel(graph, {}, func, args, blocks, threads);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagDeviceLaunch));
  CHECK(cudaGraphUpload(exec, stream));
  if (graphOut != nullptr)
    *graphOut = graph;
  else
    CHECK(cudaGraphDestroy(graph));
  if (nodeOut != nullptr) *nodeOut = node;
  return exec;
}

// A host graph whose one kernel launches `target` from the device in `mode`, then `after`
// (optional) as a second node.
cudaGraphExec_t launcherOf(cudaGraphExec_t target, int mode, int* error, void* after = nullptr,
                           void** afterArgs = nullptr) {
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  void* args[] = {&target, &mode, &error};
  cudaGraphNode_t first = addKernel(graph, {}, reinterpret_cast<void*>(launchGraph), args, 1, 32);
  if (after != nullptr) addKernel(graph, {first}, after, afterArgs, kBlocks, kThreads);
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  return exec;
}

bool checkAll(const std::vector<int>& got, int expected, const char* what) {
  for (int i = 0; i < kN; ++i)
    if (got[i] != expected) {
      std::fprintf(stderr, "%s: data[%d] = %d, expected %d\n", what, i, got[i], expected);
      return false;
    }
  return true;
}

}  // namespace

int main() {
  bool ok = true;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int* data = nullptr;
  int* scratch = nullptr;  // [0] launch answers, [1] runs, [2] same graph, [3..] order log
  CHECK(cudaMalloc(&data, kN * sizeof(int)));
  CHECK(cudaMalloc(&scratch, 64 * sizeof(int)));
  CHECK(cudaMemset(data, 0, kN * sizeof(int)));
  CHECK(cudaMemset(scratch, 0, 64 * sizeof(int)));
  int* answer = scratch;

  // Fire and forget: the launching graph (a kernel that launches, then a kernel adding 1000)
  // completes with the child (adding 3) in it; three launches.
  int n = kN, three = 3, thousand = 1000;
  void* addThree[] = {&data, &three, &n};
  void* addThousand[] = {&data, &thousand, &n};
  cudaGraphExec_t child =
      deviceGraphOf(reinterpret_cast<void*>(addToAll), addThree, kBlocks, kThreads, stream);
  cudaGraphExec_t fireAndForget =
      launcherOf(child, 0, answer, reinterpret_cast<void*>(addToAll), addThousand);
  for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(fireAndForget, stream));
  CHECK(cudaStreamSynchronize(stream));
  ok &= checkAll(download(data, kN), 3 * 1003, "fire and forget");
  if (download(answer, 1)[0] != cudaSuccess) {
    std::fprintf(stderr, "fire and forget: cudaGraphLaunch answered %d\n", download(answer, 1)[0]);
    ok = false;
  }

  // A tail launch from a host graph's kernel, and a sibling launch: each adds 3 once more.
  cudaGraphExec_t tail = launcherOf(child, 1, answer);
  cudaGraphExec_t sibling = launcherOf(child, 2, answer);
  CHECK(cudaGraphLaunch(tail, stream));
  CHECK(cudaGraphLaunch(sibling, stream));
  CHECK(cudaStreamSynchronize(stream));
  ok &= checkAll(download(data, kN), 3 * 1003 + 6, "tail and sibling launches");
  if (download(answer, 1)[0] != cudaSuccess) ok = false;

  // An update of the device graph (adding 5 instead of 3) takes effect once uploaded again.
  CHECK(cudaMemset(data, 0, kN * sizeof(int)));
  {
    cudaGraph_t graph;
    cudaGraphNode_t node;
    cudaGraphExec_t updatable = deviceGraphOf(reinterpret_cast<void*>(addToAll), addThree, kBlocks,
                                              kThreads, stream, &graph, &node);
    cudaGraphExec_t launcher = launcherOf(updatable, 0, answer);
    int five = 5;
    void* addFive[] = {&data, &five, &n};
    cudaKernelNodeParams params = {};
    params.func = reinterpret_cast<void*>(addToAll);
    params.gridDim = dim3(kBlocks);
    params.blockDim = dim3(kThreads);
    params.kernelParams = addFive;
    CHECK(cudaGraphExecKernelNodeSetParams(updatable, node, &params));
    CHECK(cudaGraphUpload(updatable, stream));
    CHECK(cudaGraphLaunch(launcher, stream));
    CHECK(cudaStreamSynchronize(stream));
    ok &= checkAll(download(data, kN), 5, "updated and uploaded device graph");
    CHECK(cudaGraphExecDestroy(launcher));
    CHECK(cudaGraphExecDestroy(updatable));
    CHECK(cudaGraphDestroy(graph));
  }

  // A device graph launched from the host relaunches itself 100 times through tail launches;
  // cudaGetCurrentGraphExec names it in every run.
  {
    int* runs = scratch + 1;
    int* sameGraph = scratch + 2;
    CHECK(cudaMemset(runs, 0, sizeof(int)));
    int one = 1;
    CHECK(cudaMemcpy(sameGraph, &one, sizeof one, cudaMemcpyHostToDevice));
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    int limit = 100;
    cudaGraphExec_t self = nullptr;
    void* args[] = {&runs, &limit, &self, &sameGraph};
    cudaGraphNode_t node = addKernel(graph, {}, reinterpret_cast<void*>(relaunchSelf), args, 1, 32);
    CHECK(cudaGraphInstantiate(&self, graph, cudaGraphInstantiateFlagDeviceLaunch));
    // The kernel's argument is its own graph, known only now.
    cudaKernelNodeParams params = {};
    params.func = reinterpret_cast<void*>(relaunchSelf);
    params.gridDim = dim3(1);
    params.blockDim = dim3(32);
    params.kernelParams = args;
    CHECK(cudaGraphExecKernelNodeSetParams(self, node, &params));
    CHECK(cudaGraphLaunch(self, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::vector<int> got = download(scratch, 3);
    if (got[1] != limit || got[2] != 1) {
      std::fprintf(stderr, "self relaunch: %d runs (expected %d), current graph %s\n", got[1],
                   limit, got[2] == 1 ? "right" : "wrong");
      ok = false;
    }
    CHECK(cudaGraphExecDestroy(self));
    CHECK(cudaGraphDestroy(graph));
  }

  // Tail ordering: T queues A then B; A queues C. The tail launches a tail graph queues run
  // before the rest of the list: T, A, C, B.
  {
    int* log = scratch + 3;
    CHECK(cudaMemset(log, 0, 8 * sizeof(int)));
    cudaGraphExec_t none = nullptr;
    auto logger = [&](int id, cudaGraphExec_t first, cudaGraphExec_t second) {
      void* args[] = {&id, &log, &first, &second};
      return deviceGraphOf(reinterpret_cast<void*>(logAndTail), args, 1, 32, stream);
    };
    cudaGraphExec_t c = logger(3, none, none);
    cudaGraphExec_t b = logger(2, none, none);
    cudaGraphExec_t a = logger(1, c, none);
    cudaGraphExec_t t = logger(0, a, b);
    CHECK(cudaGraphLaunch(t, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::vector<int> got = download(log, 5);
    std::vector<int> expected = {4, 0, 1, 3, 2};
    if (got != expected) {
      std::fprintf(stderr, "tail order: %d entries: %d %d %d %d (expected T A C B)\n", got[0],
                   got[1], got[2], got[3], got[4]);
      ok = false;
    }
    for (cudaGraphExec_t exec : {a, b, c, t}) CHECK(cudaGraphExecDestroy(exec));
  }

  // cudaGetCurrentGraphExec in a host graph's kernel: NULL.
  {
    unsigned long long* out = nullptr;
    CHECK(cudaMalloc(&out, sizeof *out));
    unsigned long long marker = ~0ull;
    CHECK(cudaMemcpy(out, &marker, sizeof marker, cudaMemcpyHostToDevice));
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    void* args[] = {&out};
    addKernel(graph, {}, reinterpret_cast<void*>(currentGraph), args, 1, 1);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    if (download(out, 1)[0] != 0) {
      std::fprintf(stderr, "cudaGetCurrentGraphExec in a host graph is not NULL\n");
      ok = false;
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaFree(out));
  }

  // A device-updatable node changed by the kernel before it, at each of three launches.
  {
    CHECK(cudaMemset(data, 0, kN * sizeof(int)));
    CHECK(cudaMemset(scratch, 0, 2 * sizeof(int)));
    int* launches = scratch;
    int* errors = scratch + 1;
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    int zero = 0;
    void* addArgs[] = {&data, &zero, &n};
    cudaGraphNode_t target =
        addKernel(graph, {}, reinterpret_cast<void*>(addToAll), addArgs, kBlocks, kThreads);
    cudaLaunchAttributeValue value = {};
    value.deviceUpdatableKernelNode.deviceUpdatable = 1;
    CHECK(cudaGraphKernelNodeSetAttribute(target, cudaLaunchAttributeDeviceUpdatableKernelNode,
                                          &value));
    CHECK(cudaGraphKernelNodeGetAttribute(target, cudaLaunchAttributeDeviceUpdatableKernelNode,
                                          &value));
    cudaGraphDeviceNode_t devNode = value.deviceUpdatableKernelNode.devNode;
    void* updateArgs[] = {&devNode, &launches, &errors};
    cudaGraphNode_t updater =
        addKernel(graph, {}, reinterpret_cast<void*>(updateNode), updateArgs, 1, 32);
    CHECK(cudaGraphAddDependencies(graph, &updater, &target, nullptr, 1));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::vector<int> got = download(data, kN);
    for (int i = 0; i < kN; ++i) {
      int expected = i < kThreads ? 40 : 10;
      if (got[i] != expected) {
        std::fprintf(stderr, "device-updatable node: data[%d] = %d, expected %d\n", i, got[i],
                     expected);
        ok = false;
        break;
      }
    }
    if (download(errors, 1)[0] != 0) {
      std::fprintf(stderr, "device-updatable node: an update failed\n");
      ok = false;
    }
    // Such a node stays one and stays in its graph, and its graph has one executable graph.
    value.deviceUpdatableKernelNode.deviceUpdatable = 0;
    cudaGraphExec_t second = nullptr;
    if (cudaGraphKernelNodeSetAttribute(target, cudaLaunchAttributeDeviceUpdatableKernelNode,
                                        &value) == cudaSuccess ||
        cudaGraphDestroyNode(target) == cudaSuccess ||
        cudaGraphInstantiate(&second, graph, 0) == cudaSuccess) {
      std::fprintf(stderr, "device-updatable node: a restriction was not enforced\n");
      ok = false;
    }
    cudaGetLastError();
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }

  // Instantiation for device launch refuses a host node and an empty graph.
  {
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphExec_t exec = nullptr;
    if (cudaGraphInstantiate(&exec, graph, cudaGraphInstantiateFlagDeviceLaunch) !=
        cudaErrorInvalidValue) {
      std::fprintf(stderr, "an empty graph was instantiated for device launch\n");
      ok = false;
    }
    cudaGetLastError();
    cudaHostNodeParams host = {};
    host.fn = [](void*) {};
    cudaGraphNode_t hostNode;
    CHECK(cudaGraphAddHostNode(&hostNode, graph, nullptr, 0, &host));
    cudaGraphInstantiateParams params = {};
    params.flags = cudaGraphInstantiateFlagDeviceLaunch;
    if (cudaGraphInstantiateWithParams(&exec, graph, &params) != cudaErrorInvalidValue ||
        params.result_out != cudaGraphInstantiateNodeOperationNotSupported ||
        params.errNode_out != hostNode) {
      std::fprintf(stderr, "a host node was instantiated for device launch (result %d)\n",
                   static_cast<int>(params.result_out));
      ok = false;
    }
    cudaGetLastError();
    CHECK(cudaGraphDestroy(graph));
  }

  CHECK(cudaGraphExecDestroy(fireAndForget));
  CHECK(cudaGraphExecDestroy(tail));
  CHECK(cudaGraphExecDestroy(sibling));
  CHECK(cudaGraphExecDestroy(child));
  CHECK(cudaFree(data));
  CHECK(cudaFree(scratch));
  CHECK(cudaStreamDestroy(stream));
  if (!ok) return 1;
  std::printf("graph_device_launch: OK\n");
  return 0;
}
