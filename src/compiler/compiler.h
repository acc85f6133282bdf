// The compiler: PTX text -> ptx::Module -> target-neutral LLVM IR -> code for one target.
//
// This header is the whole interface the rest of Rocuda sees; it deliberately exposes no LLVM
// type, so that core and the backends compile without LLVM headers.
//
// The target-neutral IR contract (what translated kernels expect of the device runtime):
//  * A kernel `.entry K(params)` becomes `void K(ptr params)`; `params` points at the kernel
//    parameters packed as KernelInfo::params describes (CUDA's layout: each parameter at its
//    natural or declared alignment). `.func`s become internal functions.
//  * Special registers are calls `i32 __rocuda_sreg_<name>()` (`i64` for clock64/globaltimer),
//    with <name> from ptx::specialRegisterName without '%' and with '.' as '_': tid_x, ntid_y,
//    ctaid_z, nctaid_x, laneid, warpid, nwarpid, smid, nsmid, gridid, lanemask_lt, clock,
//    clock64, globaltimer, dynamic_smem_size, total_smem_size...
//  * `bar.sync 0` / `barrier.sync 0` / `__syncthreads` is `void __rocuda_barrier_sync(i32 id,
//    i32 threads)` (both 0: the whole block). Any other barrier id, a thread count, or an arrive
//    (`bar.arrive a, b`: counted, not waiting) is `void __rocuda_named_barrier(i32 id, i32 threads,
//    i32 arrive)` (threads 0 = every thread of the block), a wait of the CPU scheduler like the
//    warp collectives (op 7 below). `bar.red` at barrier 0 without a count is
//    `i32 __rocuda_barrier_reduce(i32 op, i32 id, i32 threads, i32 predicate)`; on a named barrier
//    or with a count it is `i32 phase = __rocuda_named_reduce_arrive(i32 id, i32 predicate)`, the
//    named barrier's wait, then `i32 __rocuda_named_reduce_result(i32 op, i32 id, i32 phase)`.
//  * Shared memory: every `.shared` variable gets an offset in the block's shared window
//    (KernelInfo::staticSharedBytes bytes, then dynamic shared memory, the unsized `.extern`
//    arrays, at KernelInfo::dynamicSharedOffset; a sized `.extern` array is static, as ptxas
//    allocates it). A shared-space address is that offset; the generic address
//    is `__rocuda_shared_base() + offset` (`ptr __rocuda_shared_base()`).
//  * `trap` is `void __rocuda_trap()` (noreturn); printf is a call to `i32 vprintf(ptr, ptr)`.
//  * `.ftz` on f32 flushes through `float __rocuda_flush_f32(float)`, an internal always-inline
//    function of the module (a subnormal becomes a zero of its sign). When no instruction of the
//    module needs f32 subnormals kept, the module flag "rocuda.f32_flush" is 1 and a target may
//    run it with f32 subnormals flushed and redefine the function (AMD GPUs: canonicalize).
//  * isspacep: `i32 __rocuda_is_shared(ptr generic)` and `i32 __rocuda_is_local(ptr generic)`
//    (0/1) say whether the address is in the calling block's shared window or the calling
//    thread's local memory; .const is a range check in the IR itself, .global neither of the three.
//  * Other external .funcs the PTX declares (malloc, free, __assertfail...) are called by value
//    with integer arguments of their .param sizes; the loader resolves them from `runtime` first,
//    then from the process (so the runtime must supply __assertfail).
//  * Barrier reductions (`bar.red`, __syncthreads_count/and/or): `i32 __rocuda_barrier_reduce(
//    i32 op, i32 id, i32 threads, i32 predicate)`, op 0 popc (returns the count), 1 and, 2 or
//    (return 0/1). Kernels calling it have usesBarriers set.
//  * Atomic read-modify-writes, compare-and-swaps, atomic loads/stores and fences are
//    system-wide in LLVM terms; their PTX scope (.cta, .cluster, .gpu; atom/red default to .gpu)
//    is `!rocuda.scope !{!"cta"}` metadata for targets with a scoped memory model (AMDGPU).
//  * Warp collectives (all convergent; `mask` is the PTX member mask; kernels calling any of them
//    have usesWarpCollectives set):
//      `void __rocuda_warp_sync(i32 mask)` (bar.warp.sync / __syncwarp);
//      `i64 __rocuda_shfl_sync(i32 mode, i32 value, i32 b, i32 c, i32 mask)`, mode 0 up, 1 down,
//        2 bfly, 3 idx; b and c as in PTX; returns the value in bits 0..31, the PTX predicate
//        (source lane in range) in bit 32;
//      `i32 __rocuda_vote_sync(i32 mode, i32 predicate, i32 mask)`, mode 0 all, 1 any, 2 uni
//        (return 0/1), 3 ballot (returns the ballot);
//      `i32 __rocuda_redux_sync(i32 op, i32 value, i32 mask)`, op 0 add, 1 min.u32, 2 max.u32,
//        3 min.s32, 4 max.s32, 5 and, 6 or, 7 xor;
//      `i64 __rocuda_match_sync(i32 mode, i64 value, i32 mask)`, mode 0 any, 1 all; returns the
//        lane mask in bits 0..31 and (match.all) the predicate in bit 32.
//      `void __rocuda_mma_sync(ptr tile, ptr lane, ptr record)`, a warp matrix instruction
//        (mma.sync, wmma.mma) of all 32 lanes: `record` is the calling lane's `[n x i64]`, its
//        input registers (A, B, then C; a 32-bit register in the low half of its slot) followed
//        by its output registers (D), which the call fills. `tile` is `void (ptr records)`:
//        given the 32 lanes' records (in lane order) it computes every lane's outputs at once
//        (the CPU device calls it once the warp has arrived; a lane absent from the block
//        contributes a record of zeros). `lane` is `[outputs x i64] (i64 inputs...)`, convergent:
//        the calling lane's outputs, other lanes' registers fetched with shuffles (AMD GPUs call
//        it in place of __rocuda_mma_sync). Both are internal functions of the module; records
//        have at most kMatrixRecordSlots slots.
//    `activemask` is `i32 __rocuda_activemask()` (convergent): the lanes of the warp executing
//    it. On the CPU device it is a warp collective too (usesWarpCollectives): a lane waits there
//    until the other live lanes of its warp wait somewhere, and the answer is the lanes waiting
//    at the same activemask (a diverged branch's lanes are not).
//  * mbarrier objects (`mbarrier.*`, 8 bytes in shared memory): bits 0..19 hold the arrivals
//    pending in the current phase, 20..39 the arrivals expected per phase, 40..60 the pending
//    transaction count (21-bit two's complement), 63 the current phase's parity; the neutral IR
//    updates the word with atomics. A state (mbarrier.arrive's result) holds the phase parity
//    at the arrival in bit 63 and the arrivals still pending after it in bits 0..19.
//    test_wait / try_wait are `i32 __rocuda_mbarrier_wait(ptr mbarrier, i64 state, i32 parity)`
//    (convergent): whether the phase `state` names (with parity != 0, the phase whose parity is
//    state's bit 0) has completed. On the CPU device it is a wait (usesWarpCollectives, op 6 in
//    WarpLanes) until the phase completes, or until nothing else in the block can run (then 0,
//    as try_wait's time limit allows); on AMD GPUs a test.
//  * `%envreg<n>` is `i32 __rocuda_sreg_envreg<n>()`: %envreg1 and %envreg2 are the high and low
//    halves of BlockContext::gridWorkspace (cooperative groups' grid workspace), the others 0.
//  * `.global` / `.const` variables are LLVM globals named as in the PTX, looked up by name.
//  * Textures and surfaces (tex, tld4, txq, suld.b, sust.b/.p, sured, suq): the handle is a 64-bit
//    texture/surface object, the address of a support::TextureView (support/texture_view.h).
//    Geometry codes: 0 1d, 1 2d, 2 3d, 3 a1d, 4 a2d, 5 cube, 6 acube; `out`/`in` point at 16
//    bytes (results as four 32-bit lanes); see device_library/texture_sampler.h for the details:
//      `void __rocuda_tex_fetch_f(ptr out, i64 tex, i32 geometry, float x, float y, float z,
//        i32 layer)` (f32 coordinates) and `__rocuda_tex_fetch_i` (same with i32 coordinates);
//      `void __rocuda_tex_gather(ptr out, i64 tex, i32 component, float x, float y, i32 layer)`;
//      `i32 __rocuda_tex_query(i64 tex, i32 query)` / `__rocuda_surf_query` (0 width, 1 height,
//        2 depth, 3 channel_data_type, 4 channel_order, 5 normalized_coords, 6 filter_mode,
//        7..9 addr_mode_0..2, 10 array_size, 11 num_mipmap_levels, 12 num_samples);
//      `i32 __rocuda_surf_load(ptr out, i64 surf, i32 geometry, i32 x, i32 y, i32 z, i32 layer,
//        i32 bytes, i32 mode)`, `__rocuda_surf_store(ptr in, ...)` (x in bytes; mode 0 trap,
//        1 clamp, 2 zero; a non-zero return in trap mode is followed by __rocuda_trap),
//        `__rocuda_surf_store_p(ptr in, ..., i32 kind, i32 mode)` (x in samples; kind -1: the
//        surface's type) and `i32 __rocuda_surf_reduce(i64 surf, i32 geometry, i32 x, i32 y,
//        i32 z, i32 layer, i64 value, i32 op, i32 type, i32 samples, i32 mode)` (sured: op 0 add,
//        1 min, 2 max, 3 and, 4 or; type 0 u32, 1 s32, 2 u64, 3 s64, 4 b32, 5 b64; samples 1
//        for .p, whose x is in samples and whose .b32/.b64 follow the surface's signedness).
//      `void __rocuda_tex_fetch_lod(ptr out, i64 tex, i32 geometry, float x, float y, float z,
//        i32 layer, float lod)` (tex.level) and `__rocuda_tex_fetch_grad(..., i32 layer,
//        float dPdx.x, .y, .z, float dPdy.x, .y, .z)` (tex.grad) choose a mipmapped texture's
//        level; plain tex samples level 0.
//  * ROCUDA_MEMCHECK (CompileOptions::memcheck, host code only): before every ld/ldu/st (scalar
//    or vector: one call for the whole vector), atom/red and cp.async, `void __rocuda_memcheck(
//    ptr address, i64 size, i32 access, i32 ptxLine, ptr source, ptr localBase, i64 localSize)`:
//    access is kMemcheckWrite | kMemcheckAtomic (atom/red, and the strong ld/st: .volatile,
//    .relaxed, .acquire, .release, which are no data races either) | kMemcheckAcquire (the access
//    acquires: an .acquire/.acq_rel load or atom; a fence or membar calls with a null address,
//    size 0 and only this flag) | space << kMemcheckSpaceShift (the
//    kMemcheck* space codes below, 3 bits; .param accesses are not checked); source is "file:line"
//    of the last `.loc` (nvcc -lineinfo) or null; for .local accesses in a function with one .local
//    variable (nvcc's depot), [localBase, localBase + localSize) is that variable, else null and 0.
//    The call needs the calling thread's identity and does not return when the access is invalid
//    (as trap).
//
// Host code (compileForHost) runs a whole block per call rather than one CUDA thread per call
// (KernelInfo::cpuExecution says which form each kernel took; BlockContext below is what the
// block forms receive):
//  * BlockLoop, for kernels that never wait for other threads: `void __rocuda_block_<K>(ptr
//    params, ptr context)` runs every thread of the block in turn (work-item loops the vectorizer
//    can widen). Before a call that needs the calling thread's identity (a `__rocuda_*` runtime
//    function, __assertfail or a function of the module) it calls
//    `void __rocuda_enter_thread(ptr context, i32 linearTid)`.
//  * Continuation, for kernels that wait at barriers or warp collectives: `i32
//    __rocuda_step_<K>(ptr params, ptr context, i32 linearTid, i32 tid.x, i32 tid.y, i32 tid.z,
//    i32 resume)` runs one thread from resume point `resume` (0 = the start) to its next wait
//    and returns a code: 0 when the thread finished, else (point << 2) | kind, with the point to
//    resume from and the kind of wait: 1 block barrier, 2 bar.red, 3 warp collective.
//    `i32 __rocuda_round_<K>(ptr params, ptr context, i32 resume, ptr codes, i32 limit)`
//    steps every thread of the block from the same point, storing each code at
//    codes[linearTid]; in a one-dimensional block only the threads below `limit` (the
//    others have exited: tails such as `if (tid < 32)`). It returns the code when all of
//    those threads gave the same one (the array then holds nothing the runtime may read),
//    else kMixedRoundCodes when the codes are stored as bytes (a kernel with at most
//    kMaxByteCodeWaits waits: a quarter of the stores) or kMixedWideRoundCodes when they are
//    stored as i32. A round whose threads all stop at one block barrier (kind 1), shfl,
//    __syncwarp, warp lockstep point or shuffle chain does not return (except in memcheck
//    builds): the round function completes that wait itself (the uniform copy below; for a
//    shfl, WarpLanes' value and result arrays swap places; a shuffle chain's steps run) and runs
//    the next round, so the runtime sees the first round that ends otherwise, and only that
//    round's codes. Outside memcheck builds, `resume` = point | kCompleteWaitFirst says that
//    threads [0, limit) all wait at the warp collective before `point`, one of those kinds:
//    the round function completes it, then runs from `point` (a round that stopped a prefix of
//    the threads at a shuffle chain and finished the rest: the runtime's completion would be
//    scalar code).
//    A bar.red announces its vote before returning, `void __rocuda_suspend_barrier_reduce(
//    ptr context, i32 linearTid, i32 op, i32 id, i32 threads, i32 predicate)`, and on resuming
//    `i32 __rocuda_resume_barrier_reduce(ptr context, i32 linearTid, i32 op)` gives the result.
//    A warp collective posts its operands in BlockContext::warpLanes and reads its result there
//    on resuming (WarpLanes below), without calling the runtime.
//    Values live across a wait, and the thread's local memory, are kept in the thread's
//    frame of KernelInfo::cpuFrameBytes bytes; BlockContext::frames holds threadCount of them
//    slot by slot (slot k of thread t at offset(k) * threadCount + t * size(k)), so that
//    consecutive threads' copies of a value are neighbours. A kernel that waits only at block
//    barriers keeps the values every thread computes alike in one slot per block instead:
//    KernelInfo::cpuUniformFrameBytes (U, a multiple of 32) bytes at frames - 2U hold them as
//    they were at the last barrier, U bytes at frames - U as written since; whenever a block
//    barrier (or bar.red) completes, the second copy is copied over the first (by the round
//    function for the barriers it completes, else by the runtime).
//    Other calls that need the thread are preceded by __rocuda_enter_thread, as above.
//  * Spin-waits: each acquire, relaxed or volatile load outside .local/.param/.const, and each
//    atom.cas, that sits in a loop is followed by a call `void F(ptr address, i64 value)` (the
//    value read, zero-extended); it needs no announcement of the calling thread. F is
//    __rocuda_spin_poll in a loop that ends for another reason (never for shared memory),
//    __rocuda_spin_wait in a spin-wait on global memory and __rocuda_spin_wait_block in one on
//    shared memory (also through a generic address made from a shared one). A thread reading the
//    same value again lets the other threads of its block run (when they run as fibers), then
//    yields its host thread, so that the thread it waits for, in its block or another, gets to run.
//    A spin-wait is a loop that reads one address until the value read lets it end (a
//    compare-and-swap: one expecting a fixed value, as a spin lock's). A kernel with a spin-wait on
//    its block's memory (KernelInfo::spinWaitsOnBlockMemory), or with any spin-wait and no barrier,
//    is a ThreadEntry: a block form runs one thread's stretch to its next barrier before the next
//    thread's, which a thread waiting for a later one would never leave; a ThreadEntry with a
//    spin-wait runs its threads as fibers.
//  * ThreadEntry (the slow path, only where the above cannot be formed: KernelInfo::
//    cpuSlowPathReason says why): `void K(ptr params)` runs one thread; threads that wait run as
//    fibers.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ptx/ast.h"
#include "support/result.h"

namespace rocuda::compiler {

// Bumped whenever generated code changes meaning: part of every cache key.
inline constexpr std::string_view kCompilerVersion = "rocuda-compiler-111";

// ROCUDA_MEMCHECK's access codes (see the contract above).
inline constexpr uint32_t kMemcheckWrite = 1;
inline constexpr uint32_t kMemcheckSpaceShift = 1;
inline constexpr uint32_t kMemcheckAtomic = 1u << 4;
inline constexpr uint32_t kMemcheckAcquire = 1u << 5;
inline constexpr uint32_t kMemcheckGeneric = 0, kMemcheckGlobal = 1, kMemcheckShared = 2,
                          kMemcheckLocal = 3, kMemcheckConst = 4;

// What a round returns when its threads stopped at different points (no step returns either):
// their codes stored as bytes, or as i32 (a kernel with more than kMaxByteCodeWaits waits).
inline constexpr uint32_t kMixedRoundCodes = 0xffffffffu;
inline constexpr uint32_t kMixedWideRoundCodes = 0xfffffffeu;
inline constexpr uint32_t kCompleteWaitFirst = 0x80000000u;
inline constexpr uint32_t kMaxByteCodeWaits = 62;  // (62 << 2) | 3 = 0xfb: every code a byte

// The CPU device's launch limits, which core enforces (DeviceBackend's device description
// reports them) and the block forms rely on: a block's extent and thread count, a grid's extent.
inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr uint32_t kMaxGridDim[3] = {2147483647, 65535, 65535};

// Where the threads of a block waiting in warp collectives post their operands and find their
// results: one array per field, indexed by linear thread id (so that the posts of a round
// vectorize). A collective's operands are op (0 sync, 1 shfl, 2 vote, 3 redux, 4 match,
// 5 activemask, 6 mbarrier wait, 7 named barrier, 8 mma, 9 lockstep point: host code only, see
// host_warp_lockstep.cpp; its order as value; 10 shuffle chain: host code only, below), value,
// mode, b, c and mask. Before
// returning from a wait in a collective the step stores value[t] and, of the others, those that
// are not constants of the code: op and the constant ones are the wait's (KernelInfo::
// cpuWarpSites), and the runtime writes them into the thread's entries itself before it reads
// them (a round of a block-wide shfl stores one value per lane, not six operands). activemask posts
// its call site as value[t] and all ones as mask[t]; an mbarrier wait posts the mbarrier's address
// as value[t], the state's low and high halves as b[t] and c[t] and the parity flag as mode[t]; a
// named barrier posts its id as value[t], its thread count as b[t] and the arrive flag as mode[t]
// (it has no result); an mma posts its record's address as value[t], its tile function's address in
// b[t] (low half) and c[t] (high half) and all ones as mask[t] (its outputs are in the record).
// When the collective completes the runtime fills result[t] before any member lane resumes: for
// vote, redux, match, activemask and mbarrier waits the lane's answer (the encodings of the
// functions above); for shfl a snapshot of value[t], from which the resuming lane reads its source
// lane's entry itself: the source as PTX's pseudo-code computes it, the lane's own when that is out
// of range or beyond the block's last thread. (The runtime may exchange the value and result arrays
// instead of copying: snapshots, rather than reading value[], let a lane that resumed first post
// its next collective without overwriting what later lanes still have to read.) The most i64 slots
// a warp matrix operation's record has (wmma.m16n16k16 with f16 inputs: 8 A, 8 B, 8 C and 8 D
// registers).
inline constexpr size_t kMatrixRecordSlots = 32;

// A shuffle chain (op 10, host code only: host_shfl_chains.cpp) is a warp's reduction by
// shuffles, `v = v OP shfl.down/bfly(v, d_k)` for k = 0..n-1, with constant offsets, clamp 31 and
// a full member mask, as one collective: `i32 __rocuda_shfl_chain(i32 op, i32 value, i32 mode,
// i32 schedule)`, all four but value constants of the code. It posts value; mode (1 down, 2 bfly)
// in mode[t], the schedule in b[t] and op (ShuffleChainOp) in c[t], mask all ones. Its result is
// each lane's v after the n steps, each step exactly as the shfl and OP it stands for: a lane
// whose source lane is out of range, or absent (beyond the block's last thread, finished), keeps
// its own value. (A NaN's bits may differ from the shuffles': the code canonicalizes NaNs where it
// observes a float's bits, canonicalize_nans.cpp, and the chain's value is such a float.)
enum class ShuffleChainOp : int32_t { FAdd, Add, And, Or, Xor, SMax, SMin, UMax, UMin };
// Schedule bits 28 and 29 say which threads read a chain's result when only lanes 0 do (what
// usually follows a warp reduction, `if (lane == 0) ...`), so that the steps may compute lane 0's
// result alone and leave the other lanes' unwritten: kShuffleChainReadByLaneZero, at most lane 0
// of each warp (a test of %laneid or of the thread's linear index); kShuffleChainReadByXLaneZero,
// at most threads whose threadIdx.x is a multiple of 32 (lanes 0 when blockDim.x is a multiple of
// 32, not otherwise).
inline constexpr int32_t kShuffleChainReadByLaneZero = 1 << 28;
inline constexpr int32_t kShuffleChainReadByXLaneZero = 1 << 29;
inline constexpr uint32_t kMaxShuffleChainSteps = 5;
// A schedule: the step count in bits 0..2, then each step's offset in 5 bits.
inline constexpr int32_t shuffleChainSchedule(const uint32_t* offsets, uint32_t steps) {
  uint32_t schedule = steps;
  for (uint32_t k = 0; k < steps; ++k) schedule |= (offsets[k] & 31) << (3 + 5 * k);
  return static_cast<int32_t>(schedule);
}
inline constexpr uint32_t shuffleChainSteps(int32_t schedule) {
  return static_cast<uint32_t>(schedule) & 7;
}
inline constexpr uint32_t shuffleChainOffset(int32_t schedule, uint32_t step) {
  return (static_cast<uint32_t>(schedule) >> (3 + 5 * step)) & 31;
}
// The lane a step of a chain reads for `lane` (itself when the source is out of range).
inline constexpr uint32_t shuffleChainSource(int32_t mode, uint32_t offset, uint32_t lane) {
  uint32_t source = mode == 1 ? lane + offset : lane ^ offset;
  return source <= 31 ? source : lane;
}
struct WarpLanes {
  // 64-bit values and results in two halves, so that a shfl, the collective kernels wait in most,
  // posts and reads 32-bit entries only (a round's vectors hold eight lanes, not four); the high
  // halves are written for every result but read back only for values of the wide collectives
  // (postsWideValue).
  uint32_t* value;
  uint32_t* result;
  uint32_t* valueHigh;
  uint32_t* resultHigh;
  int32_t* op;
  int32_t* mode;  // shfl/vote/match mode, redux operation
  int32_t* b;     // shfl operands
  int32_t* c;
  uint32_t* mask;  // PTX member mask
};

// Readable entries the value and result arrays of WarpLanes have before their first thread's
// and after their last one's: a shfl up or down by a constant reads its neighbour's snapshot
// whether or not that neighbour exists (then it keeps its own), so that a round's reads are
// contiguous vectors.
inline constexpr uint32_t kWarpLaneArrayPadding = 32;

// Whether collective `op` posts a value wider than 32 bits (match.b64's value, an mbarrier's or an
// mma record's address): only these write WarpLanes::valueHigh.
inline constexpr bool postsWideValue(int32_t op) { return op == 4 || op == 6 || op == 8; }

// What the block forms of a kernel receive (see the contract above); the layout is ABI between
// generated code and the CPU device runtime.
struct BlockContext {
  uint32_t ntid[3];
  uint32_t ctaid[3];
  uint32_t nctaid[3];
  uint32_t threadCount;
  uint8_t* shared;  // the block's shared-memory window
  uint8_t* frames;  // Continuation kernels: threadCount frames of cpuFrameBytes, slot by slot
  void* runtime;    // the device runtime's own block state (opaque to generated code)
  // Cooperative launches: the grid's workspace that cooperative groups' grid.sync() finds
  // through %envreg1/%envreg2 ({u32 size, u32 barrier}, as NVIDIA's driver lays it out); null
  // otherwise, which grid_group::is_valid() reports as false.
  void* gridWorkspace;
  // Continuation kernels: the block's warp-collective lanes (WarpLanes above), in the context
  // itself so that generated code finds each array in memory it may always read (the context is
  // a dereferenceable argument: a lane array's address loaded under `if (lane == 0)` leaves the
  // round's loop instead of becoming a gather in every vector). Null arrays in other kernels.
  WarpLanes warpLanes;
  // Continuation kernels that chain blocks (KernelInfo::cpuChainsBlocks): how many more blocks,
  // the next ones in ctaid order (x fastest), the round function may run itself once this one
  // has finished, advancing ctaid and counting down. 0 elsewhere.
  uint32_t blocksLeft;
};

// A lockstep point's value (`__rocuda_warp_lockstep(i32)`, host_warp_lockstep.cpp): its order
// (reverse post-order in its function) in the low 31 bits, and this bit when its lanes store
// after it (a store's or a block fence's point; after the others they only load until their
// next point).
inline constexpr uint32_t kLockstepStorePoint = 1u << 31;

// A Continuation's wait: for a warp collective its op and the operands that are constants of
// the code, which its lanes do not post (WarpLanes above); op is -1 for a block barrier or
// bar.red.
struct WarpWaitSite {
  enum ConstantField : uint32_t { kMode = 1, kB = 2, kC = 4, kMask = 8 };
  int32_t op = -1;
  uint32_t constants = 0;  // ConstantField bits: which of the fields below are given here
  int32_t mode = 0;
  int32_t b = 0;
  int32_t c = 0;
  uint32_t mask = 0;
};

// How a kernel's host code runs a block (see the contract above).
enum class CpuExecution : uint8_t { ThreadEntry, BlockLoop, Continuation };

// Symbol names of a kernel's block forms.
std::string blockLoopSymbol(std::string_view kernel);
std::string continuationSymbol(std::string_view kernel);
std::string roundSymbol(std::string_view kernel);
// The name a kernel's lockstep form goes by (not a PTX identifier: no clash with a kernel).
std::string lockstepName(std::string_view kernel);
// A grid-stride kernel's flat form and its extent function (KernelInfo::cpuFlat).
std::string flatSymbol(std::string_view kernel);
std::string flatExtentSymbol(std::string_view kernel);
// A BlockLoop kernel's streaming form (KernelInfo::cpuStreamingStoreBytes).
std::string streamingBlockLoopSymbol(std::string_view kernel);

struct KernelParamInfo {
  uint32_t offset = 0;  // in the packed parameter buffer
  uint32_t size = 0;
  uint32_t alignment = 1;
};

// The newest PTX ISA version the compiler knows: CUDA 13.0's, the driver version Rocuda reports.
// Later minor versions of the same major one are read too (libraries built with newer toolkits,
// such as cuDNN 9.2x, carry only such PTX): an instruction the parser does not know still fails
// with its location, and a log line says the module is newer. A newer major version is refused
// (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), as NVIDIA's driver refuses PTX newer than its own.
inline constexpr uint32_t kNewestPtxVersion[2] = {9, 0};

// sm_80's reserved shared memory per block (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK
// for compute capability 8.0 and later; %reserved_smem_offset_* name it).
inline constexpr uint32_t kReservedSharedBytes = 1024;

struct KernelInfo {
  std::string name;
  std::vector<KernelParamInfo> params;
  uint32_t paramBufferSize = 0;      // bytes, including trailing padding to the largest alignment
  // Bytes up to the end of the last parameter, without that padding: what callers of the device
  // runtime's cudaGetParameterBuffer ask for (Thrust's and CUB's device-side launches do).
  uint32_t parametersEnd() const {
    uint32_t end = 0;
    for (const KernelParamInfo& param : params) end = std::max(end, param.offset + param.size);
    return end;
  }
  // Static shared memory of the kernel's window, sm_80's reserved region included when
  // usesReservedShared (CUDA reports the kernel's static shared memory without it: the driver
  // reserves that region for every block, see kReservedSharedBytes).
  uint32_t staticSharedBytes = 0;
  uint32_t dynamicSharedOffset = 0;  // where dynamic (extern) shared memory starts in the window
  // .local depots of the kernel and of every function it can call (each counted once). Depots
  // are allocas: they live on the stack of the thread (or fiber) running the kernel, which
  // therefore needs this much plus the frames of the generated code.
  uint32_t localBytesPerThread = 0;
  std::array<uint32_t, 3> maxntid{0, 0, 0};  // .maxntid, 0 when absent
  std::array<uint32_t, 3> reqntid{0, 0, 0};  // .reqntid, 0 when absent
  std::array<uint32_t, 3> reqnctapercluster{0, 0, 0};  // __cluster_dims__, 0 when absent
  bool explicitCluster = false;  // .explicitcluster: a launch must name a cluster size
  // AMD code: reads %dynamic_smem_size, %total_smem_size, %aggr_smem_size or
  // %is_explicit_cluster, which the host passes as a hidden last kernel argument
  // (amdgpu_codegen.h: AmdgpuLaunchRegisters).
  bool readsLaunchRegisters = false;
  bool usesBarriers = false;  // after inlining, calls __rocuda_barrier_sync or _barrier_reduce
  bool usesWarpCollectives = false;  // after inlining, calls a warp collective (see above)
  bool spinWaits = false;  // after inlining, holds a spin-wait (__rocuda_spin_wait[_block])
  bool spinWaitsOnBlockMemory = false;  // ... on memory of its own block (_block): ThreadEntry
  bool usesReservedShared = false;  // reads %reserved_smem_offset_*: the region is in its window
  // Can call device printf / malloc or free: CUDA's printf FIFO and malloc heap sizes are fixed
  // once such a kernel has been launched (cuCtxSetLimit).
  bool usesPrintf = false;
  bool usesDeviceMalloc = false;
  // Launches grids from device code (dynamic parallelism: the device runtime's
  // __cudaCDP2LaunchDevice[V2]), which a graph launched from the device may not hold.
  bool launchesGrids = false;
  // Launches graphs (device-side cudaGraphLaunch), or updates device-updatable kernel nodes
  // (cudaGraphKernelNodeSet*, ...UpdatesApply): what an executable graph's kernel node, like
  // dynamic parallelism, may not take up once instantiated.
  bool launchesGraphs = false;
  bool updatesGraphNodes = false;
  CpuExecution cpuExecution = CpuExecution::ThreadEntry;  // host code only
  uint32_t cpuFrameBytes = 0;     // Continuation: bytes of each thread's frame
  uint32_t cpuUniformFrameBytes = 0;  // Continuation: bytes of one copy of the uniform slots
  std::vector<WarpWaitSite> cpuWarpSites;  // Continuation: its waits, by resume point - 1
  // BlockLoop kernels with a grid- or block-stride loop also have a lockstep form: a
  // Continuation (symbols of lockstepName) that yields at the loop's back edge, so that the
  // block's threads take their iterations together (see host_block_forms.cpp).
  bool cpuLockstep = false;
  // Continuation: the round function goes on to the next block itself when the block's threads
  // have all finished and BlockContext::blocksLeft allows (its rounds call no function, so no
  // block leaves state in the runtime).
  bool cpuChainsBlocks = false;
  // BlockLoop: bytes each thread stores through the vectorised stores of the kernel's streaming
  // form (streamingBlockLoopSymbol: those stores non-temporal, for launches that store more than
  // the caches hold); 0 when it has none.
  uint32_t cpuStreamingStoreBytes = 0;
  uint32_t cpuLockstepFrameBytes = 0;
  uint32_t cpuLockstepUniformFrameBytes = 0;  // its block-uniform slots (the stride counter)
  // While compiling only (not kept in ModuleInfo): the stride loops the lockstep form yields in.
  // Where the BlockLoop form's work-item loop was interchanged with every one of them (passes of
  // one iteration of every thread, host_stride_interchange.cpp), that form is the faster one and
  // the lockstep form is dropped.
  uint32_t cpuLockstepLoops = 0;
  // A BlockLoop kernel that is one grid-stride loop whose iterations know their thread only
  // through the index also has a flat form: `void __rocuda_flat_<K>(ptr params, ptr context, i64
  // begin, i64 end)` runs the loop's iterations [begin, end), a range no longer than the grid's
  // threads (each iteration another thread's; a thread's iterations are a grid's threads apart
  // and must run in order), and `i64 __rocuda_flat_extent_<K>(ptr params, ptr context)` gives
  // the launch's iteration count n, or -1 when the flat form cannot run it (not
  // one-dimensional, over 2^31 - 1 threads, an index that would wrap). The context of both
  // holds the launch's extent (ntid, nctaid, threadCount) with ctaid 0 and no shared memory.
  bool cpuFlat = false;
  std::string cpuSlowPathReason;  // ThreadEntry although block forms were asked for: why
  // Not empty when the kernel reaches an instruction the translator refuses (the diagnostic, with
  // the instruction's line and column): its code traps, and a launch fails with NotSupported.
  std::string unsupported;
};

// The symbol of a kernel's host code in the form it took.
std::string hostEntrySymbol(const KernelInfo& kernel);

struct GlobalInfo {
  std::string name;
  ptx::StateSpace space = ptx::StateSpace::Global;  // Global or Const
  uint64_t size = 0;
  bool initialized = false;  // has an initializer; otherwise zero when loaded
  bool managed = false;      // .attribute(.managed): a __managed__ variable, managed memory
};

struct ModuleInfo {
  std::vector<KernelInfo> kernels;
  std::vector<GlobalInfo> globals;  // .global and .const variables defined (not .extern)
  // Host code of a module's HostUnit::Globals unit: its object holds the globals only, and each
  // kernel is compiled as a unit of its own (its KernelInfo here lacks the fields compiling it
  // fills: usesBarriers, usesWarpCollectives and the cpu* ones).
  bool kernelsCompiledSeparately = false;

  const KernelInfo* findKernel(std::string_view name) const;
  const GlobalInfo* findGlobal(std::string_view name) const;

  // A compact binary form, for the code cache. deserialize returns an error on malformed bytes.
  std::vector<uint8_t> serialize() const;
  static Result<ModuleInfo> deserialize(const uint8_t* data, size_t size);
};

// Which memory accesses of host code are lockstep points of the warp, for code that relies on a
// warp's lanes executing together without __syncwarp (ROCUDA_WARP_LOCKSTEP,
// host_warp_lockstep.cpp).
enum class WarpLockstep : uint8_t {
  Off,
  VolatileShared,  // volatile shared memory: the classic warp-synchronous reductions
  AllMemory,       // every load and store outside the thread's own memory (slow)
};

struct CompileOptions {
  int optLevel = 2;  // 0..3
  // Host code: compile kernels into block forms (BlockLoop / Continuation). When false every
  // kernel is a ThreadEntry (used by tests that drive single threads).
  bool blockFunctions = true;
  // Host code: check every memory access (ROCUDA_MEMCHECK; the __rocuda_memcheck contract).
  bool memcheck = false;
  // Host code: the runtime runs all threads of a block on one host thread, switching only at
  // waits (the CPU device does, block forms or fibers), so atomics on shared memory may be plain
  // accesses. False for a runtime that runs a block's threads as OS threads (unit tests).
  bool blockOnOneHostThread = true;
  WarpLockstep warpLockstep = WarpLockstep::VolatileShared;
};

// Host code for one PTX module: a relocatable object file for this machine plus its ModuleInfo.
struct HostObject {
  ModuleInfo info;
  std::vector<uint8_t> object;

  // The code cache's entry format: ModuleInfo then the object. deserialize checks every size.
  std::vector<uint8_t> serialize() const;
  static Result<HostObject> deserialize(const uint8_t* data, size_t size);
};

// The host target code is generated for ("x86_64-pc-linux-gnu, znver4, +avx2,..."): part of
// every cache key, since an object built for one CPU may not run on another.
std::string hostTargetName();

// Which part of a PTX module compileForHost compiles. The CPU device compiles a module's
// globals when it is loaded and each kernel on its first launch: libraries such as CuPy's CUB
// module hold hundreds of kernels (half a million PTX instructions) of which a program launches
// a few, and compiling all of them took more than half an hour.
struct HostUnit {
  enum class Kind : uint8_t {
    WholeModule,  // every kernel and global
    // Every global, after translating and checking the whole module (so that a module that
    // cannot be compiled fails to load, as with WholeModule); ModuleInfo::kernels describes
    // every kernel. When code of the module takes a function's address, the whole module
    // instead (a function compiled into several units would have several addresses) and
    // ModuleInfo::kernelsCompiledSeparately is false.
    Globals,
    Kernel,  // `kernel` and the functions it reaches; the globals are the Globals unit's
  };
  Kind kind = Kind::WholeModule;
  std::string kernel;
};

// Parse, check, translate, optimise and emit host machine code for `unit` of the module. Errors:
// InvalidPtx (message holds the formatted diagnostics), UnsupportedPtx, NotFound (no such
// kernel), Internal.
Result<HostObject> compileForHost(std::string_view ptxText, std::string_view moduleName,
                                  const CompileOptions& options, const HostUnit& unit = {});

// Host code loaded into this process (ORC JIT), with its symbols resolved.
class HostCode {
 public:
  virtual ~HostCode() = default;
  // Address of a kernel (`void(void* params)`) or of a global variable; nullptr if absent.
  virtual void* lookup(std::string_view name) = 0;
  // Link another unit of the same module (HostUnit::Kernel) against what is loaded: its
  // undefined globals resolve to the loaded units' definitions. InvalidImage as loadHostCode.
  virtual Status add(const HostObject& unit) = 0;
};

// Symbols the generated code calls (__rocuda_* and vprintf), supplied by the backend's runtime.
using RuntimeSymbols = std::vector<std::pair<std::string, void*>>;

// Load host code into the process. Error InvalidImage if the object cannot be linked (e.g. it
// calls a runtime function not in `runtime`: the message names it).
Result<std::unique_ptr<HostCode>> loadHostCode(const HostObject& object,
                                               const RuntimeSymbols& runtime);

}  // namespace rocuda::compiler
