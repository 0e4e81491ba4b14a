//===- KernelBuildTest.cpp - kernel library build, without nvcc -----------===//
//
// The parts of the build that need no compiler: the signature, the schema
// and registration it generates, the cache key's hash, the deadline of a
// child process. The nvcc build itself is tested by test_dice_verify.py.
//
//===----------------------------------------------------------------------===//

#include "dice/Verifier/KernelBuild.h"
#include "dice/Verifier/Sha256.h"
#include "dice/Verifier/Subprocess.h"

#include <gtest/gtest.h>

using namespace dice;

namespace {

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256Hex(million),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  Sha256 a, b;
  a.updateField("ab");
  a.updateField("c");
  b.updateField("a");
  b.updateField("bc");
  EXPECT_NE(a.finishHex(), b.finishHex());
}

TEST(KernelBuild, ParsesTheScaffoldSignature) {
  std::string error;
  auto one = parseDiceForwardSignature(
      "torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1);", error);
  ASSERT_TRUE(one) << error;
  EXPECT_EQ(one->parameters, (std::vector<std::string>{"x0", "x1"}));
  EXPECT_FALSE(one->returnsList);
  EXPECT_EQ(operatorSchema("3f9a", *one), "k_3f9a(Tensor x0, Tensor x1) -> Tensor");

  auto many = parseDiceForwardSignature(
      "std::vector<torch::Tensor>  dice_forward(const torch::Tensor &x0)", error);
  ASSERT_TRUE(many) << error;
  EXPECT_TRUE(many->returnsList);
  EXPECT_EQ(operatorSchema("ab", *many), "k_ab(Tensor x0) -> Tensor[]");
  EXPECT_EQ(many->declaration,
            "std::vector<torch::Tensor> dice_forward(const torch::Tensor &x0);");
}

TEST(KernelBuild, RejectsOtherSignatures) {
  std::string error;
  EXPECT_FALSE(parseDiceForwardSignature("torch::Tensor forward(torch::Tensor x0);", error));
  EXPECT_NE(error.find("not a declaration of dice_forward"), std::string::npos);
  EXPECT_FALSE(parseDiceForwardSignature("int dice_forward(torch::Tensor x0);", error));
  EXPECT_NE(error.find("must return torch::Tensor"), std::string::npos);
  EXPECT_FALSE(parseDiceForwardSignature("torch::Tensor dice_forward(int64_t n);", error));
  EXPECT_EQ(error, "dice_forward parameter 'int64_t n' is not a named torch::Tensor");
  EXPECT_FALSE(parseDiceForwardSignature("torch::Tensor dice_forward(torch::Tensor);", error));
}

TEST(KernelBuild, RegistrationNamesNoFingerprint) {
  std::string error;
  auto signature = parseDiceForwardSignature(
      "std::vector<torch::Tensor> dice_forward(torch::Tensor x0, torch::Tensor x1);",
      error);
  ASSERT_TRUE(signature) << error;
  std::string source = registrationSource(*signature);
  // One object per signature: the operator name comes from the candidate's
  // object, so nothing here may depend on the request.
  EXPECT_NE(source.find("TORCH_LIBRARY_FRAGMENT(dice, m)"), std::string::npos);
  EXPECT_NE(source.find("TORCH_LIBRARY_IMPL(dice, CUDA, m)"), std::string::npos);
  EXPECT_NE(source.find("\"(Tensor x0, Tensor x1) -> Tensor[]\""), std::string::npos)
      << source;
  EXPECT_NE(source.find("return dice_forward(x0, x1);"), std::string::npos);
  EXPECT_NE(source.find("visibility(\"hidden\"))) std::vector<torch::Tensor> "
                        "dice_forward(torch::Tensor x0, torch::Tensor x1);"),
            std::string::npos);
}

TEST(KernelBuild, BadRequestsAreToolErrorsNotCrashes) {
  KernelBuildOptions options;
  options.cacheDir = ::testing::TempDir() + "/dice-kernel-build";
  options.nvccPath = "/nonexistent/nvcc";
  KernelBuildResult result = buildKernelLibrary(
      {"not a fingerprint", "torch::Tensor dice_forward(torch::Tensor x0);", "x"},
      options);
  EXPECT_EQ(result.status, KernelBuildStatus::ToolError);
  EXPECT_NE(result.reason.find("fingerprint"), std::string::npos) << result.reason;
  result = buildKernelLibrary(
      {"00ab", "torch::Tensor dice_forward(torch::Tensor x0);", "x"}, options);
  EXPECT_EQ(result.status, KernelBuildStatus::ToolError);
  EXPECT_NE(result.reason.find("/nonexistent/nvcc"), std::string::npos) << result.reason;
}

TEST(Subprocess, DeadlineKillsTheWholeGroup) {
  std::string log = ::testing::TempDir() + "/dice-subprocess.log";
  // The shell's child would outlive a kill of the shell alone.
  ProcessResult run =
      runProcess({"sh", "-c", "sleep 30 & sleep 30; echo never"}, log, 0.3);
  EXPECT_TRUE(run.timedOut);
  EXPECT_LT(run.milliseconds, 5000);
  EXPECT_FALSE(run.succeeded());
  ProcessResult ok = runProcess({"sh", "-c", "exit 3"}, log, 10);
  EXPECT_EQ(ok.exitCode, 3);
  ProcessResult missing = runProcess({"/nonexistent/tool"}, log, 10);
  EXPECT_FALSE(missing.succeeded());
}

} // namespace
