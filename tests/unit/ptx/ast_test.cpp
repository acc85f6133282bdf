// AST helpers: type sizes and classes, names, variable sizes, module lookups.
#include "ptx/ast.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rocuda::ptx {
namespace {

TEST(PtxAst, ScalarTypeSizes) {
  EXPECT_EQ(scalarTypeSize(ScalarType::None), 0u);
  EXPECT_EQ(scalarTypeSize(ScalarType::U8), 1u);
  EXPECT_EQ(scalarTypeSize(ScalarType::F16), 2u);
  EXPECT_EQ(scalarTypeSize(ScalarType::F16x2), 4u);
  EXPECT_EQ(scalarTypeSize(ScalarType::S32), 4u);
  EXPECT_EQ(scalarTypeSize(ScalarType::F64), 8u);
  EXPECT_EQ(scalarTypeSize(ScalarType::B128), 16u);
  EXPECT_EQ(scalarTypeSize(ScalarType::Pred), 1u);
  EXPECT_EQ(scalarTypeSize(ScalarType::S4), 1u);
  EXPECT_EQ(scalarTypeSize(ScalarType::E4M3x2), 2u);
}

TEST(PtxAst, ScalarTypeClasses) {
  EXPECT_TRUE(isSignedInteger(ScalarType::S16));
  EXPECT_FALSE(isSignedInteger(ScalarType::U16));
  EXPECT_TRUE(isUnsignedInteger(ScalarType::U64));
  EXPECT_FALSE(isUnsignedInteger(ScalarType::B64));
  EXPECT_TRUE(isBitType(ScalarType::B32));
  EXPECT_FALSE(isBitType(ScalarType::F32));
  EXPECT_TRUE(isFloat(ScalarType::BF16x2));
  EXPECT_TRUE(isFloat(ScalarType::TF32));
  EXPECT_TRUE(isFloat(ScalarType::E5M2));
  EXPECT_FALSE(isFloat(ScalarType::S32));
  EXPECT_FALSE(isFloat(ScalarType::Pred));
}

TEST(PtxAst, Names) {
  EXPECT_STREQ(scalarTypeName(ScalarType::F16x2), "f16x2");
  EXPECT_STREQ(scalarTypeName(ScalarType::Pred), "pred");
  EXPECT_STREQ(stateSpaceName(StateSpace::SharedCluster), "shared::cluster");
  EXPECT_STREQ(stateSpaceName(StateSpace::Global), "global");
  EXPECT_STREQ(specialRegisterName(SpecialRegister::CtaidY), "%ctaid.y");
  EXPECT_STREQ(specialRegisterName(SpecialRegister::LaneId), "%laneid");
  EXPECT_STREQ(specialRegisterName(SpecialRegister::ClusterNctaIdZ), "%cluster_nctaid.z");
  EXPECT_STREQ(specialRegisterName(SpecialRegister::ReservedSmemOffsetCap),
               "%reserved_smem_offset_cap");
  EXPECT_STREQ(opcodeName(Opcode::and_), "and");
  EXPECT_STREQ(opcodeName(Opcode::xor_), "xor");
  EXPECT_STREQ(opcodeName(Opcode::mad), "mad");
  EXPECT_STREQ(opcodeName(Opcode::cp_async), "cp.async");
  EXPECT_STREQ(opcodeName(Opcode::cvt_pack), "cvt.pack");
}

TEST(PtxAst, VariableSizeAndAlignment) {
  Variable scalar;
  scalar.type = ScalarType::F32;
  EXPECT_EQ(scalar.sizeInBytes(), 4u);
  EXPECT_EQ(scalar.effectiveAlignment(), 4u);
  Variable array;
  array.type = ScalarType::B8;
  array.dims = {4, 16};
  array.alignment = 16;
  EXPECT_EQ(array.sizeInBytes(), 64u);
  EXPECT_EQ(array.effectiveAlignment(), 16u);
  Variable vector;
  vector.type = ScalarType::F32;
  vector.vectorWidth = 4;
  vector.dims = {10};
  EXPECT_EQ(vector.sizeInBytes(), 160u);
  EXPECT_EQ(vector.effectiveAlignment(), 16u);
  Variable unsized;
  unsized.type = ScalarType::U32;
  unsized.dims = {0};
  EXPECT_EQ(unsized.sizeInBytes(), 0u);
  Variable huge;
  huge.type = ScalarType::U64;
  huge.dims = {1ull << 40, 1ull << 40};
  EXPECT_EQ(huge.sizeInBytes(), UINT64_MAX);
}

TEST(PtxAst, ModuleLookupsPreferDefinitions) {
  Module module;
  Function declaration;
  declaration.name = "f";
  declaration.isDeclaration = true;
  Function definition;
  definition.name = "f";
  module.functions = {declaration, definition};
  Variable global;
  global.name = "g";
  module.globals.push_back(global);
  ASSERT_NE(module.findFunction("f"), nullptr);
  EXPECT_FALSE(module.findFunction("f")->isDeclaration);
  EXPECT_EQ(module.findFunction("nope"), nullptr);
  ASSERT_NE(module.findGlobal("g"), nullptr);
  EXPECT_EQ(module.findGlobal("f"), nullptr);
  Variable externDecl;
  externDecl.name = "h";
  externDecl.linkage = Linkage::Extern;
  Variable definitionOfH;
  definitionOfH.name = "h";
  definitionOfH.hasInitializer = true;
  module.globals.push_back(externDecl);
  module.globals.push_back(definitionOfH);
  ASSERT_NE(module.findGlobal("h"), nullptr);
  EXPECT_TRUE(module.findGlobal("h")->hasInitializer);
}

}  // namespace
}  // namespace rocuda::ptx
