// Instruction conformance: one PTX instruction (or a short sequence) run on the CPU device's
// code over many inputs and compared with a host reference written from the PTX ISA manual.
// Inputs are exhaustive when they fit in 16 bits, otherwise 100,000 random values mixed with
// every combination of the type's edge values (zeros, subnormals, infinities, NaNs, INT_MIN,
// all-ones, shift amounts beyond the width...).
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ptx_reference.h"

namespace rocuda::compiler::conformance {

// The PTX register an operand lives in.
enum class Reg { B16, B32, B64, Pred };

// What values an operand draws, and how a result is compared.
enum class Values {
  Int,     // integers of the register's width
  Amount,  // shift amounts and bit positions: 0..70 and a few large values
  F16,
  BF16,
  F16x2,   // two f16 in a .b32
  BF16x2,  // two bf16 in a .b32
  F32,
  F64,
  Pred,
};

struct Operand {
  Reg reg;
  Values values;
};

using Inputs = std::array<uint64_t, 3>;
using Reference = std::function<uint64_t(const Inputs&)>;
// Whether `got` is an acceptable result when the reference computes `want`.
using Acceptor = std::function<bool(uint64_t got, uint64_t want, const Inputs& in)>;

struct InstructionCase {
  std::string name;  // the test's name: letters, digits, underscores
  std::string body;  // PTX using $d for the result and $a, $b, $c for the operands
  Operand result;
  std::vector<Operand> operands;
  Reference reference;
  Acceptor accept;  // empty: equal bits (any NaN matches any NaN for float results)
  std::string target = "sm_90";
  std::string version = "8.5";
  std::string declarations = "";  // function-scope declarations the body needs (.shared)
};

// Builders for the common shapes.
InstructionCase unary(std::string name, std::string body, Operand d, Operand a, Reference ref);
InstructionCase binary(std::string name, std::string body, Operand d, Operand a, Operand b,
                       Reference ref);
InstructionCase ternary(std::string name, std::string body, Operand d, Operand a, Operand b,
                        Operand c, Reference ref);

// Comparison helpers for approximate instructions: within `ulps` units in the last place of the
// reference (computed in double), or within `absolute` of it.
Acceptor withinUlpsF32(double ulps, bool flushSubnormals = false);
Acceptor withinRelativeF32(double relative, double absolute = 0);
Acceptor withinUlpsF64(double ulps);

// The generated kernel for a case (for failure messages and the FileCheck tests).
std::string kernelSource(const InstructionCase& c);

class Conformance : public ::testing::TestWithParam<InstructionCase> {};

std::string caseName(const ::testing::TestParamInfo<InstructionCase>& info);

inline std::ostream& operator<<(std::ostream& os, const InstructionCase& c) {
  return os << c.name;
}

// Short operand descriptors.
inline constexpr Operand kS16{Reg::B16, Values::Int};
inline constexpr Operand kS32{Reg::B32, Values::Int};
inline constexpr Operand kS64{Reg::B64, Values::Int};
inline constexpr Operand kAmount32{Reg::B32, Values::Amount};
inline constexpr Operand kPred{Reg::Pred, Values::Pred};
inline constexpr Operand kF16{Reg::B16, Values::F16};
inline constexpr Operand kBF16{Reg::B16, Values::BF16};
inline constexpr Operand kF16x2{Reg::B32, Values::F16x2};
inline constexpr Operand kBF16x2{Reg::B32, Values::BF16x2};
inline constexpr Operand kF32{Reg::B32, Values::F32};
inline constexpr Operand kF64{Reg::B64, Values::F64};

}  // namespace rocuda::compiler::conformance
