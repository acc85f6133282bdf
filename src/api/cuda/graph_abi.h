// The driver API's graph structures (layouts as in NVIDIA's cuda.h; sizes checked below and
// against cuda.h by tests/unit/api/graph_abi_test.cpp).
#pragma once

#include "rocuda/cuda_abi.h"

namespace rocuda::cuda {

enum CUgraphNodeType : int {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEMCPY = 1,
  CU_GRAPH_NODE_TYPE_MEMSET = 2,
  CU_GRAPH_NODE_TYPE_HOST = 3,
  CU_GRAPH_NODE_TYPE_GRAPH = 4,
  CU_GRAPH_NODE_TYPE_EMPTY = 5,
  CU_GRAPH_NODE_TYPE_WAIT_EVENT = 6,
  CU_GRAPH_NODE_TYPE_EVENT_RECORD = 7,
  CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL = 8,
  CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT = 9,
  CU_GRAPH_NODE_TYPE_MEM_ALLOC = 10,
  CU_GRAPH_NODE_TYPE_MEM_FREE = 11,
  CU_GRAPH_NODE_TYPE_BATCH_MEM_OP = 12,
  CU_GRAPH_NODE_TYPE_CONDITIONAL = 13
};

// CUgraphInstantiate_flags.
enum CUgraphInstantiate_flags : unsigned long long {
  CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH = 1,
  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD = 2,
  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH = 4,
  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY = 8
};

enum CUgraphExecUpdateResult : int {
  CU_GRAPH_EXEC_UPDATE_SUCCESS = 0,
  CU_GRAPH_EXEC_UPDATE_ERROR = 1,
  CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED = 2,
  CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED = 3,
  CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED = 4,
  CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED = 5,
  CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED = 6,
  CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE = 7,
  CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED = 8
};

enum CUgraphMem_attribute : int {
  CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT = 0,
  CU_GRAPH_MEM_ATTR_USED_MEM_HIGH = 1,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT = 2,
  CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH = 3
};

struct CUDA_KERNEL_NODE_PARAMS_v1 {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
};

struct CUDA_KERNEL_NODE_PARAMS_v2 {  // also _v3, the form inside CUgraphNodeParams
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void** kernelParams;
  void** extra;
  CUkernel kern;
  CUcontext ctx;
};

struct CUDA_MEMSET_NODE_PARAMS_v1 {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value;
  unsigned int elementSize;
  size_t width;
  size_t height;
};

struct CUDA_MEMSET_NODE_PARAMS_v2 {
  CUdeviceptr dst;
  size_t pitch;
  unsigned int value;
  unsigned int elementSize;
  size_t width;
  size_t height;
  CUcontext ctx;
};

struct CUDA_HOST_NODE_PARAMS {
  CUhostFn fn;
  void* userData;
};

struct CUDA_MEMCPY_NODE_PARAMS {
  int flags;
  int reserved;
  CUcontext copyCtx;
  CUDA_MEMCPY3D copyParams;
};

struct CUDA_MEM_ALLOC_NODE_PARAMS {
  CUmemPoolProps poolProps;
  const CUmemAccessDesc* accessDescs;
  size_t accessDescCount;
  size_t bytesize;
  CUdeviceptr dptr;
};

struct CUDA_MEM_FREE_NODE_PARAMS {
  CUdeviceptr dptr;
};

struct CUDA_CHILD_GRAPH_NODE_PARAMS {
  CUgraph graph;
  int ownership;  // CUgraphChildGraphNodeOwnership: 0 clone, 1 move
};

struct CUDA_EVENT_NODE_PARAMS {  // CUDA_EVENT_RECORD_NODE_PARAMS and _WAIT_
  CUevent event;
};

// CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 (cuGraphAddBatchMemOpNode's) has the same layout.
struct CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 {
  CUcontext ctx;
  unsigned int count;
  CUstreamBatchMemOpParams* paramArray;
  unsigned int flags;
};
using CUDA_BATCH_MEM_OP_NODE_PARAMS_v1 = CUDA_BATCH_MEM_OP_NODE_PARAMS_v2;

using CUgraphConditionalHandle = unsigned long long;
enum CUgraphConditionalNodeType : int {
  CU_GRAPH_COND_TYPE_IF = 0,
  CU_GRAPH_COND_TYPE_WHILE = 1,
  CU_GRAPH_COND_TYPE_SWITCH = 2
};
constexpr unsigned CU_GRAPH_COND_ASSIGN_DEFAULT = 1;
struct CUDA_CONDITIONAL_NODE_PARAMS {
  CUgraphConditionalHandle handle;
  CUgraphConditionalNodeType type;
  unsigned int size;
  CUgraph* phGraph_out;  // the driver's array of body graphs, filled in by node creation
  CUcontext ctx;
};
struct CUgraphNodeParams {
  CUgraphNodeType type;
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_KERNEL_NODE_PARAMS_v2 kernel;
    CUDA_MEMCPY_NODE_PARAMS memcpy;
    CUDA_MEMSET_NODE_PARAMS_v2 memset;
    CUDA_HOST_NODE_PARAMS host;
    CUDA_CHILD_GRAPH_NODE_PARAMS graph;
    CUDA_EVENT_NODE_PARAMS eventWait;
    CUDA_EVENT_NODE_PARAMS eventRecord;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc;
    CUDA_MEM_FREE_NODE_PARAMS free;
    CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 memOp;
    CUDA_CONDITIONAL_NODE_PARAMS conditional;
  };
  long long reserved2;
};

struct CUgraphExecUpdateResultInfo {
  CUgraphExecUpdateResult result;
  CUgraphNode errorNode;
  CUgraphNode errorFromNode;
};

// CUgraphEdgeData's ports (kernel nodes only) and dependency types.
constexpr unsigned char CU_GRAPH_KERNEL_NODE_PORT_DEFAULT = 0;
constexpr unsigned char CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC = 1;
constexpr unsigned char CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER = 2;
constexpr unsigned char CU_GRAPH_DEPENDENCY_TYPE_DEFAULT = 0;
constexpr unsigned char CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1;

struct CUgraphEdgeData {
  unsigned char from_port;
  unsigned char to_port;
  unsigned char type;
  unsigned char reserved[5];
};

struct CUDA_GRAPH_INSTANTIATE_PARAMS {
  cuuint64_t flags;
  CUstream hUploadStream;
  CUgraphNode hErrNode_out;
  int result_out;  // CUgraphInstantiateResult
};

// cuGraphKernelNodeGet/SetAttribute use the launch attribute values.
using CUkernelNodeAttrID = CUlaunchAttributeID;
using CUkernelNodeAttrValue = CUlaunchAttributeValue;

static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v1) == 56);
static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v2) == 72);
static_assert(sizeof(CUDA_MEMSET_NODE_PARAMS_v1) == 40);
static_assert(sizeof(CUDA_MEMSET_NODE_PARAMS_v2) == 48);
static_assert(sizeof(CUDA_MEMCPY_NODE_PARAMS) == 216);
static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) == 120);
static_assert(sizeof(CUDA_CONDITIONAL_NODE_PARAMS) == 32);
static_assert(sizeof(CUDA_BATCH_MEM_OP_NODE_PARAMS_v2) == 32);
static_assert(sizeof(CUgraphNodeParams) == 256);
static_assert(sizeof(CUgraphExecUpdateResultInfo) == 24);
static_assert(sizeof(CUgraphEdgeData) == 8);

}  // namespace rocuda::cuda
