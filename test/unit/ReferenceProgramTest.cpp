//===- ReferenceProgramTest.cpp - the reference program's JSON ------------===//
//
// Every double a program holds reads back bit for bit (infinities, NaNs,
// -0.0, denormals, the largest numbers, float32 constants), and every
// malformed program is an error that names its field, never a program.
//
//===----------------------------------------------------------------------===//

#include "dice/Reference/Fingerprint.h"
#include "dice/Reference/ReferenceProgram.h"

#include <gtest/gtest.h>

#include <tuple>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

namespace dice {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// x0 + full(value) + scalar(value) padded with value: the three ops that
/// hold a value.
ReferenceProgram holding(double value, DType dtype = DType::Float32) {
  ReferenceProgram p;
  TensorType t{{2, 3}, dtype};
  p.inputs = {t};
  RefOp full{RefFn::Full, {}, {}, value, t};
  RefOp scalar{RefFn::Scalar, {}, {}, value, TensorType{{}, dtype}};
  int f = p.add(full);
  int s = p.add(scalar);
  int a = p.add(RefOp{RefFn::Add, {0, f}, {}, 0, t});
  int b = p.add(RefOp{RefFn::Add, {a, s}, {}, 0, t});
  RefOp pad{RefFn::Pad, {b}, {{"low", {0, 1}}, {"high", {1, 0}}}, value,
            TensorType{{3, 4}, dtype}};
  p.outputs = {p.add(pad)};
  return p;
}

uint64_t bits(double v) { return std::bit_cast<uint64_t>(v); }

void expectRoundTrip(double value) {
  ReferenceProgram program = holding(value);
  ASSERT_EQ(program.validate(), "");
  std::string text = program.toJson();
  Result<ReferenceProgram> back = ReferenceProgram::fromJson(text);
  ASSERT_TRUE(back) << back.error().format() << "\n" << text;
  for (int op : {0, 1, 4})
    EXPECT_EQ(bits(back->ops[op].value), bits(value))
        << "op " << op << " of " << text;
  EXPECT_EQ(fingerprintOf(*back), fingerprintOf(program)) << text;
  EXPECT_EQ(back->toJson(), text);
}

TEST(ReferenceProgramJson, SpecialValuesRoundTripExactly) {
  const double quietNaN = std::numeric_limits<double>::quiet_NaN();
  for (double v :
       {kInf, -kInf, quietNaN, -quietNaN, std::bit_cast<double>(0x7ff0000000000001ULL),
        std::bit_cast<double>(0xfff8000000000123ULL), 0.0, -0.0,
        std::numeric_limits<double>::denorm_min(), -std::numeric_limits<double>::denorm_min(),
        std::numeric_limits<double>::min(), std::numeric_limits<double>::max(),
        -std::numeric_limits<double>::max(), 1e308, 1e-308, 0.1, 1.0 / 3.0, -2.5})
    expectRoundTrip(v);
}

TEST(ReferenceProgramJson, Float32ConstantsRoundTripExactly) {
  for (float f : {std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::denorm_min(), std::nextafter(1.0f, 2.0f),
                  0.1f, -0.0f, -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()})
    expectRoundTrip(static_cast<double>(f));
}

TEST(ReferenceProgramJson, RandomBitPatternsRoundTripExactly) {
  std::mt19937_64 random(42);
  for (int i = 0; i < 2000; ++i)
    expectRoundTrip(std::bit_cast<double>(random()));
}

TEST(ReferenceProgramJson, NonFiniteValuesAreStrings) {
  EXPECT_NE(holding(-kInf).toJson().find("\"value\":\"-inf\""), std::string::npos);
  EXPECT_NE(holding(kInf).toJson().find("\"value\":\"inf\""), std::string::npos);
  EXPECT_NE(holding(std::nan("")).toJson().find("\"value\":\"nan\""), std::string::npos);
  EXPECT_EQ(holding(-kInf).toJson().find("null"), std::string::npos);
  // -0.0 == 0, but it is written: only +0.0 is left out.
  EXPECT_NE(holding(-0.0).toJson().find("\"value\":-0.0"), std::string::npos);
  EXPECT_EQ(holding(0.0).toJson().find("\"value\""), std::string::npos);
}

TEST(ReferenceProgramJson, FloatStrings) {
  EXPECT_EQ(floatToJsonString(1.5), std::nullopt);
  EXPECT_EQ(floatToJsonString(std::bit_cast<double>(0x7ff0000000000001ULL)),
            "0x7ff0000000000001");
  EXPECT_EQ(floatFromJsonString("Infinity"), std::nullopt);
  EXPECT_EQ(floatFromJsonString("1.5"), std::nullopt);
  EXPECT_EQ(floatFromJsonString("0x7ff0000000000000"), std::nullopt); // inf
  EXPECT_EQ(floatFromJsonString("0x7ff8"), std::nullopt);
  EXPECT_EQ(floatFromJsonString("nan:0x7ff8000000000001"), std::nullopt);
}

/// `json`'s parse fails with `key` and a message holding `message`.
void expectError(const std::string &json, const std::string &key,
                 const std::string &message) {
  Result<ReferenceProgram> program = ReferenceProgram::fromJson(json);
  ASSERT_FALSE(program) << json;
  EXPECT_EQ(program.error().key, key) << json << "\n" << program.error().format();
  EXPECT_NE(program.error().message.find(message), std::string::npos)
      << json << "\n" << program.error().format();
}

const std::string kType = R"({"shape": [], "dtype": "float32"})";

std::string withOp(const std::string &op) {
  return R"({"inputs": [], "ops": [)" + op + R"(], "outputs": [0]})";
}

TEST(ReferenceProgramJson, MalformedPiecesAreLocatedErrors) {
  // The encoding nlohmann-json used to write for infinities.
  expectError(withOp(R"({"fn": "scalar", "args": [], "value": null, "type": )" + kType + "}"),
              "ops[0].value", "must be a number");
  expectError(withOp(R"({"fn": "scalar", "args": [], "value": "Infinity", "type": )" + kType + "}"),
              "ops[0].value", "\"inf\"");
  expectError(withOp(R"({"fn": "scalar", "args": [], "value": [1], "type": )" + kType + "}"),
              "ops[0].value", "must be a number");
  expectError(withOp(R"({"args": [], "type": )" + kType + "}"), "ops[0].fn", "is missing");
  expectError(withOp(R"({"fn": 3, "args": [], "type": )" + kType + "}"), "ops[0].fn",
              "must be a string");
  expectError(withOp(R"({"fn": "scalar", "type": )" + kType + "}"), "ops[0].args", "is missing");
  expectError(withOp(R"({"fn": "scalar", "args": null, "type": )" + kType + "}"), "ops[0].args",
              "array");
  expectError(withOp(R"({"fn": "exp", "args": [4294967296], "type": )" + kType + "}"),
              "ops[0].args[0]", "integer in");
  expectError(withOp(R"({"fn": "exp", "args": [-1], "type": )" + kType + "}"),
              "ops[0].args[0]", "integer in");
  expectError(withOp(R"({"fn": "scalar", "args": []})"), "ops[0].type", "is missing");
  expectError(withOp(R"({"fn": "scalar", "args": [], "type": {"shape": []}})"),
              "ops[0].type.dtype", "is missing");
  expectError(withOp(R"({"fn": "scalar", "args": [], "type": {"shape": [], "dtype": "float8"}})"),
              "ops[0].type.dtype", "float8");
  expectError(withOp(R"({"fn": "full", "args": [], "type": {"shape": [2, -1], "dtype": "float32"}})"),
              "ops[0].type.shape[1]", "integer in");
  expectError(withOp(R"({"fn": "full", "args": [], "type": {"shape": [18446744073709551615], "dtype": "float32"}})"),
              "ops[0].type.shape[0]", "integer in");
  expectError(withOp(R"({"fn": "sum", "args": [], "ints": {"dims": [1.5]}, "type": )" + kType + "}"),
              "ops[0].ints.dims[0]", "integer");
  expectError(withOp(R"({"fn": "sum", "args": [], "ints": [], "type": )" + kType + "}"),
              "ops[0].ints", "object");
  expectError(withOp(R"({"fn": "scalar", "args": [], "vaule": 1, "type": )" + kType + "}"),
              "ops[0].vaule", "is not a field");
  expectError(R"({"inputs": [], "ops": []})", "outputs", "is missing");
  expectError(R"({"inputs": {}, "ops": [], "outputs": [0]})", "inputs", "array");
  expectError(R"({"inputs": [3], "ops": [], "outputs": [0]})", "inputs[0]", "tensor type");
  expectError(R"({"inputs": [], "ops": [], "outputs": [0], "extra": 1})", "extra",
              "is not a field");
  expectError(R"({"inputs": [], "ops": [], "outputs": ["0"]})", "outputs[0]", "integer");
  expectError("[1, 2]", "", "must be a JSON object");
}

TEST(ReferenceProgramJson, InvalidValuesAreErrors) {
  // Both backends make an int64_t of an integer constant.
  for (double v : {kInf, std::nan(""), 0.5, 0x1p63}) {
    Result<ReferenceProgram> program =
        ReferenceProgram::fromJson(holding(v, DType::Int64).toJson());
    ASSERT_FALSE(program) << v;
    EXPECT_NE(program.error().message.find("is not a value of int64"), std::string::npos)
        << program.error().format();
  }
  EXPECT_TRUE(ReferenceProgram::fromJson(holding(-0x1p63, DType::Int64).toJson()));
  EXPECT_TRUE(ReferenceProgram::fromJson(holding(kInf, DType::Bool).toJson()));
  // An element count past int64_t.
  Result<ReferenceProgram> huge = ReferenceProgram::fromJson(
      R"({"inputs": [{"shape": [4294967296, 4294967296], "dtype": "float32"}],
          "ops": [], "outputs": [0]})");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("more elements"), std::string::npos);
}

TEST(ReferenceProgramJson, CumulativeOpsScanADimensionOfTheirInput) {
  auto scan = [](const char *dim, const char *shape) {
    return ReferenceProgram::fromJson(
        std::string(R"({"inputs": [{"shape": [3, 4], "dtype": "float32"}],
            "ops": [{"fn": "cumsum", "args": [0], "ints": {"dim": )") + dim +
        R"(}, "type": {"shape": )" + shape + R"(, "dtype": "float32"}}],
            "outputs": [1]})");
  };
  EXPECT_TRUE(scan("[1]", "[3, 4]"));
  for (const char *dim : {"[2]", "[-1]", "[0, 1]"}) {
    Result<ReferenceProgram> bad = scan(dim, "[3, 4]");
    ASSERT_FALSE(bad) << dim;
    EXPECT_NE(bad.error().message.find("'dim' must be one dimension of the input"),
              std::string::npos)
        << bad.error().format();
  }
  Result<ReferenceProgram> reshaped = scan("[0]", "[12]");
  ASSERT_FALSE(reshaped);
  EXPECT_NE(reshaped.error().message.find("the input's shape"), std::string::npos);
}

TEST(ReferenceProgramJson, IndexPutTakesSlicesOfTheInput) {
  // x [4, 3]; positions [n, k] of integers; updates [n] + x's shape after k.
  auto put = [](const char *positions, const char *updates, const char *accumulate) {
    return ReferenceProgram::fromJson(
        std::string(R"({"inputs": [{"shape": [4, 3], "dtype": "float32"},
                                   {"shape": )") + positions + R"(, "dtype": "int64"},
                                   {"shape": )" + updates + R"(, "dtype": "float32"}],
            "ops": [{"fn": "index_put", "args": [0, 1, 2], "ints": {"accumulate": )" +
        accumulate + R"(}, "type": {"shape": [4, 3], "dtype": "float32"}}],
            "outputs": [3]})");
  };
  EXPECT_TRUE(put("[2, 1]", "[2, 3]", "[0]"));
  EXPECT_TRUE(put("[5, 2]", "[5]", "[1]"));
  for (auto [positions, updates, accumulate, why] :
       {std::tuple{"[2, 1]", "[2, 4]", "[0]", "the updates must be"},
        std::tuple{"[2, 3]", "[2]", "[0]", "the indices must be integers"},
        std::tuple{"[2]", "[2, 3]", "[0]", "the indices must be integers"},
        std::tuple{"[2, 1]", "[2, 3]", "[2]", "'accumulate' must be 0 or 1"}}) {
    Result<ReferenceProgram> bad = put(positions, updates, accumulate);
    ASSERT_FALSE(bad) << positions << " " << updates;
    EXPECT_NE(bad.error().message.find(why), std::string::npos) << bad.error().format();
  }
}

TEST(ReferenceProgramJson, GroupNormTakesOneParameterPerChannel) {
  // x [2, 6, 5]; weight and bias hold 6 values, in any shape.
  auto norm = [](const char *groups, const char *weight, const char *dtype) {
    return ReferenceProgram::fromJson(
        std::string(R"({"inputs": [{"shape": [2, 6, 5], "dtype": "float32"},
                                   {"shape": )") + weight + R"(, "dtype": ")" + dtype + R"("},
                                   {"shape": [6], "dtype": "float32"}],
            "ops": [{"fn": "group_norm", "args": [0, 1, 2], "ints": {"groups": )" + groups +
        R"(}, "value": 1e-5, "type": {"shape": [2, 6, 5], "dtype": "float32"}}],
            "outputs": [3]})");
  };
  EXPECT_TRUE(norm("[3]", "[6]", "float32"));
  EXPECT_TRUE(norm("[2]", "[1, 2, 3, 1]", "float32"));
  for (auto [groups, weight, dtype, why] :
       {std::tuple{"[4]", "[6]", "float32", "'groups' must divide the input's channels"},
        std::tuple{"[0]", "[6]", "float32", "'groups' must divide the input's channels"},
        std::tuple{"[3]", "[5]", "float32", "one value per channel"},
        std::tuple{"[3]", "[6]", "float64", "one value per channel"}}) {
    Result<ReferenceProgram> bad = norm(groups, weight, dtype);
    ASSERT_FALSE(bad) << groups << " " << weight;
    EXPECT_NE(bad.error().message.find(why), std::string::npos) << bad.error().format();
  }
}

TEST(ReferenceProgramJson, SyntaxErrorsHaveLineAndColumn) {
  Result<ReferenceProgram> program =
      ReferenceProgram::fromJson("{\"inputs\": [],\n \"ops\": [}, \"outputs\": [0]}");
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().line, 2u);
  EXPECT_EQ(program.error().column, 10u);
  EXPECT_EQ(program.error().message.find("parse error at"), std::string::npos)
      << program.error().message;
  Result<ReferenceProgram> empty = ReferenceProgram::fromJson("");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().line, 1u);
}

TEST(ReferenceProgramJson, TheDescribedErrorNamesTheField) {
  Result<ReferenceProgram> program = ReferenceProgram::fromJson(
      withOp(R"({"fn": "scalar", "args": [], "value": null, "type": )" + kType + "}"));
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().describe(),
            "ops[0].value: must be a number or one of \"inf\", "
            "\"-inf\", \"nan\", \"-nan\", \"0x<NaN bits>\"");
}

TEST(ReferencePythonPrinter, SpellsSpecialValuesAsPython) {
  std::string inf = renderPythonModel(holding(-kInf));
  EXPECT_NE(inf.find("float('-inf')"), std::string::npos) << inf;
  EXPECT_NE(renderPythonModel(holding(kInf)).find("float('inf')"), std::string::npos);
  EXPECT_NE(renderPythonModel(holding(std::nan(""))).find("float('nan')"), std::string::npos);
  std::string negativeZero = renderPythonModel(holding(-0.0));
  EXPECT_NE(negativeZero.find("-0.0"), std::string::npos) << negativeZero;
  EXPECT_NE(renderPythonModel(holding(1e308)).find("1e+308"), std::string::npos);
  std::string denormal = renderPythonModel(holding(std::numeric_limits<double>::denorm_min()));
  EXPECT_NE(denormal.find("5e-324"), std::string::npos) << denormal;
}


/// rows(x0[s0, 3]) = x0.reshape(s0 * 3) * full(s0 * 3): a free size and a
/// multiple of it.
ReferenceProgram dynamicRows(int64_t example = 4) {
  ReferenceProgram p;
  p.symbols = {SizeSymbol{example}, SizeSymbol{example * 3, 0, 3}};
  int64_t s0 = symbolicSize(0), s1 = symbolicSize(1);
  p.inputs = {TensorType{{s0, 3}, DType::Float32}};
  int flat = p.add(RefOp{RefFn::Reshape, {0}, {}, 0, TensorType{{s1}, DType::Float32}});
  int two = p.add(RefOp{RefFn::Full, {}, {}, 2.0, TensorType{{s1}, DType::Float32}});
  int head = p.add(RefOp{RefFn::Slice, {0},
                         {{"offsets", {0, 0}}, {"sizes", {s0, 2}}, {"strides", {1, 1}}},
                         0, TensorType{{s0, 2}, DType::Float32}});
  p.outputs = {p.add(RefOp{RefFn::Mul, {flat, two}, {}, 0, TensorType{{s1}, DType::Float32}}), head};
  return p;
}

TEST(ReferenceProgramSymbols, RoundTripAndSpellTheSizesByName) {
  ReferenceProgram program = dynamicRows();
  ASSERT_EQ(program.validate(), "");
  std::string text = program.toJson();
  EXPECT_NE(text.find("\"shape\":[\"s0\",3]"), std::string::npos) << text;
  Result<ReferenceProgram> back = ReferenceProgram::fromJson(text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->symbols, program.symbols);
  EXPECT_EQ(back->inputs, program.inputs);
  EXPECT_EQ(back->ops[2].ints.at("sizes"), program.ops[2].ints.at("sizes"));
  EXPECT_EQ(back->toJson(), text);
}

TEST(ReferenceProgramSymbols, BindFromInputsAndSpecialize) {
  ReferenceProgram program = dynamicRows();
  EXPECT_EQ(program.exampleSizes(), (std::vector<int64_t>{4, 12}));
  EXPECT_EQ(program.otherSizes(2, 1), (std::vector<int64_t>{9, 27}));
  Result<std::vector<int64_t>> sizes = program.bindSizes({{7, 3}});
  ASSERT_TRUE(sizes) << sizes.error().message;
  EXPECT_EQ(*sizes, (std::vector<int64_t>{7, 21}));
  ReferenceProgram fixed = program.specialize(*sizes);
  EXPECT_TRUE(fixed.isStatic());
  EXPECT_EQ(fixed.validate(), "");
  EXPECT_EQ(fixed.inputs[0].shape, (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(fixed.ops[0].type.shape, (std::vector<int64_t>{21}));
  EXPECT_EQ(fixed.ops[2].ints.at("sizes"), (std::vector<int64_t>{7, 2}));
}

TEST(ReferenceProgramSymbols, InputsThatDisagreeAreErrors) {
  ReferenceProgram program = dynamicRows();
  Result<std::vector<int64_t>> wrongStatic = program.bindSizes({{7, 4}});
  ASSERT_FALSE(wrongStatic);
  EXPECT_EQ(wrongStatic.error().message,
            "input 0 dimension 1 has size 4, the program takes 3");
  ASSERT_FALSE(program.bindSizes({{7}}));
  // Two inputs of one symbol must have one size.
  ReferenceProgram two = program;
  two.inputs.push_back(TensorType{{symbolicSize(0)}, DType::Float32});
  Result<std::vector<int64_t>> mismatch = two.bindSizes({{7, 3}, {8}});
  ASSERT_FALSE(mismatch);
  EXPECT_NE(mismatch.error().message.find("input 1 dimension 0 has size 8"), std::string::npos)
      << mismatch.error().message;
}

TEST(ReferenceProgramSymbols, MalformedSymbolsAreErrors) {
  ReferenceProgram unbound = dynamicRows();
  unbound.symbols.push_back(SizeSymbol{5});
  EXPECT_EQ(unbound.validate(),
            "symbol s2: no input has a dimension of this size, so nothing binds it");
  ReferenceProgram unknown = dynamicRows();
  unknown.ops[1].type.shape = {symbolicSize(9)};
  EXPECT_NE(unknown.validate().find("size s9 is not a symbol of the program"), std::string::npos);
  ReferenceProgram badExample = dynamicRows();
  badExample.symbols[1].example = 13;
  EXPECT_EQ(badExample.validate(), "symbol s1: its example must be its factor times its base's");
  std::string text = dynamicRows().toJson();
  std::string factorless = text;
  factorless.replace(factorless.find(",\"factor\":3"), 11, "");
  Result<ReferenceProgram> read = ReferenceProgram::fromJson(factorless);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().key, "symbols[1].factor");
}

TEST(ReferenceProgramSymbols, FreeSizeHeldOnlyAsAMultipleIsDividedBack) {
  // x0: [s1] with s1 = 4 * s0; the output [s0, 4] reshapes it.
  ReferenceProgram p;
  p.symbols = {SizeSymbol{2}, SizeSymbol{8, 0, 4}};
  p.inputs = {TensorType{{symbolicSize(1)}, DType::Float32}};
  p.outputs = {p.add(RefOp{RefFn::Reshape, {0}, {}, 0,
                           TensorType{{symbolicSize(0), 4}, DType::Float32}})};
  ASSERT_EQ(p.validate(), "");
  EXPECT_NE(renderPythonModel(p).find("x0.reshape((x0.shape[0] // 4), 4)"), std::string::npos)
      << renderPythonModel(p);
  Result<std::vector<int64_t>> sizes = p.bindSizes({{12}});
  ASSERT_TRUE(sizes) << sizes.error().message;
  EXPECT_EQ(*sizes, (std::vector<int64_t>{3, 12}));
  Result<std::vector<int64_t>> ragged = p.bindSizes({{10}});
  ASSERT_FALSE(ragged);
  EXPECT_NE(ragged.error().message.find("not a multiple of 4"), std::string::npos);
}

TEST(ReferenceProgramSymbols, SizesAsValuesPrintThroughTheirTensor) {
  ReferenceProgram p = dynamicRows();
  p.outputs = {p.add(RefOp{RefFn::DimSize, {0}, {{"dim", {0}}}, 0, TensorType{{}, DType::Int64}})};
  ASSERT_EQ(p.validate(), "");
  EXPECT_NE(renderPythonModel(p).find("torch.tensor(x0.shape[0], dtype=torch.int64, device=x0.device)"),
            std::string::npos)
      << renderPythonModel(p);
}

TEST(ReferenceProgramSymbols, FingerprintCoversTheSymbolsButNotTheirExamples) {
  EXPECT_EQ(fingerprintOf(dynamicRows(4)), fingerprintOf(dynamicRows(7)));
  ReferenceProgram fixed = dynamicRows().specialize({4, 12});
  EXPECT_NE(fingerprintOf(fixed), fingerprintOf(dynamicRows()));
  ReferenceProgram otherFactor = dynamicRows();
  otherFactor.symbols[1] = SizeSymbol{16, 0, 4};
  EXPECT_NE(fingerprintOf(otherFactor), fingerprintOf(dynamicRows()));
}

TEST(ReferenceProgramSymbols, PrintedProgramReadsSizesFromItsInputs) {
  std::string text = renderPythonModel(dynamicRows());
  EXPECT_NE(text.find("x0.reshape(x0.shape[0] * 3,)"), std::string::npos) << text;
  EXPECT_NE(text.find("torch.full((x0.shape[0] * 3,), 2.0"), std::string::npos) << text;
  EXPECT_NE(text.find("x0[0:x0.shape[0], 0:2]"), std::string::npos) << text;
  EXPECT_NE(text.find("return [torch.randn((4, 3), dtype=torch.float32)]"), std::string::npos)
      << text;
}

} // namespace
} // namespace dice
