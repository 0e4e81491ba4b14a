//===- ExtractionTest.cpp - the hole out of model answers -----------------===//

#include "dice/VerifierCore/Extraction.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace dice;

namespace {

std::string readAnswer(const std::string &name) {
  std::ifstream in(std::string(DICE_VERIFIER_CORPUS) + "/answers/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

ExtractionResult extractFile(const std::string &name) {
  return extractCandidateSource(readAnswer(name));
}

TEST(Extraction, FencedInfillAnswer) {
  ExtractionResult r = extractFile("infill_fenced.txt");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.variable, "source");
  EXPECT_EQ(r.line, 4u);
  EXPECT_EQ(r.cudaSource.substr(0, 29), "\n#include <torch/extension.h>");
  EXPECT_NE(r.cudaSource.find("torch::Tensor dice_forward("), std::string::npos);
  EXPECT_EQ(r.cudaSource.back(), '\n');
}

TEST(Extraction, BareAnswerIgnoresEverythingAfterTheHole) {
  ExtractionResult r = extractFile("infill_bare_with_suffix.txt");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.line, 1u);
  // A raw string keeps its backslashes; the model's own load_inline and
  // its second `source` are never looked at.
  EXPECT_NE(r.cudaSource.find(R"(printf("\n"))"), std::string::npos);
  EXPECT_EQ(r.cudaSource.find("ignored"), std::string::npos);
  EXPECT_EQ(r.cudaSource.find("EVIL"), std::string::npos);
}

TEST(Extraction, KernelBenchProgramThroughLoadInline) {
  ExtractionResult r = extractFile("kernelbench_program.txt");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.variable, "elementwise_add_source");
  EXPECT_EQ(r.line, 7u);
  // Python's "\n" escape became a newline, as load_inline would compile it.
  EXPECT_NE(r.cudaSource.find("return out;\n}\n"), std::string::npos);
  EXPECT_EQ(r.cudaSource.find("class ModelNew"), std::string::npos);
}

TEST(Extraction, CudaSourceName) {
  ExtractionResult r = extractFile("cuda_source_name.txt");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.variable, "cuda_source");
  EXPECT_EQ(r.line, 2u);
}

TEST(Extraction, UnterminatedString) {
  ExtractionResult r = extractFile("malformed_unterminated.txt");
  EXPECT_EQ(r.status, ExtractionStatus::CompileError);
  EXPECT_EQ(extractionStatusName(r.status), "compile_error");
  EXPECT_EQ(r.reason, "line 2: the string assigned to `source` is never closed");
}

TEST(Extraction, NoSource) {
  ExtractionResult r = extractFile("malformed_no_source.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason.rfind("line 1: no `source = \"\"\"...\"\"\"` assignment", 0), 0u)
      << r.reason;
}

TEST(Extraction, EmptySource) {
  ExtractionResult r = extractFile("malformed_empty.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason, "line 2: the string assigned to `source` is empty");
}

TEST(Extraction, NoEntryPoint) {
  ExtractionResult r = extractFile("malformed_no_entry.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason,
            "line 3: the CUDA source assigned to `source` defines no `dice_forward`");
}

TEST(Extraction, FStringIsRejected) {
  ExtractionResult r = extractFile("malformed_fstring.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason.rfind("line 2: `source` is an f-string", 0), 0u) << r.reason;
}

TEST(Extraction, EscapesDecodeLikePython) {
  ExtractionResult r = extractCandidateSource(
      "source = \"int dice_forward();\\t\\x41\\101\\u00e9\\q\"\n");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.cudaSource, "int dice_forward();\tAA\xc3\xa9\\q");
}

TEST(Extraction, AdjacentLiteralsConcatenate) {
  ExtractionResult r = extractCandidateSource(
      "source = (\n  'int dice_forward'\n  \"(int x);\"  # comment \"\"\"\n)\n");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.cudaSource, "int dice_forward(int x);");
  EXPECT_EQ(r.line, 2u);
}

TEST(Extraction, ExpressionIsRejected) {
  ExtractionResult r =
      extractCandidateSource("source = \"int dice_forward();\" + extra\n");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reason,
            "line 1: `source` is an expression, not a plain string literal");
}

TEST(Extraction, CommentedAssignmentIsNotTheHole) {
  ExtractionResult r = extractCandidateSource(
      "# source = \"\"\"int dice_forward();\"\"\"\nx = 1\n");
  EXPECT_FALSE(r.ok());
}

TEST(Extraction, CutOffInsideTheFence) {
  // Generation stopped after the string but before the closing fence.
  ExtractionResult r = extractCandidateSource(
      "```python\nsource = '''\nint dice_forward();\n'''\n");
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.cudaSource, "\nint dice_forward();\n");
}

TEST(Extraction, OtherLanguageFencesAreSkipped) {
  ExtractionResult r = extractCandidateSource(
      "```cpp\nsource = \"int dice_forward();\"\n```\n");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.reason.find("no ```python``` block"), std::string::npos) << r.reason;
}

} // namespace
