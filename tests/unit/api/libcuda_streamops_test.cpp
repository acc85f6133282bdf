// Stream memory operations, stream attributes, managed memory hints and their range queries, and
// the CUDA 13 location-based memory pool calls, through libcuda.so.1.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "src/api/cuda/graph_abi.h"
#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

using MemOp32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
using MemOp64 = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned);

class StreamOps : public Driver {
 protected:
  void SetUp() override {
    Driver::SetUp();
    // Pinned host memory: device-accessible, and the host can poke it directly.
    ASSERT_EQ(CU(cuMemAllocHost, void**, size_t)(reinterpret_cast<void**>(&words_), 64),
              CUDA_SUCCESS);
    std::memset(words_, 0, 64);
    ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream_, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFreeHost, void*)(words_), CUDA_SUCCESS);
    Driver::TearDown();
  }
  CUdeviceptr at(int index) { return reinterpret_cast<uintptr_t>(&words_[index]); }
  std::atomic<uint32_t>& word(int index) {
    return *reinterpret_cast<std::atomic<uint32_t>*>(&words_[index]);
  }
  CUresult query() { return CU(cuStreamQuery, CUstream)(stream_); }
  CUresult sync() { return CU(cuStreamSynchronize, CUstream)(stream_); }

  uint32_t* words_ = nullptr;
  CUstream stream_ = nullptr;
  MemOp32 wait32_ = proc<MemOp32>("cuStreamWaitValue32", 12090);
  MemOp32 write32_ = proc<MemOp32>("cuStreamWriteValue32", 12090);
  MemOp64 wait64_ = proc<MemOp64>("cuStreamWaitValue64", 12090);
  MemOp64 write64_ = proc<MemOp64>("cuStreamWriteValue64", 12090);
};

TEST_F(StreamOps, WritesLandInStreamOrder) {
  ASSERT_EQ(write32_(stream_, at(0), 7, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(
      write64_(stream_, at(2), 0x1122334455667788ull, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
      CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(words_[0], 7u);
  uint64_t wide = 0;
  std::memcpy(&wide, &words_[2], 8);
  EXPECT_EQ(wide, 0x1122334455667788ull);
}

TEST_F(StreamOps, WaitBlocksLaterWorkUntilTheHostSetsTheValue) {
  ASSERT_EQ(wait32_(stream_, at(0), 1, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  ASSERT_EQ(write32_(stream_, at(1), 42, 0), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(query(), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(word(1).load(), 0u);  // the write after the wait has not run
  word(0).store(1);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(word(1).load(), 42u);
}

TEST_F(StreamOps, WaitReleasedByAnotherStream) {
  CUstream other = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(wait64_(stream_, at(0), 5, CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH),
            CUDA_SUCCESS);
  ASSERT_EQ(write32_(stream_, at(4), 9, 0), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(query(), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(write64_(other, at(0), 6, 0), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(words_[4], 9u);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(other), CUDA_SUCCESS);
}

TEST_F(StreamOps, EveryConditionIsEvaluated) {
  words_[0] = 0b1010;
  // Conditions that hold at once: the stream drains.
  ASSERT_EQ(wait32_(stream_, at(0), 0b1000, CU_STREAM_WAIT_VALUE_AND), CUDA_SUCCESS);
  ASSERT_EQ(wait32_(stream_, at(0), 0b0101, CU_STREAM_WAIT_VALUE_NOR), CUDA_SUCCESS);
  ASSERT_EQ(wait32_(stream_, at(0), 0b1010, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
  // Cyclic >=: (int32_t)(10 - 0xFFFFFFF0) = 26 >= 0.
  ASSERT_EQ(wait32_(stream_, at(0), 0xFFFFFFF0u, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  // AND with no common bit does not hold until a bit is set.
  ASSERT_EQ(wait32_(stream_, at(0), 0b0100, CU_STREAM_WAIT_VALUE_AND), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(query(), CUDA_ERROR_NOT_READY);
  word(0).store(0b0100);
  EXPECT_EQ(sync(), CUDA_SUCCESS);
}

TEST_F(StreamOps, BatchRunsItsOperationsInOrder) {
  auto batch = proc<CUresult (*)(CUstream, unsigned, CUstreamBatchMemOpParams*, unsigned)>(
      "cuStreamBatchMemOp", 12090);
  CUstreamBatchMemOpParams ops[4];
  std::memset(ops, 0, sizeof ops);
  ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  ops[0].writeValue.address = at(1);
  ops[0].writeValue.value = 11;
  ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  ops[1].waitValue.address = at(0);
  ops[1].waitValue.value = 3;
  ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
  ops[2].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
  ops[2].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
  ops[3].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
  ops[3].writeValue.address = at(2);
  ops[3].writeValue.value64 = 1ull << 40;
  ASSERT_EQ(batch(stream_, 4, ops, 0), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(word(1).load(), 11u);  // before the wait
  EXPECT_EQ(query(), CUDA_ERROR_NOT_READY);
  word(0).store(3);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  uint64_t wide = 0;
  std::memcpy(&wide, &words_[2], 8);
  EXPECT_EQ(wide, 1ull << 40);

  EXPECT_EQ(batch(stream_, 1, ops, 1), CUDA_ERROR_INVALID_VALUE);    // flags
  EXPECT_EQ(batch(stream_, 256, ops, 0), CUDA_ERROR_INVALID_VALUE);  // count
  EXPECT_EQ(batch(stream_, 1, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  ops[0].operation = static_cast<CUstreamBatchMemOpType>(99);
  EXPECT_EQ(batch(stream_, 1, ops, 0), CUDA_ERROR_INVALID_VALUE);
  ops[0].flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
  ops[0].flushRemoteWrites.flags = 1;
  EXPECT_EQ(batch(stream_, 1, ops, 0), CUDA_ERROR_INVALID_VALUE);
  ops[0].flushRemoteWrites.flags = 0;
  EXPECT_EQ(batch(stream_, 1, ops, 0), CUDA_SUCCESS);
  EXPECT_EQ(sync(), CUDA_SUCCESS);
}

// Batch memory-operation graph nodes: added, read back, changed, instantiated and updated in the
// executable graph within what may change; captured stream memory operations become such nodes.
class BatchMemOpNodes : public StreamOps {
 protected:
  using AddNode = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                               const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1*);
  using GetParams = CUresult (*)(CUgraphNode, CUDA_BATCH_MEM_OP_NODE_PARAMS_v1*);
  using SetParams = CUresult (*)(CUgraphNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1*);
  using ExecSetParams = CUresult (*)(CUgraphExec, CUgraphNode,
                                     const CUDA_BATCH_MEM_OP_NODE_PARAMS_v1*);

  static CUstreamBatchMemOpParams write32(CUdeviceptr address, uint32_t value) {
    CUstreamBatchMemOpParams op;
    std::memset(&op, 0, sizeof op);
    op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op.writeValue.address = address;
    op.writeValue.value = value;
    return op;
  }
  static CUstreamBatchMemOpParams wait32(CUdeviceptr address, uint32_t value) {
    CUstreamBatchMemOpParams op;
    std::memset(&op, 0, sizeof op);
    op.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    op.waitValue.address = address;
    op.waitValue.value = value;
    op.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    return op;
  }
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 params(CUstreamBatchMemOpParams* ops, unsigned count) {
    CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 p{};
    EXPECT_EQ(CU(cuCtxGetCurrent, CUcontext*)(&p.ctx), CUDA_SUCCESS);
    p.count = count;
    p.paramArray = ops;
    return p;
  }
  CUgraphExec instantiate(CUgraph graph) {
    CUgraphExec exec = nullptr;
    EXPECT_EQ(
        CU(cuGraphInstantiateWithFlags, CUgraphExec*, CUgraph, unsigned long long)(&exec, graph, 0),
        CUDA_SUCCESS);
    return exec;
  }
  CUresult launch(CUgraphExec exec) {
    return CU(cuGraphLaunch, CUgraphExec, CUstream)(exec, stream_);
  }

  AddNode add_ = proc<AddNode>("cuGraphAddBatchMemOpNode", 12090);
  GetParams get_ = proc<GetParams>("cuGraphBatchMemOpNodeGetParams", 12090);
  SetParams set_ = proc<SetParams>("cuGraphBatchMemOpNodeSetParams", 12090);
  ExecSetParams execSet_ = proc<ExecSetParams>("cuGraphExecBatchMemOpNodeSetParams", 12090);
};

TEST_F(BatchMemOpNodes, AddedNodesRunAndKeepTheirParameters) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUstreamBatchMemOpParams ops[2] = {write32(at(0), 5), write32(at(1), 6)};
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 p = params(ops, 2);
  CUgraphNode node = nullptr;
  ASSERT_EQ(add_(&node, graph, nullptr, 0, &p), CUDA_SUCCESS);
  CUgraphNodeType type{};
  ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(node, &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  ops[0].writeValue.value = 99;  // the node keeps its own copy
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 got{};
  ASSERT_EQ(get_(node, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.ctx, p.ctx);
  ASSERT_EQ(got.count, 2u);
  ASSERT_NE(got.paramArray, nullptr);
  EXPECT_NE(got.paramArray, ops);
  EXPECT_EQ(got.paramArray[0].writeValue.value, 5u);
  EXPECT_EQ(got.paramArray[1].writeValue.address, at(1));

  CUgraphExec exec = instantiate(graph);
  // Changing the graph's node leaves the executable graph as instantiated.
  ops[0].writeValue.value = 7;
  ASSERT_EQ(set_(node, &p), CUDA_SUCCESS);
  ASSERT_EQ(get_(node, &got), CUDA_SUCCESS);
  EXPECT_EQ(got.paramArray[0].writeValue.value, 7u);
  ASSERT_EQ(launch(exec), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(words_[0], 5u);
  EXPECT_EQ(words_[1], 6u);
  // The executable node takes new addresses and values...
  ops[0] = write32(at(2), 8);
  ASSERT_EQ(execSet_(exec, node, &p), CUDA_SUCCESS);
  ASSERT_EQ(launch(exec), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(words_[2], 8u);
  // ...but not another count, kind of operation or write flags.
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 one = params(ops, 1);
  EXPECT_EQ(execSet_(exec, node, &one), CUDA_ERROR_INVALID_VALUE);
  CUstreamBatchMemOpParams changed[2] = {wait32(at(0), 1), ops[1]};
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 other = params(changed, 2);
  EXPECT_EQ(execSet_(exec, node, &other), CUDA_ERROR_INVALID_VALUE);
  changed[0] = ops[0];
  changed[0].writeValue.flags = CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
  EXPECT_EQ(execSet_(exec, node, &other), CUDA_ERROR_INVALID_VALUE);

  // Refused parameters.
  CUgraphNode refused = nullptr;
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 bad = p;
  bad.flags = 1;
  EXPECT_EQ(add_(&refused, graph, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  bad = params(ops, 0);
  EXPECT_EQ(add_(&refused, graph, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  CUstreamBatchMemOpParams unaligned = write32(at(0) + 2, 1);
  bad = params(&unaligned, 1);
  EXPECT_EQ(add_(&refused, graph, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(add_(&refused, graph, nullptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(get_(node, nullptr), CUDA_ERROR_INVALID_VALUE);

  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

TEST_F(BatchMemOpNodes, AWaitNodeHoldsItsDependents) {
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuGraphCreate, CUgraph*, unsigned)(&graph, 0), CUDA_SUCCESS);
  CUstreamBatchMemOpParams wait = wait32(at(4), 1), write = write32(at(5), 1);
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 waitParams = params(&wait, 1), writeParams = params(&write, 1);
  CUgraphNode waitNode = nullptr, writeNode = nullptr;
  ASSERT_EQ(add_(&waitNode, graph, nullptr, 0, &waitParams), CUDA_SUCCESS);
  ASSERT_EQ(add_(&writeNode, graph, &waitNode, 1, &writeParams), CUDA_SUCCESS);
  CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(launch(exec), CUDA_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(query(), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(word(5).load(), 0u);
  word(4).store(1);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(word(5).load(), 1u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

TEST_F(BatchMemOpNodes, CapturedOperationsBecomeBatchNodes) {
  ASSERT_EQ(CU(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)(stream_,
                                                                    CU_STREAM_CAPTURE_MODE_RELAXED),
            CUDA_SUCCESS);
  ASSERT_EQ(write32_(stream_, at(6), 77, CU_STREAM_WRITE_VALUE_DEFAULT), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(CU(cuStreamEndCapture, CUstream, CUgraph*)(stream_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(words_[6], 0u);  // captured, not run
  CUgraphNode nodes[2] = {};
  size_t count = 2;
  ASSERT_EQ(CU(cuGraphGetNodes, CUgraph, CUgraphNode*, size_t*)(graph, nodes, &count),
            CUDA_SUCCESS);
  ASSERT_EQ(count, 1u);
  CUgraphNodeType type{};
  ASSERT_EQ(CU(cuGraphNodeGetType, CUgraphNode, CUgraphNodeType*)(nodes[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 got{};
  ASSERT_EQ(get_(nodes[0], &got), CUDA_SUCCESS);
  ASSERT_EQ(got.count, 1u);
  EXPECT_EQ(got.paramArray[0].operation, CU_STREAM_MEM_OP_WRITE_VALUE_32);
  EXPECT_EQ(got.paramArray[0].writeValue.address, at(6));
  EXPECT_EQ(got.paramArray[0].writeValue.value, 77u);
  CUgraphExec exec = instantiate(graph);
  ASSERT_EQ(launch(exec), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(words_[6], 77u);
  EXPECT_EQ(CU(cuGraphExecDestroy, CUgraphExec)(exec), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuGraphDestroy, CUgraph)(graph), CUDA_SUCCESS);
}

TEST_F(StreamOps, InvalidTargetsAndFlags) {
  EXPECT_EQ(write32_(stream_, at(0) + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);  // misaligned
  EXPECT_EQ(write64_(stream_, at(1), 1, 0), CUDA_ERROR_INVALID_VALUE);      // 4-aligned only
  EXPECT_EQ(write32_(stream_, at(0), 1, 2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(wait32_(stream_, at(0), 1, 4), CUDA_ERROR_INVALID_VALUE);
  uint32_t local = 0;  // memory the driver does not know
  EXPECT_EQ(write32_(stream_, reinterpret_cast<uintptr_t>(&local), 1, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(write32_(stream_, 0, 1, 0), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr managed = 0;
  ASSERT_EQ(
      CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&managed, 64, CU_MEM_ATTACH_GLOBAL),
      CUDA_SUCCESS);
  EXPECT_EQ(wait32_(stream_, managed, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(managed), CUDA_SUCCESS);
  // Device memory is a valid target.
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 16), CUDA_SUCCESS);
  EXPECT_EQ(write32_(stream_, device + 4, 77, 0), CUDA_SUCCESS);
  ASSERT_EQ(sync(), CUDA_SUCCESS);
  uint32_t back = 0;
  ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(&back, device + 4, 4), CUDA_SUCCESS);
  EXPECT_EQ(back, 77u);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
  int supported = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &supported, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(supported, 1);
}

// ---- Stream attributes ----
using GetAttr = CUresult (*)(CUstream, CUstreamAttrID, CUstreamAttrValue*);
using SetAttr = CUresult (*)(CUstream, CUstreamAttrID, const CUstreamAttrValue*);

TEST_F(StreamOps, AttributesAreStoredReportedAndCopied) {
  auto get = proc<GetAttr>("cuStreamGetAttribute", 12090);
  auto set = proc<SetAttr>("cuStreamSetAttribute", 12090);
  CUstreamAttrValue value;
  std::memset(&value, 0, sizeof value);
  ASSERT_EQ(get(stream_, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value), CUDA_SUCCESS);
  EXPECT_EQ(value.syncPolicy, CU_SYNC_POLICY_AUTO);
  value.syncPolicy = CU_SYNC_POLICY_SPIN;
  ASSERT_EQ(set(stream_, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value), CUDA_SUCCESS);
  std::memset(&value, 0, sizeof value);
  value.accessPolicyWindow = {reinterpret_cast<void*>(at(0)), 64, 0.5f,
                              CU_ACCESS_PROPERTY_PERSISTING, CU_ACCESS_PROPERTY_STREAMING};
  ASSERT_EQ(set(stream_, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value), CUDA_SUCCESS);
  value.priority = -9;
  ASSERT_EQ(set(stream_, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value), CUDA_SUCCESS);

  CUstream copy = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&copy, 0), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamCopyAttributes, CUstream, CUstream)(copy, stream_), CUDA_SUCCESS);
  for (CUstream s : {stream_, copy}) {
    std::memset(&value, 0, sizeof value);
    ASSERT_EQ(get(s, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value), CUDA_SUCCESS);
    EXPECT_EQ(value.syncPolicy, CU_SYNC_POLICY_SPIN);
    ASSERT_EQ(get(s, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value), CUDA_SUCCESS);
    EXPECT_EQ(value.accessPolicyWindow.base_ptr, reinterpret_cast<void*>(at(0)));
    EXPECT_EQ(value.accessPolicyWindow.num_bytes, 64u);
    EXPECT_EQ(value.accessPolicyWindow.hitRatio, 0.5f);
    EXPECT_EQ(value.accessPolicyWindow.missProp, CU_ACCESS_PROPERTY_STREAMING);
    // The priority range is [-5, 0]: a requested priority is clamped into it.
    ASSERT_EQ(get(s, CU_LAUNCH_ATTRIBUTE_PRIORITY, &value), CUDA_SUCCESS);
    EXPECT_EQ(value.priority, -5);
  }
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(copy), CUDA_SUCCESS);
}

// A stream created with a priority outside cuCtxGetStreamPriorityRange's range gets the nearest
// end of it, and kernels launched with a priority attribute are accepted.
TEST_F(StreamOps, PrioritiesAreClampedIntoTheContextsRange) {
  int least = 1, greatest = 1;
  ASSERT_EQ(CU(cuCtxGetStreamPriorityRange, int*, int*)(&least, &greatest), CUDA_SUCCESS);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -5);  // the CPU device schedules grids by priority, in NVIDIA's range
  int supported = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &supported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(supported, 1);
  auto create = CU(cuStreamCreateWithPriority, CUstream*, unsigned, int);
  auto priorityOf = [&](CUstream s) {
    int priority = 99;
    EXPECT_EQ(CU(cuStreamGetPriority, CUstream, int*)(s, &priority), CUDA_SUCCESS);
    return priority;
  };
  for (auto [requested, expected] : {std::pair{-100, greatest}, std::pair{5, 0},
                                     std::pair{greatest, greatest}}) {
    CUstream s = nullptr;
    ASSERT_EQ(create(&s, CU_STREAM_NON_BLOCKING, requested), CUDA_SUCCESS);
    EXPECT_EQ(priorityOf(s), expected) << "requested " << requested;
    EXPECT_EQ(CU(cuStreamDestroy, CUstream)(s), CUDA_SUCCESS);
  }
  EXPECT_EQ(CU(cuCtxGetStreamPriorityRange, int*, int*)(nullptr, nullptr), CUDA_SUCCESS);
}

TEST_F(StreamOps, AttributeErrors) {
  auto get = proc<GetAttr>("cuStreamGetAttribute", 12090);
  auto set = proc<SetAttr>("cuStreamSetAttribute", 12090);
  CUstreamAttrValue value;
  std::memset(&value, 0, sizeof value);
  EXPECT_EQ(get(stream_, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(get(stream_, CU_LAUNCH_ATTRIBUTE_PRIORITY, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(set(stream_, CU_LAUNCH_ATTRIBUTE_PRIORITY, nullptr), CUDA_ERROR_INVALID_VALUE);
  value.accessPolicyWindow.hitRatio = 2.0f;
  EXPECT_EQ(set(stream_, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value),
            CUDA_ERROR_INVALID_VALUE);
  value.syncPolicy = static_cast<CUsynchronizationPolicy>(9);
  EXPECT_EQ(set(stream_, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value),
            CUDA_ERROR_INVALID_VALUE);
  int bogus = 0;
  EXPECT_EQ(get(reinterpret_cast<CUstream>(&bogus), CU_LAUNCH_ATTRIBUTE_PRIORITY, &value),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(StreamOps, AttachMemAsync) {
  auto attach = CU(cuStreamAttachMemAsync, CUstream, CUdeviceptr, size_t, unsigned);
  CUdeviceptr managed = 0;
  ASSERT_EQ(
      CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&managed, 256, CU_MEM_ATTACH_GLOBAL),
      CUDA_SUCCESS);
  EXPECT_EQ(attach(stream_, managed, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS);
  EXPECT_EQ(attach(stream_, managed, 256, CU_MEM_ATTACH_HOST), CUDA_SUCCESS);
  EXPECT_EQ(attach(stream_, managed, 128, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(attach(stream_, managed, 0, 8), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(attach(nullptr, managed, 0, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(attach(stream_, at(0), 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(sync(), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(managed), CUDA_SUCCESS);
}

// ---- Managed memory hints ----
using RangeAttr = CUresult (*)(void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t);

class Managed : public Driver {
 protected:
  void SetUp() override {
    Driver::SetUp();
    ASSERT_EQ(
        CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&base_, kBytes, CU_MEM_ATTACH_GLOBAL),
        CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(base_), CUDA_SUCCESS);
    Driver::TearDown();
  }
  int attr(CUmem_range_attribute which, CUdeviceptr start, size_t bytes) {
    int value = 12345;
    EXPECT_EQ(range_(&value, 4, which, start, bytes), CUDA_SUCCESS);
    return value;
  }
  CUresult advise(CUmem_advise advice, CUdeviceptr start, size_t bytes, CUmemLocation where) {
    return CU13(cuMemAdvise, CUdeviceptr, size_t, CUmem_advise, CUmemLocation)(start, bytes, advice,
                                                                               where);
  }
  static constexpr size_t kBytes = 3 * 4096;
  CUdeviceptr base_ = 0;
  RangeAttr range_ = proc<RangeAttr>("cuMemRangeGetAttribute", 12090);
  CUmemLocation device0_{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemLocation host_{CU_MEM_LOCATION_TYPE_HOST, 0};
};

TEST_F(Managed, DefaultsBeforeAnyHint) {
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, kBytes), 0);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, base_, kBytes), CU_DEVICE_INVALID);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, kBytes), CU_DEVICE_INVALID);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, base_, kBytes),
            CU_MEM_LOCATION_TYPE_INVALID);
  int devices[3] = {7, 7, 7};
  ASSERT_EQ(range_(devices, sizeof devices, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, base_, kBytes),
            CUDA_SUCCESS);
  for (int d : devices) EXPECT_EQ(d, CU_DEVICE_INVALID);
}

TEST_F(Managed, AdviceIsReportedPerRange) {
  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_READ_MOSTLY, base_, kBytes, device0_), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, kBytes), 1);
  ASSERT_EQ(advise(CU_MEM_ADVISE_UNSET_READ_MOSTLY, base_ + 4096, 4096, device0_), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, kBytes), 0);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, 4096), 1);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_ + 8192, 4096), 1);

  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, base_, 8192, device0_), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, base_, 8192), 0);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, base_, 8192),
            CU_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, base_, 8192), 0);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, base_, kBytes), CU_DEVICE_INVALID);
  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, base_ + 8192, 4096, host_), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, base_ + 8192, 4096), CU_DEVICE_CPU);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, base_ + 8192, 4096),
            CU_MEM_LOCATION_TYPE_HOST);

  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_ACCESSED_BY, base_, kBytes, device0_), CUDA_SUCCESS);
  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_ACCESSED_BY, base_, 4096, host_), CUDA_SUCCESS);
  int devices[3] = {7, 7, 7};
  ASSERT_EQ(range_(devices, sizeof devices, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, base_, 4096),
            CUDA_SUCCESS);
  EXPECT_EQ(devices[0], 0);
  EXPECT_EQ(devices[1], CU_DEVICE_CPU);
  EXPECT_EQ(devices[2], CU_DEVICE_INVALID);
  ASSERT_EQ(range_(devices, sizeof devices, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, base_, kBytes),
            CUDA_SUCCESS);
  EXPECT_EQ(devices[0], 0);
  EXPECT_EQ(devices[1], CU_DEVICE_INVALID);
  ASSERT_EQ(advise(CU_MEM_ADVISE_UNSET_ACCESSED_BY, base_, kBytes, device0_), CUDA_SUCCESS);
  ASSERT_EQ(range_(devices, 4, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, base_, kBytes), CUDA_SUCCESS);
  EXPECT_EQ(devices[0], CU_DEVICE_INVALID);
}

TEST_F(Managed, PrefetchesAreReportedAndFreedMemoryForgetsThem) {
  // The CUDA 8 form, with a CUdevice target.
  auto prefetch =
      proc<CUresult (*)(CUdeviceptr, size_t, CUdevice, CUstream)>("cuMemPrefetchAsync", 8000);
  ASSERT_EQ(prefetch(base_, kBytes, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, kBytes), 0);
  ASSERT_EQ(prefetch(base_, 4096, CU_DEVICE_CPU, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, 4096), CU_DEVICE_CPU);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, base_, 4096),
            CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, kBytes), CU_DEVICE_INVALID);
  EXPECT_EQ(prefetch(base_, kBytes, 42, nullptr), CUDA_ERROR_INVALID_DEVICE);

  // Several attributes at once.
  auto ranges = CU(cuMemRangeGetAttributes, void**, size_t*, CUmem_range_attribute*, size_t,
                   CUdeviceptr, size_t);
  int readMostly = 9, last = 9;
  void* data[] = {&readMostly, &last};
  size_t sizes[] = {4, 4};
  CUmem_range_attribute which[] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                   CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID};
  ASSERT_EQ(ranges(data, sizes, which, 2, base_ + 4096, 8192), CUDA_SUCCESS);
  EXPECT_EQ(readMostly, 0);
  EXPECT_EQ(last, 0);
  EXPECT_EQ(ranges(data, sizes, which, 0, base_, kBytes), CUDA_ERROR_INVALID_VALUE);

  // A new allocation at a reused address starts without hints.
  ASSERT_EQ(CU(cuMemFree, CUdeviceptr)(base_), CUDA_SUCCESS);
  ASSERT_EQ(
      CU(cuMemAllocManaged, CUdeviceptr*, size_t, unsigned)(&base_, kBytes, CU_MEM_ATTACH_GLOBAL),
      CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, kBytes), CU_DEVICE_INVALID);
}

// Advice and prefetches apply to whole pages ("rounded down and rounded up respectively to be
// aligned to CPU page size"); managed allocations start on a page of their own.
TEST_F(Managed, HintsCoverWholePagesAndPageableMemory) {
  EXPECT_EQ(base_ % 4096, 0u);
  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_READ_MOSTLY, base_ + 100, 100, device0_), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, 8), 1);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_ + 4000, 96), 1);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_ + 4096, 8), 0);
  auto prefetch = CU13(cuMemPrefetchAsync, CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream);
  ASSERT_EQ(prefetch(base_ + 4106, 20, host_, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_ + 4096, 8), CU_DEVICE_CPU);

  // Accessed-by advice takes a device or the host; NUMA nodes must exist.
  CUmemLocation numa{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  EXPECT_EQ(advise(CU_MEM_ADVISE_SET_ACCESSED_BY, base_, kBytes, numa), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(advise(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, base_, kBytes, numa), CUDA_SUCCESS);
  CUmemLocation noSuchNode{CU_MEM_LOCATION_TYPE_HOST_NUMA, 4096};
  EXPECT_EQ(advise(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, base_, kBytes, noSuchNode),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(prefetch(base_, kBytes, noSuchNode, 0, nullptr), CUDA_ERROR_INVALID_VALUE);

  // The CPU device reads pageable memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS): hints on
  // the process's own memory are accepted and reported; unmapped memory is not.
  int pageable = 0;
  ASSERT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(
                &pageable, CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(pageable, 1);
  std::vector<char> system(3 * 4096);
  auto own = reinterpret_cast<CUdeviceptr>(system.data());
  ASSERT_EQ(advise(CU_MEM_ADVISE_SET_READ_MOSTLY, own, system.size(), device0_), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, own + 4096, 4096), 1);
  EXPECT_EQ(prefetch(own, system.size(), device0_, 0, nullptr), CUDA_SUCCESS);
  auto attach = CU(cuStreamAttachMemAsync, CUstream, CUdeviceptr, size_t, unsigned);
  EXPECT_EQ(attach(nullptr, own, system.size(), CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(attach(nullptr, own, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(advise(CU_MEM_ADVISE_SET_READ_MOSTLY, 4096, 4096, device0_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
}

TEST_F(Managed, RangeQueryErrors) {
  int value = 0;
  EXPECT_EQ(range_(&value, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, kBytes),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(range_(&value, 6, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, base_, kBytes),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(range_(nullptr, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, kBytes),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(range_(&value, 4, static_cast<CUmem_range_attribute>(99), base_, kBytes),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(range_(&value, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, kBytes + 1),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(range_(&value, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, base_, 0),
            CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr device = 0;
  ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&device, 64), CUDA_SUCCESS);
  EXPECT_EQ(range_(&value, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, device, 64),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(device), CUDA_SUCCESS);
}

using PrefetchBatch = CUresult (*)(CUdeviceptr*, size_t*, size_t, CUmemLocation*, size_t*, size_t,
                                   unsigned long long, CUstream);

TEST_F(Managed, BatchPrefetchAndDiscard) {
  auto batch = proc<PrefetchBatch>("cuMemPrefetchBatchAsync");
  auto both = proc<PrefetchBatch>("cuMemDiscardAndPrefetchBatchAsync");
  auto discard =
      CU13(cuMemDiscardBatchAsync, CUdeviceptr*, size_t*, size_t, unsigned long long, CUstream);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
  CUdeviceptr ptrs[] = {base_, base_ + 4096, base_ + 8192};
  size_t sizes[] = {4096, 4096, 4096};
  CUmemLocation locations[] = {device0_, host_};
  size_t firsts[] = {0, 2};
  ASSERT_EQ(batch(ptrs, sizes, 3, locations, firsts, 2, 0, stream), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, 8192), 0);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_ + 8192, 4096), CU_DEVICE_CPU);
  ASSERT_EQ(both(ptrs, sizes, 1, &host_, firsts, 1, 0, stream), CUDA_SUCCESS);
  EXPECT_EQ(attr(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, base_, 4096), CU_DEVICE_CPU);
  EXPECT_EQ(discard(ptrs, sizes, 3, 0, stream), CUDA_SUCCESS);

  size_t badFirsts[] = {1, 2};
  EXPECT_EQ(batch(ptrs, sizes, 3, locations, badFirsts, 2, 0, stream), CUDA_ERROR_INVALID_VALUE);
  size_t unordered[] = {0, 0};
  EXPECT_EQ(batch(ptrs, sizes, 3, locations, unordered, 2, 0, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(batch(ptrs, sizes, 1, locations, firsts, 2, 0, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(batch(ptrs, sizes, 3, locations, firsts, 2, 1, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(batch(ptrs, sizes, 3, locations, firsts, 2, 0, CU_STREAM_LEGACY),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(discard(ptrs, sizes, 0, 0, stream), CUDA_ERROR_INVALID_VALUE);
  size_t tooBig[] = {1, kBytes, 1};  // past the end of the allocation
  EXPECT_EQ(discard(ptrs, tooBig, 3, 0, stream), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

// ---- Location-based pool calls (CUDA 13) ----
// Zero bytes from a pool are NULL and nothing to free (cuda.core allocates and frees them);
// a pool destroyed while frees of its memory are still queued goes once they have run.
TEST_F(Driver, MemPoolZeroBytesAndDestroyWithQueuedFrees) {
  auto allocAsync = CU(cuMemAllocAsync, CUdeviceptr*, size_t, CUstream);
  auto fromPool = CU(cuMemAllocFromPoolAsync, CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  auto freeAsync = CU(cuMemFreeAsync, CUdeviceptr, CUstream);
  CUdeviceptr none = 1;
  ASSERT_EQ(allocAsync(&none, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(none, 0u);
  EXPECT_EQ(freeAsync(0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(allocAsync(nullptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(freeAsync(0, reinterpret_cast<CUstream>(&none)), CUDA_ERROR_INVALID_HANDLE);

  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  for (int round = 0; round < 40; ++round) {
    // Device pools and page-locked host pools in turn.
    props.location = round % 2 == 0 ? CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0}
                                    : CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
    CUmemoryPool pool = nullptr;
    ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &props),
              CUDA_SUCCESS);
    CUdeviceptr a = 0, b = 0, zero = 1;
    ASSERT_EQ(fromPool(&zero, 0, pool, stream), CUDA_SUCCESS);
    EXPECT_EQ(zero, 0u);
    ASSERT_EQ(fromPool(&a, 4096, pool, stream), CUDA_SUCCESS);
    ASSERT_EQ(fromPool(&b, 1 << 20, pool, stream), CUDA_SUCCESS);
    ASSERT_EQ(
        CU(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)(b, 7, 1 << 20, stream),
        CUDA_SUCCESS);
    // Freed in stream order, the pool destroyed before the frees have run: allowed, and the
    // pool's memory goes once they have.
    ASSERT_EQ(freeAsync(a, stream), CUDA_SUCCESS);
    ASSERT_EQ(freeAsync(b, stream), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  }
  // Destroyed with an allocation still outstanding: it stays usable and is freed later.
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &props), CUDA_SUCCESS);
  CUdeviceptr kept = 0;
  ASSERT_EQ(fromPool(&kept, 256, pool, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(pool), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)(kept, 3, 256, stream),
            CUDA_SUCCESS);
  unsigned char back[256] = {};
  ASSERT_EQ(CU(cuMemcpyDtoHAsync, void*, CUdeviceptr, size_t, CUstream)(back, kept, 256, stream),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(back[255], 3);
  ASSERT_EQ(freeAsync(kept, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);

  // Managed pools (as cuda.core makes them): with no location or a device's; the host uses what
  // they allocate; no handle types, no maximum size.
  for (CUmemLocation location : {CUmemLocation{CU_MEM_LOCATION_TYPE_NONE, 0},
                                 CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 0}}) {
    CUmemPoolProps managed{};
    managed.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
    managed.location = location;
    CUmemoryPool managedPool = nullptr;
    ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&managedPool, &managed),
              CUDA_SUCCESS);
    CUdeviceptr shared = 0;
    ASSERT_EQ(fromPool(&shared, 1024, managedPool, stream), CUDA_SUCCESS);
    ASSERT_EQ(
        CU(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)(shared, 9, 1024, stream),
        CUDA_SUCCESS);
    ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
    EXPECT_EQ(reinterpret_cast<unsigned char*>(shared)[1023], 9);
    unsigned int isManaged = 0;
    ASSERT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                  &isManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED, shared),
              CUDA_SUCCESS);
    EXPECT_EQ(isManaged, 1u);
    ASSERT_EQ(freeAsync(shared, stream), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(managedPool), CUDA_SUCCESS);
  }
  CUmemPoolProps managed{};
  managed.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
  managed.location = CUmemLocation{CU_MEM_LOCATION_TYPE_NONE, 0};
  managed.maxSize = 1 << 20;
  EXPECT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &managed),
            CUDA_ERROR_INVALID_VALUE);
  managed.maxSize = 0;
  managed.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&pool, &managed),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

TEST_F(Driver, MemPoolsByLocation) {
  auto getDefault =
      CU13(cuMemGetDefaultMemPool, CUmemoryPool*, CUmemLocation*, CUmemAllocationType);
  auto getCurrent = CU13(cuMemGetMemPool, CUmemoryPool*, CUmemLocation*, CUmemAllocationType);
  auto setCurrent = CU13(cuMemSetMemPool, CUmemLocation*, CUmemAllocationType, CUmemoryPool);
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemoryPool pool = nullptr, legacy = nullptr;
  ASSERT_EQ(getDefault(&pool, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuDeviceGetDefaultMemPool, CUmemoryPool*, CUdevice)(&legacy, 0), CUDA_SUCCESS);
  EXPECT_EQ(pool, legacy);

  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = device;
  CUmemoryPool created = nullptr;
  ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&created, &props),
            CUDA_SUCCESS);
  ASSERT_EQ(setCurrent(&device, CU_MEM_ALLOCATION_TYPE_PINNED, created), CUDA_SUCCESS);
  CUmemoryPool current = nullptr;
  ASSERT_EQ(getCurrent(&current, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  ASSERT_EQ(CU(cuDeviceGetMemPool, CUmemoryPool*, CUdevice)(&current, 0), CUDA_SUCCESS);
  EXPECT_EQ(current, created);
  // A stream-ordered allocation names its pool (CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE).
  CUdeviceptr fromCurrent = 0, fromCreated = 0;
  ASSERT_EQ(CU(cuMemAllocAsync, CUdeviceptr*, size_t, CUstream)(&fromCurrent, 256, nullptr),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemAllocFromPoolAsync, CUdeviceptr*, size_t, CUmemoryPool, CUstream)(
                &fromCreated, 256, legacy, nullptr),
            CUDA_SUCCESS);
  auto poolOf = [](CUdeviceptr pointer) {
    CUmemoryPool owner = nullptr;
    EXPECT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(
                  &owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, pointer + 8),
              CUDA_SUCCESS);
    return owner;
  };
  EXPECT_EQ(poolOf(fromCurrent), created);
  EXPECT_EQ(poolOf(fromCreated), legacy);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(fromCurrent, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemFreeAsync, CUdeviceptr, CUstream)(fromCreated, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(setCurrent(&device, CU_MEM_ALLOCATION_TYPE_PINNED, legacy), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(created), CUDA_SUCCESS);
  // Documented INVALID_VALUE cases; a pool on a host NUMA node may be shared between processes
  // (ipc_test.cpp's ShareableHostNumaPool), as POSIX file descriptors only.
  auto create = CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*);
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0};
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0};
  props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  props.handleTypes = CU_MEM_HANDLE_TYPE_WIN32;
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_NOT_SUPPORTED);
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, 4096};  // no such node
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST_NUMA, -1};
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_INVALID, 0};
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, 99};  // no such device
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);
  props.location = device;
  props.allocType = static_cast<CUmemAllocationType>(3);  // neither PINNED nor MANAGED
  EXPECT_EQ(create(&created, &props), CUDA_ERROR_INVALID_VALUE);

  CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0};
  CUmemLocation none{CU_MEM_LOCATION_TYPE_NONE, 0};
  CUmemLocation badNuma{CU_MEM_LOCATION_TYPE_HOST_NUMA, 4096};
  CUmemLocation badDevice{CU_MEM_LOCATION_TYPE_DEVICE, 99};
  EXPECT_EQ(getDefault(&pool, &badNuma, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getDefault(&pool, &none, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getDefault(&pool, &device, CU_MEM_ALLOCATION_TYPE_INVALID), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getDefault(&pool, nullptr, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getDefault(nullptr, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(getCurrent(&pool, &badDevice, CU_MEM_ALLOCATION_TYPE_PINNED),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(setCurrent(&device, CU_MEM_ALLOCATION_TYPE_PINNED, nullptr), CUDA_ERROR_INVALID_VALUE);
  // Get/set document INVALID_VALUE only: a location no pool of this platform matches, or a pool
  // of another location or type.
  EXPECT_EQ(getCurrent(&pool, &badNuma, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setCurrent(&host, CU_MEM_ALLOCATION_TYPE_PINNED, legacy), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setCurrent(&device, CU_MEM_ALLOCATION_TYPE_MANAGED, legacy), CUDA_ERROR_INVALID_VALUE);
}

// Pools of page-locked host memory (CU_MEM_LOCATION_TYPE_HOST) and of managed memory (the
// default pool of each preferred location): stream-ordered allocations of their kind of memory,
// reused, named by their pointers' attributes, each location with its own current pool.
TEST_F(Driver, HostAndManagedMemPools) {
  auto getDefault =
      CU13(cuMemGetDefaultMemPool, CUmemoryPool*, CUmemLocation*, CUmemAllocationType);
  auto getCurrent = CU13(cuMemGetMemPool, CUmemoryPool*, CUmemLocation*, CUmemAllocationType);
  auto setCurrent = CU13(cuMemSetMemPool, CUmemLocation*, CUmemAllocationType, CUmemoryPool);
  auto allocFrom = CU(cuMemAllocFromPoolAsync, CUdeviceptr*, size_t, CUmemoryPool, CUstream);
  auto freeAsync = CU(cuMemFreeAsync, CUdeviceptr, CUstream);
  auto pointerAttribute = [](CUpointer_attribute attribute, CUdeviceptr pointer) {
    unsigned long long value = 0;
    EXPECT_EQ(CU(cuPointerGetAttribute, void*, CUpointer_attribute, CUdeviceptr)(&value, attribute,
                                                                                 pointer),
              CUDA_SUCCESS);
    return value;
  };
  auto preferredLocation = [](CUdeviceptr pointer) {  // of its first 1000 bytes
    int preferred = -2;
    EXPECT_EQ(
        CU(cuMemRangeGetAttribute, void*, size_t, CUmem_range_attribute, CUdeviceptr, size_t)(
            &preferred, sizeof preferred, CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, pointer, 1000),
        CUDA_SUCCESS);
    return preferred;
  };
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0};
  CUmemLocation none{CU_MEM_LOCATION_TYPE_NONE, 0};
  auto attribute = [](CUdevice_attribute which) {
    int value = -1;
    EXPECT_EQ(CU(cuDeviceGetAttribute, int*, CUdevice_attribute, CUdevice)(&value, which, 0),
              CUDA_SUCCESS);
    return value;
  };
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED), 1);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED), 1);
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID), 0);  // the CPU device: the first node
  EXPECT_EQ(attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS), 1);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);

  // A created host pool: host memory, the host's to use at once, reused after a free.
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 7};  // the id is ignored
  CUmemoryPool hostPool = nullptr;
  ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&hostPool, &props),
            CUDA_SUCCESS);
  cuuint64_t keepAll = ~cuuint64_t{0};  // kept blocks stay in the pool past synchronisations
  ASSERT_EQ(CU(cuMemPoolSetAttribute, CUmemoryPool, CUmemPool_attribute, void*)(
                hostPool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keepAll),
            CUDA_SUCCESS);
  CUdeviceptr fromHost = 0;
  ASSERT_EQ(allocFrom(&fromHost, 4096, hostPool, stream), CUDA_SUCCESS);
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, fromHost), CU_MEMORYTYPE_HOST);
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, fromHost + 16),
            reinterpret_cast<unsigned long long>(hostPool));
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, fromHost) & 0xffffffff, 0u);
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(fromHost, 0x5a5a5a5a,
                                                                          1024, stream),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  const auto* words = reinterpret_cast<const uint32_t*>(fromHost);
  EXPECT_EQ(words[0], 0x5a5a5a5au);
  EXPECT_EQ(words[1023], 0x5a5a5a5au);
  cuuint64_t used = 0;
  ASSERT_EQ(CU(cuMemPoolGetAttribute, CUmemoryPool, CUmemPool_attribute, void*)(
                hostPool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used),
            CUDA_SUCCESS);
  EXPECT_EQ(used, 4096u);
  // Pool memory is freed with cuMemFree(Async), not cuMemFreeHost.
  EXPECT_EQ(CU(cuMemFreeHost, void*)(reinterpret_cast<void*>(fromHost)), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(freeAsync(fromHost, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  CUdeviceptr again = 0;
  ASSERT_EQ(allocFrom(&again, 4096, hostPool, stream), CUDA_SUCCESS);
  EXPECT_EQ(again, fromHost);  // the block the pool kept
  ASSERT_EQ(CU(cuMemFree, CUdeviceptr)(again), CUDA_SUCCESS);

  // Access: the host's always; a device's once granted.
  auto getAccess = CU(cuMemPoolGetAccess, CUmemAccess_flags*, CUmemoryPool, CUmemLocation*);
  auto setAccess = CU(cuMemPoolSetAccess, CUmemoryPool, const CUmemAccessDesc*, size_t);
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_MAX;
  ASSERT_EQ(getAccess(&flags, hostPool, &host), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(getAccess(&flags, hostPool, &device), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
  CUmemAccessDesc grant{device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ASSERT_EQ(setAccess(hostPool, &grant, 1), CUDA_SUCCESS);
  ASSERT_EQ(getAccess(&flags, hostPool, &device), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  CUmemAccessDesc readOnly{device, CU_MEM_ACCESS_FLAGS_PROT_READ};
  EXPECT_EQ(setAccess(hostPool, &readOnly, 1), CUDA_ERROR_NOT_SUPPORTED);
  CUmemAccessDesc hostNone{host, CU_MEM_ACCESS_FLAGS_PROT_NONE};
  EXPECT_EQ(setAccess(hostPool, &hostNone, 1), CUDA_ERROR_INVALID_VALUE);

  // The host's default and current pools; a host pool cannot be a device's.
  CUmemoryPool hostDefault = nullptr, current = nullptr, devicePool = nullptr;
  ASSERT_EQ(getDefault(&hostDefault, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  ASSERT_EQ(getDefault(&devicePool, &device, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_NE(hostDefault, nullptr);
  EXPECT_NE(hostDefault, devicePool);
  EXPECT_NE(hostDefault, hostPool);
  ASSERT_EQ(getCurrent(&current, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, hostDefault);
  ASSERT_EQ(setCurrent(&host, CU_MEM_ALLOCATION_TYPE_PINNED, hostPool), CUDA_SUCCESS);
  ASSERT_EQ(getCurrent(&current, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, hostPool);
  EXPECT_EQ(setCurrent(&host, CU_MEM_ALLOCATION_TYPE_PINNED, devicePool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(setCurrent(&device, CU_MEM_ALLOCATION_TYPE_PINNED, hostPool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuDeviceSetMemPool, CUdevice, CUmemoryPool)(0, hostPool), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(hostDefault), CUDA_ERROR_INVALID_VALUE);
  // Destroying the current pool makes the default current again.
  ASSERT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(hostPool), CUDA_SUCCESS);
  ASSERT_EQ(getCurrent(&current, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, hostDefault);

  // A pool on host NUMA node 0 (this host's first): host memory as the host pool's, the host's
  // to use by its node too; its node's own default and current pools, apart from the host's.
  CUmemLocation numa{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  props.location = numa;
  CUmemoryPool numaPool = nullptr;
  ASSERT_EQ(CU(cuMemPoolCreate, CUmemoryPool*, const CUmemPoolProps*)(&numaPool, &props),
            CUDA_SUCCESS);
  CUdeviceptr onNode = 0;
  ASSERT_EQ(allocFrom(&onNode, 3 << 20, numaPool, stream), CUDA_SUCCESS);  // 2 MiB blocks
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, onNode), CU_MEMORYTYPE_HOST);
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, onNode + 16),
            reinterpret_cast<unsigned long long>(numaPool));
  ASSERT_EQ(CU(cuMemsetD32Async, CUdeviceptr, unsigned, size_t, CUstream)(onNode, 0x1234, 3 << 18,
                                                                          stream),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<const uint32_t*>(onNode)[(3 << 18) - 1], 0x1234u);
  ASSERT_EQ(getAccess(&flags, numaPool, &numa), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(getAccess(&flags, numaPool, &host), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(freeAsync(onNode, stream), CUDA_SUCCESS);
  CUmemoryPool numaDefault = nullptr;
  ASSERT_EQ(getDefault(&numaDefault, &numa, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_NE(numaDefault, hostDefault);
  EXPECT_NE(numaDefault, numaPool);
  ASSERT_EQ(setCurrent(&numa, CU_MEM_ALLOCATION_TYPE_PINNED, numaPool), CUDA_SUCCESS);
  ASSERT_EQ(getCurrent(&current, &numa, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, numaPool);
  ASSERT_EQ(getCurrent(&current, &host, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, hostDefault);
  EXPECT_EQ(setCurrent(&host, CU_MEM_ALLOCATION_TYPE_PINNED, numaPool), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuMemPoolDestroy, CUmemoryPool)(numaPool), CUDA_SUCCESS);
  ASSERT_EQ(getCurrent(&current, &numa, CU_MEM_ALLOCATION_TYPE_PINNED), CUDA_SUCCESS);
  EXPECT_EQ(current, numaDefault);

  // Managed pools, one per preferred location: managed memory, preferring the pool's location.
  CUmemoryPool managedNone = nullptr, managedDevice = nullptr, managedHost = nullptr;
  ASSERT_EQ(getDefault(&managedNone, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  ASSERT_EQ(getDefault(&managedDevice, &device, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  ASSERT_EQ(getDefault(&managedHost, &host, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  EXPECT_NE(managedNone, managedDevice);
  EXPECT_NE(managedDevice, managedHost);
  EXPECT_NE(managedNone, devicePool);
  ASSERT_EQ(getCurrent(&current, &none, CU_MEM_ALLOCATION_TYPE_MANAGED), CUDA_SUCCESS);
  EXPECT_EQ(current, managedNone);
  EXPECT_EQ(setCurrent(&none, CU_MEM_ALLOCATION_TYPE_MANAGED, managedDevice),
            CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr managed = 0;
  ASSERT_EQ(allocFrom(&managed, 1000, managedDevice, stream), CUDA_SUCCESS);
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_IS_MANAGED, managed) & 0xffffffff, 1u);
  EXPECT_EQ(pointerAttribute(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, managed), CU_MEMORYTYPE_DEVICE);
  EXPECT_EQ(preferredLocation(managed), 0);
  ASSERT_EQ(getAccess(&flags, managedDevice, &device), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
  ASSERT_EQ(CU(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)(managed, 0x33, 1000,
                                                                              stream),
            CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(managed)[999], 0x33);
  ASSERT_EQ(freeAsync(managed, stream), CUDA_SUCCESS);
  CUdeviceptr noPreference = 0;
  ASSERT_EQ(allocFrom(&noPreference, 1000, managedNone, stream), CUDA_SUCCESS);
  EXPECT_EQ(preferredLocation(noPreference), CU_DEVICE_INVALID);
  ASSERT_EQ(freeAsync(noPreference, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing
