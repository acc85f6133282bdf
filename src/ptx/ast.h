// The PTX abstract syntax tree: what the parser produces and the compiler consumes.
//
// Design: compact, because modules of CUB/Thrust kernels run to tens of megabytes of text.
// Instructions (48 bytes) and operands (16 bytes) point into the module's Arena for their
// variable-length parts; registers are resolved by the parser to per-function indices and stored
// as declarations (a `%r<100>` range is one entry), so the compiler never looks names up; nested
// `{ }` scopes are flattened (a shadowing declaration gets its own index). Instructions keep their
// modifiers as an ordered list of spellings without the leading dot, except the three kinds every
// consumer needs decoded: types, state space and vector width. Names of functions, variables and
// declarations are std::strings owned by the module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rocuda::ptx {

struct SourceLocation {
  uint32_t line = 0;    // 1-based
  uint32_t column = 0;  // 1-based
};

enum class ScalarType : uint8_t {
  None,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, TF32, F32, F64,
  E4M3, E5M2, E4M3x2, E5M2x2, E2M3x2, E3M2x2, E2M1x2, UE8M0x2,
  S4, U4, S2, U2, B1,
  S16x2, U16x2,  // packed 16-bit integers (add/sub/min/max, PTX ISA 8.0)
  Pred,
  TexRef, SamplerRef, SurfRef,  // opaque handles of .texref / .samplerref / .surfref (8 bytes)
};

// Size in bytes of a scalar type (0 for None; predicates count as 1; sub-byte types round up to 1).
unsigned scalarTypeSize(ScalarType type);
// The untyped type of `bytes` bytes (.b8, .b16, .b32, .b64, .b128); None for any other size.
ScalarType bitTypeOfSize(unsigned bytes);
bool isSignedInteger(ScalarType type);
bool isUnsignedInteger(ScalarType type);  // U* only
bool isBitType(ScalarType type);          // B*
bool isInteger(ScalarType type);          // S*, U* and B*
bool isFloat(ScalarType type);            // F16..F64, BF16*, TF32 and the fp8/fp6/fp4 types
const char* scalarTypeName(ScalarType type);  // "u32", "f16x2", "pred", ...

enum class StateSpace : uint8_t {
  None,     // no state space given (generic addressing for ld/st/atom)
  Reg,
  Sreg,
  Const,
  Global,
  Local,
  Param,
  Shared,   // .shared and .shared::cta
  SharedCluster,  // .shared::cluster
  Tex,
};
const char* stateSpaceName(StateSpace space);

enum class Linkage : uint8_t { Default, Visible, Extern, Weak, Common };

// How an instruction spelled its state space where two spellings decode to one StateSpace:
// `.shared` / `.shared::cta`, `.param` / `.param::entry` / `.param::func`. ptxas requires the
// explicit spelling in some instructions (tcgen05.alloc, cp.async.bulk...) and a newer .version
// for it, so printing and checking need it.
enum class SpaceSpelling : uint8_t { Plain, Cta, Entry, Func };
// The spelling of a state-space suffix without its dot ("shared::cta" -> Cta; Plain otherwise),
// and the part a spelling adds to the space's name ("::cta", "" for Plain).
SpaceSpelling spaceSpellingOf(std::string_view suffix);
const char* spaceSpellingSuffix(SpaceSpelling spelling);

// Special registers (%tid.x, %laneid, ...). Vector ones are split per component.
enum class SpecialRegister : uint8_t {
  TidX, TidY, TidZ,
  NtidX, NtidY, NtidZ,
  CtaidX, CtaidY, CtaidZ,
  NctaidX, NctaidY, NctaidZ,
  ClusterIdX, ClusterIdY, ClusterIdZ,
  NclusterIdX, NclusterIdY, NclusterIdZ,
  ClusterCtaIdX, ClusterCtaIdY, ClusterCtaIdZ,
  ClusterNctaIdX, ClusterNctaIdY, ClusterNctaIdZ,
  ClusterCtaRank, ClusterNctaRank, IsExplicitCluster,
  LaneId, WarpId, NwarpId, SmId, NsmId, GridId,
  LanemaskEq, LanemaskLe, LanemaskLt, LanemaskGe, LanemaskGt,
  Clock, ClockHi, Clock64, GlobalTimer, GlobalTimerLo, GlobalTimerHi,
  DynamicSmemSize, TotalSmemSize, AggrSmemSize,
  Envreg,  // %envreg<n>: Operand::envregIndex holds n
  Pm,      // %pm0..%pm7 and %pm0_64..: Operand::envregIndex holds n
  CurrentGraphExec,
  ReservedSmemOffsetBegin, ReservedSmemOffsetEnd, ReservedSmemOffsetCap,
  ReservedSmemOffsetN,  // %reserved_smem_offset_0 / _1: Operand::envregIndex holds n
  WarpSize,             // the predefined identifier WARP_SZ (nvcc's `warpSize`)
  Pm64,                 // %pm0_64..%pm7_64: Operand::envregIndex holds n
};
const char* specialRegisterName(SpecialRegister reg);  // "%tid.x", ...
// The numbered ones (%envreg<n>, %pm<n>, %pm<n>_64, %reserved_smem_offset_<n>): their name
// lacks the number, which is Operand::envregIndex.
bool isNumberedSpecialRegister(SpecialRegister reg);

// Every instruction of the PTX ISA. The parser rejects any other opcode.
#define ROCUDA_PTX_OPCODES(X)                                                                     \
  X(abs) X(activemask) X(add) X(addc) X(alloca) X(and_, "and") X(applypriority) X(atom) X(bar)   \
  X(barrier) X(bfe) X(bfi) X(bfind) X(bmsk) X(bra) X(brev) X(brkpt) X(brx) X(call) X(clz)        \
  X(cnot) X(copysign) X(cos) X(cp) X(cvt) X(cvta) X(createpolicy) X(discard) X(div) X(dp2a)      \
  X(dp4a) X(elect) X(ex2) X(exit) X(fence) X(fma) X(fns) X(getctarank) X(griddepcontrol)          \
  X(isspacep) X(istypep) X(ld) X(ldmatrix) X(ldu) X(lg2) X(lop3) X(mad) X(mad24) X(madc)         \
  X(mapa) X(match) X(max) X(mbarrier) X(membar) X(min) X(mma) X(mov) X(movmatrix) X(mul)         \
  X(mul24) X(multimem) X(nanosleep) X(neg) X(not_, "not") X(or_, "or") X(pmevent) X(popc)        \
  X(prefetch) X(prefetchu) X(prmt) X(rcp) X(red) X(redux) X(rem) X(ret) X(rsqrt) X(sad)          \
  X(selp) X(set) X(setmaxnreg) X(setp) X(shf) X(shfl) X(shl) X(shr) X(sin) X(slct) X(sqrt)       \
  X(st) X(stackrestore) X(stacksave) X(stmatrix) X(sub) X(subc) X(suld) X(suq) X(sured) X(sust)  \
  X(szext) X(tanh) X(tcgen05) X(testp) X(tex) X(tld4) X(trap) X(txq) X(vabsdiff) X(vabsdiff2)    \
  X(vabsdiff4) X(vadd) X(vadd2) X(vadd4) X(vavrg2) X(vavrg4) X(vmad) X(vmax) X(vmax2) X(vmax4)   \
  X(vmin) X(vmin2) X(vmin4) X(vote) X(vset) X(vset2) X(vset4) X(vshl) X(vshr) X(vsub) X(vsub2)   \
  X(vsub4) X(wgmma) X(wmma) X(xor_, "xor") X(clusterlaunchcontrol) X(st_async, "st.async")       \
  X(red_async, "red.async") X(cp_async, "cp.async") X(tensormap) X(cvt_pack, "cvt.pack")

enum class Opcode : uint16_t {
#define ROCUDA_PTX_OPCODE_ENUM(name, ...) name,
  ROCUDA_PTX_OPCODES(ROCUDA_PTX_OPCODE_ENUM)
#undef ROCUDA_PTX_OPCODE_ENUM
};
// The PTX spelling of an opcode ("and", "add", ...). Opcodes whose spelling contains a dot
// (cp.async, st.async, red.async, cvt.pack) are matched by the parser before the generic split;
// the parser may equally produce `cp` with modifier "async": consumers accept both.
const char* opcodeName(Opcode opcode);

struct Immediate {
  enum class Kind : uint8_t {
    Integer,   // bits holds the two's-complement value, sign-extended to 64 bits
    F32Bits,   // 0fXXXXXXXX: bits holds the 32 raw bits
    F64Bits,   // 0dXXXXXXXXXXXXXXXX: bits holds the 64 raw bits
    Double,    // decimal float literal (1.5, 1e-3): value holds it (and bits its IEEE bits)
  };
  Kind kind = Kind::Integer;
  uint64_t bits = 0;
  double value = 0.0;
};

// Storage for the variable-length parts of a module: operand arrays, modifier spellings,
// symbol references, names. A bump allocator with stable addresses, so that the AST can refer
// to its parts with plain pointers and a multi-megabyte module costs a few bytes per token
// instead of one heap block per operand. What the parser put in an arena is never changed
// afterwards: code that rewrites a module (the linker) allocates new parts and repoints to them.
class Arena {
 public:
  Arena() = default;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void* allocate(size_t bytes, size_t alignment);
  // A copy of `count` trivially copyable elements (nullptr when count is 0).
  template <class T>
  T* copy(const T* elements, size_t count) {
    if (count == 0) return nullptr;
    T* out = static_cast<T*>(allocate(sizeof(T) * count, alignof(T)));
    for (size_t i = 0; i < count; ++i) out[i] = elements[i];
    return out;
  }
  // A copy of one trivially copyable value, for the AST to point at.
  template <class T>
  const T* create(const T& value) {
    return copy(&value, 1);
  }
  std::string_view copyString(std::string_view text);
  // Like copyString, but equal strings share one copy (modifier spellings, labels, symbols).
  std::string_view intern(std::string_view text);
  size_t bytesReserved() const { return reserved_; }

 private:
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* cursor_ = nullptr;
  char* end_ = nullptr;
  size_t nextChunk_ = 4096;
  size_t reserved_ = 0;
  std::unordered_set<std::string_view> interned_;
};

// A read-only view of `size` elements owned by an Arena.
template <class T>
class Span {
 public:
  Span() = default;
  Span(const T* data, size_t size) : data_(data), size_(static_cast<uint32_t>(size)) {}
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t index) const { return data_[index]; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }

 private:
  const T* data_ = nullptr;
  uint32_t size_ = 0;
};

class Operand;

// A name used as a value, or the base of an address: `var+4`, `bra LABEL`, `[var+8]`, and the
// texture forms `[tex, {x, y}]` and `[tex, sampler, {x, y}]` (texmode_independent): the parts
// after the base, in order. Lives in the module's arena.
struct SymbolReference {
  std::string_view name;
  int64_t offset = 0;
  const Operand* coordinates = nullptr;
  uint32_t coordinateCount = 0;  // 0, 1 (coordinates) or 2 (sampler, coordinates)
};

// [base + offset]: base is a register, a variable/function name, or nothing (absolute address).
// A value built on demand by Operand::address().
struct Address {
  enum class BaseKind : uint8_t { None, Register, Symbol };
  BaseKind baseKind = BaseKind::None;
  uint32_t reg = 0;         // when Register: index into the function's registers
  std::string_view symbol;  // when Symbol
  int64_t offset = 0;
};

// One operand in 16 bytes: the kind, a 32-bit index (register, %envreg number, element count)
// and a 64-bit payload (immediate bits, an address offset, or a pointer into the arena).
// Positions of operands are not stored: diagnostics name the instruction and the operand's
// ordinal, and the parser checks operands while it still has their tokens.
class Operand {
 public:
  enum class Kind : uint8_t {
    Register,         // reg()
    SpecialRegister,  // special() (+ envregIndex() for %envreg<n> / %pm<n>)
    Immediate,        // imm()
    Symbol,           // symbol(), symbolOffset(): a variable, function or label name used as a
                      //   value (mov r, var; bra LABEL; call f; ...)
    Address,          // address(); texture/surface forms `[tex, {x, y}]` keep the coordinate
                      //   vector as the single entry of elements(), `[tex, smp, {x, y}]` the
                      //   sampler and the vector
    Vector,           // elements(): {a, b, c, d} (Register, Immediate or Sink elements)
    List,             // elements(): parenthesised list (call arguments and return values)
    Sink,             // `_`
  };
  Kind kind = Kind::Sink;
  bool negated = false;  // `!p` as a predicate operand (e.g. setp/selp inputs)

  // component: `%v.x`, or a video-instruction selector `%r.b0` / `%r.h10` / `%r.b3210` (an
  // interned spelling in the arena, without the dot); minus: `-%r` (vmad's negated sources).
  static Operand makeRegister(uint32_t reg, bool negated = false,
                              const std::string_view* component = nullptr, bool minus = false);
  // form: the component itself (%tid.x is TidX), the fourth one (%tid.w: `reg` is the .x
  // register), or the whole .v4 vector (`mov.v4.u32 {..}, %tid`: `reg` is the .x register).
  enum class VectorForm : uint8_t { Component, W, Whole };
  static Operand makeSpecial(SpecialRegister reg, uint32_t index, bool negated = false,
                             VectorForm form = VectorForm::Component);
  static Operand makeImmediate(const Immediate& imm);
  static Operand makeSymbol(const SymbolReference* reference);
  // reference: nullptr for `[reg+offset]` / `[offset]`; otherwise holds the symbol base (empty
  // name for a register base) and the offset, and the texture coordinates if any.
  static Operand makeAddress(Address::BaseKind base, uint32_t reg, int64_t offset,
                             const SymbolReference* reference);
  static Operand makeList(Kind kind, const Operand* elements, size_t count);  // Vector or List
  static Operand makeSink();

  uint32_t reg() const { return index_; }  // Register (and Address::reg of a register base)
  std::string_view component() const;      // Register: "x", "b0", "h10"... or empty
  bool minus() const { return (flags_ & kMinus) != 0; }  // Register written `-%r`
  VectorForm vectorForm() const {           // SpecialRegister
    return (flags_ & kWhole) ? VectorForm::Whole
                             : (flags_ & kComponentW) ? VectorForm::W : VectorForm::Component;
  }
  SpecialRegister special() const { return static_cast<SpecialRegister>(sub_); }
  uint32_t envregIndex() const { return index_; }
  Immediate imm() const;
  std::string_view symbol() const;   // Symbol
  int64_t symbolOffset() const;      // Symbol
  Address address() const;           // Address
  const SymbolReference* reference() const;  // Symbol, or Address with a symbol or coordinates
  Span<Operand> elements() const;   // Vector, List; Address: the parts after the base (0-2)

 private:
  uint8_t sub_ = 0;    // SpecialRegister, Immediate::Kind or Address::BaseKind
  uint8_t flags_ = 0;  // kHasReference, kMinus, kWhole, kComponentW
  uint32_t index_ = 0;
  uint64_t payload_ = 0;  // Register: the component's string_view in the arena, or 0
  static constexpr uint8_t kHasReference = 1, kMinus = 2, kWhole = 4, kComponentW = 8;
};

struct Instruction {
  SourceLocation loc;
  // The CUDA source position of the last `.loc` before the instruction (nvcc -lineinfo): an index
  // into Module::files and a 1-based line; 0 when the PTX has none.
  uint32_t sourceFile = 0, sourceLine = 0;

  // Operands, destination(s) first, as written; a predicate pair `p|q` (setp, shfl, elect,
  // lop3) is two operands.
  Span<Operand> operands() const { return {operandData(), operandCount_}; }
  // Modifiers in source order without the dot, excluding types, the state space and vN:
  // e.g. mul.wide.s32 -> {"wide"}; ld.global.nc.v4.f32 -> {"nc"}; setp.lt.and.f32 -> {"lt","and"};
  // cvt.rn.ftz.f32.f64 -> {"rn","ftz"}; atom.global.add.u32 -> {"add"}; bar.sync -> {"sync"};
  // scope and ordering suffixes likewise ("gpu", "acquire", "shared::cta" is a space, see below).
  Span<std::string_view> modifiers() const;
  Span<ScalarType> types() const;  // every type suffix in source order (cvt.f32.s32 -> {F32, S32})
  // Guard predicate `@p` / `@!p`: register index into the function's registers.
  std::optional<uint32_t> guard() const {
    return hasGuard_ ? std::optional<uint32_t>(guard_) : std::nullopt;
  }
  bool hasModifier(std::string_view name) const {
    for (std::string_view m : modifiers())
      if (m == name) return true;
    return false;
  }

  // Stores the parts in `arena` (one block) and points the instruction at them. Counts above 255
  // are the caller's error to report (the parser does).
  void setParts(Arena& arena, const Operand* operands, size_t operandCount,
                const std::string_view* modifiers, size_t modifierCount, const ScalarType* types,
                size_t typeCount);
  void setOperands(Arena& arena, const Operand* operands, size_t count);  // keeps the rest
  void setGuard(uint32_t reg) { guard_ = reg, hasGuard_ = true; }

  uint32_t suffixLayout = 0;  // see suffixCount
  Opcode opcode = Opcode::mov;
  StateSpace space = StateSpace::None;  // .global/.shared/... suffix when present; a second
                                        // space (cp.async.bulk.shared::cluster.global) is
                                        // kept in modifiers() ("global") at its position
  uint8_t vectorWidth = 1;              // .v2/.v4/.v8 -> 2/4/8
  SpaceSpelling spaceSpelling = SpaceSpelling::Plain;  // of `space`
  bool guardNegated = false;
  bool destinationPair = false;         // operands()[0] and [1] were written `a|b`
  // Source order of the suffixes, for printing them back exactly (cvta.to.global.u64,
  // prmt.b32.f4e): 2 bits per suffix in suffixLayout, first suffix lowest, 0 = modifier,
  // 1 = type, 2 = space, 3 = vector width. suffixCount 0 (or > 16 suffixes) means "unknown":
  // modifiers, space, vector, types.
  uint8_t suffixCount = 0;

 private:
  const Operand* operandData() const { return static_cast<const Operand*>(parts_); }
  const void* parts_ = nullptr;  // [Operand x n][string_view x m][ScalarType x k]
  uint32_t guard_ = 0;
  bool hasGuard_ = false;
  uint8_t operandCount_ = 0, modifierCount_ = 0, typeCount_ = 0;
};

// A body is a flat list of statements, instructions and labels; nested `{ }` blocks are
// flattened by the parser.
struct Statement {
  enum class Kind : uint8_t { Instruction, Label };
  Instruction instruction;  // for a label only instruction.loc is set

  Kind kind() const { return label_ ? Kind::Label : Kind::Instruction; }
  bool isLabel() const { return label_ != nullptr; }
  // Unique in the function: the same name in another `{ }` block (inlined asm) becomes "L1#1",
  // and branches there use that name.
  std::string_view labelName() const { return label_ ? *label_ : std::string_view(); }
  SourceLocation loc() const { return instruction.loc; }
  static Statement makeLabel(Arena& arena, std::string_view name, SourceLocation loc);

 private:
  const std::string_view* label_ = nullptr;  // in the arena
};

// One name of a `.reg` declaration (or a `.reg` parameter): a single register, or a numbered
// range `%r<100>` = %r0..%r99. Registers are numbered in declaration order, so a function's
// declarations cover 0..registerCount()-1 without gaps.
struct RegisterDeclaration {
  std::string_view name;  // the register's name, or a range's prefix ("%r")
  uint32_t first = 0;     // index of its (first) register
  uint32_t count = 1;     // registers declared: 1, or N for a range
  ScalarType type = ScalarType::None;
  uint8_t vectorWidth = 1;  // .reg .v4 .f32 %v; rare
  bool isRange = false;
  SourceLocation loc;
};

// One element of a variable initializer: a number or the address of a symbol (+offset), in
// 16 bytes (tables of constants are the largest initializers).
class InitializerElement {
 public:
  enum class Kind : uint8_t { Number, SymbolAddress };
  static constexpr uint8_t kWholeAddress = 0xFF;
  static InitializerElement makeNumber(const Immediate& number);
  // generic(sym): the generic address of sym. maskedByte: the mask operator of PTX 7.1,
  // `0xFF00(sym)` = byte 1 of the address (nvcc writes pointers in byte arrays, e.g. packed
  // structs, one byte at a time); kWholeAddress for the whole address.
  static InitializerElement makeSymbolAddress(const SymbolReference* reference, bool generic,
                                              uint8_t maskedByte = kWholeAddress);

  Kind kind() const { return kind_; }
  Immediate number() const;
  std::string_view symbol() const;
  int64_t offset() const;
  bool generic() const { return generic_; }
  uint8_t maskedByte() const { return maskedByte_; }  // 0..7, or kWholeAddress
  bool masked() const { return maskedByte_ != kWholeAddress; }

 private:
  Kind kind_ = Kind::Number;
  bool generic_ = false;
  Immediate::Kind numberKind_ = Immediate::Kind::Integer;
  uint8_t maskedByte_ = kWholeAddress;
  uint64_t payload_ = 0;  // number bits, or a SymbolReference* in the arena
};

struct Variable {
  std::string name;
  StateSpace space = StateSpace::None;
  Linkage linkage = Linkage::Default;
  ScalarType type = ScalarType::None;
  uint8_t vectorWidth = 1;
  uint32_t alignment = 0;          // 0: natural alignment of the type
  std::vector<uint64_t> dims;      // array dimensions; a 0 entry is an unsized `[]`
  bool hasInitializer = false;
  std::vector<InitializerElement> initializer;  // flattened in element order
  // Pointer attributes of kernel parameters: .ptr .global .align N
  StateSpace pointeeSpace = StateSpace::None;
  uint32_t pointeeAlignment = 0;
  bool managed = false;            // .attribute(.managed): a __managed__ variable
  // The initializer of a .texref / .samplerref: `{ filter_mode = linear, width = 64 }` as
  // (field, value) pairs in source order.
  std::vector<std::pair<std::string, std::string>> opaqueFields;
  SourceLocation loc;

  // Total size in bytes (0 for an unsized array).
  uint64_t sizeInBytes() const;
  uint32_t effectiveAlignment() const;
};

struct PerformanceDirectives {
  std::vector<uint32_t> maxntid;    // up to 3 values
  std::vector<uint32_t> reqntid;
  std::optional<uint32_t> minnctapersm;
  std::optional<uint32_t> maxnctapersm;
  std::optional<uint32_t> maxnreg;
  std::optional<uint32_t> maxclusterrank;
  std::vector<uint32_t> reqnctapercluster;
  bool explicitCluster = false;
  bool blocksAreClusters = false;  // launch-shape hint (PTX 9.0); no effect on semantics
  bool noreturn = false;
  std::vector<std::string> pragmas;  // .pragma "nounroll"; etc. (with quotes), from the header
                                     // and from the body
};

// `.callprototype`: label: .callprototype (.param .b32 _) _ (.param .b64 _);
struct CallPrototype {
  std::string label;
  std::vector<Variable> returnParams;
  std::vector<Variable> params;
  SourceLocation loc;
};

// `label: .branchtargets L1, L2;` / `label: .calltargets f, g;` (brx.idx / indirect call targets).
struct TargetList {
  std::string label;
  bool isCallTargets = false;
  std::vector<std::string> targets;
  SourceLocation loc;
};

struct Function {
  std::string name;
  bool isEntry = false;       // .entry (kernel) vs .func
  Linkage linkage = Linkage::Default;
  bool isDeclaration = false; // prototype only (no body), e.g. `.extern .func vprintf(...)` or
                              // a forward declaration
  std::vector<Variable> params;        // .param (entries) or .param/.reg (funcs), in order
  std::vector<Variable> returnParams;  // .func (.param .b32 ret) name(...)
  PerformanceDirectives performance;
  // Every register declared anywhere in the body, in index order; a name shadowed in a nested
  // block is a register of its own whose name is made unique ("%r5#1", in renamedRegisters).
  std::vector<RegisterDeclaration> registerDeclarations;
  std::vector<std::pair<uint32_t, std::string_view>> renamedRegisters;  // sorted by index
  std::vector<Variable> locals;        // .local/.shared/.const/.param variables of the body; their
                                       // names are unique like registers: the `.param param0`
                                       // of the second call block is "param0#1", and operands
                                       // refer to it by that name
  std::vector<Statement> body;
  std::vector<CallPrototype> callPrototypes;  // declared in the body (label is the name)
  std::vector<TargetList> targetLists;        // .branchtargets / .calltargets in the body
  SourceLocation loc;

  uint32_t registerCount() const;
  // The declaration a register index belongs to (index < registerCount()).
  const RegisterDeclaration& declarationOf(uint32_t reg) const;
  ScalarType registerType(uint32_t reg) const { return declarationOf(reg).type; }
  std::string registerName(uint32_t reg) const;  // "%r5", "%p1", "%r5#1"
  // The index of the register with this (flattened) name, or -1.
  int64_t findRegister(std::string_view name) const;
};

// CUDA's device-side system calls (printf, assert, malloc/free, the device runtime of dynamic
// parallelism, graph conditionals): the functions a module may call without any module defining
// them, provided by each backend's device runtime. Any other callee must be defined: NVIDIA's
// JIT and linker refuse it ("Unresolved extern function").
bool isDeviceRuntimeFunction(std::string_view name);

struct Module {
  Module();
  std::string name;  // file name, or "<memory>"
  uint32_t versionMajor = 0, versionMinor = 0;   // .version 9.0
  std::vector<std::string> targets;              // .target sm_90a, texmode_independent, debug ...
  uint32_t addressSize = 64;                     // .address_size (default 64 when absent? PTX: 32;
                                                 // nvcc always writes it)
  std::vector<Variable> globals;                 // module-scope variables in source order
  std::vector<Function> functions;               // in source order, declarations included
  std::vector<std::pair<std::string, std::string>> aliases;  // .alias a, b;
  std::vector<std::string> files;                // .file entries by index (may be empty)
  // Where operands, modifiers and names live: arenas[0] is the module's own, and a linked
  // module keeps the arenas of its inputs. Shared, so that copies of a module stay valid.
  std::vector<std::shared_ptr<Arena>> arenas;
  Arena& arena() { return *arenas.front(); }

  const Function* findFunction(std::string_view name) const;
  const Variable* findGlobal(std::string_view name) const;
};

}  // namespace rocuda::ptx
