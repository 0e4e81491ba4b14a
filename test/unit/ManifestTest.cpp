//===- ManifestTest.cpp - the manifest's one reader and writer -----------===//

#include "dice/Runtime/Manifest.h"

#include <gtest/gtest.h>

using namespace dice;

namespace {

Manifest twoKernels() {
  Manifest manifest;
  ManifestKernel a;
  a.library = "k_aaaa.so";
  a.operatorName = "dice::k_aaaa";
  a.symbol = "dice_k_aaaa";
  a.inputs = {{{4, -1}, DType::Float32}, {{8}, DType::BFloat16}};
  a.results = {{{}, DType::Bool}};
  a.verdictJson = R"({"status":"accepted","speedup":2.5})";
  manifest.kernels["aaaa"] = a;
  ManifestKernel b;
  b.operatorName = "dice::k_bbbb"; // no library: registered by the process
  b.results = {{{3, 3}, DType::UInt8}};
  manifest.kernels["bbbb"] = b;
  return manifest;
}

TEST(Manifest, PrintedManifestsReadBackTheSame) {
  Result<std::string> text = printManifest(twoKernels());
  ASSERT_TRUE(text) << text.error().format();
  Result<Manifest> read = parseManifest(*text, "m.json");
  ASSERT_TRUE(read) << read.error().format();
  ASSERT_EQ(read->kernels.size(), 2u);
  const ManifestKernel &a = read->kernels.at("aaaa");
  EXPECT_EQ(a.library, "k_aaaa.so");
  EXPECT_EQ(a.operatorName, "dice::k_aaaa");
  EXPECT_EQ(a.symbol, "dice_k_aaaa");
  ASSERT_EQ(a.inputs.size(), 2u);
  EXPECT_EQ(a.inputs[0].shape, (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(a.inputs[1].dtype, DType::BFloat16);
  ASSERT_EQ(a.results.size(), 1u);
  EXPECT_TRUE(a.results[0].shape.empty());
  EXPECT_EQ(a.results[0].dtype, DType::Bool);
  EXPECT_EQ(a.verdictJson, R"({"speedup":2.5,"status":"accepted"})");
  const ManifestKernel &b = read->kernels.at("bbbb");
  EXPECT_TRUE(b.library.empty());
  EXPECT_TRUE(b.inputs.empty());
  EXPECT_EQ(b.results[0].dtype, DType::UInt8);
  // The text itself is stable: printing what was read gives the same bytes.
  EXPECT_EQ(*printManifest(*read), *text);
  EXPECT_EQ(text->back(), '\n');
}

TEST(Manifest, TheDocumentedExampleReads) {
  // docs/runtime.md's example, as a user would write it by hand.
  Result<Manifest> read = parseManifest(R"({
  "version": 1,
  "kernels": {
    "3f9a0c1d2e4b5a69": {
      "library": "k_3f9a0c1d2e4b5a69.so",
      "operator": "dice::k_3f9a0c1d2e4b5a69",
      "symbol": "dice_k_3f9a0c1d2e4b5a69",
      "inputs": [{"shape": [4, 8], "dtype": "float32"}, {"shape": [8], "dtype": "float32"}],
      "results": [{"shape": [4, 8], "dtype": "float32"}],
      "verdict": {"status": "accepted", "kernel_ms": 0.1, "baseline_ms": 0.24, "speedup": 2.4, "trials": 5}
    }
  }
})",
                                        "manifest.json");
  ASSERT_TRUE(read) << read.error().format();
  EXPECT_EQ(read->kernels.at("3f9a0c1d2e4b5a69").inputs[1].shape,
            (std::vector<int64_t>{8}));
}

std::string errorOf(const std::string &text) {
  Result<Manifest> read = parseManifest(text, "m.json");
  EXPECT_FALSE(read);
  return read ? "" : read.error().format();
}

TEST(Manifest, EveryBadFieldIsNamed) {
  EXPECT_EQ(errorOf("{\n  \"version\": 1,\n  \"kernels\": [\n").rfind(
                "m.json:4:1: error: malformed manifest: ", 0),
            0u)
      << errorOf("{\n  \"version\": 1,\n  \"kernels\": [\n");
  EXPECT_EQ(errorOf(R"({"kernels": {}})"),
            "m.json: error: not a version 1 DICE manifest");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": []})"),
            "m.json: error: the manifest has no 'kernels' object");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": 3}})"),
            "m.json: error: kernels.k: must be an object");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": {"operator": 7,
      "inputs": [], "results": []}}})"),
            "m.json: error: kernels.k.operator: must be a string");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": {"operator": "o",
      "results": []}}})"),
            "m.json: error: kernels.k.inputs: must be an array of tensors");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": {"operator": "o",
      "inputs": [{"dtype": "float32"}], "results": []}}})"),
            "m.json: error: kernels.k.inputs[0].shape: must be an array of "
            "sizes");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": {"operator": "o",
      "inputs": [], "results": [{"shape": [2.5], "dtype": "int8"}]}}})"),
            "m.json: error: kernels.k.results[0].shape: sizes must be "
            "integers, -1 for a dynamic size");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": {"operator": "o",
      "inputs": [], "results": [{"shape": [-2], "dtype": "int8"}]}}})"),
            "m.json: error: kernels.k.results[0].shape: sizes must be "
            "integers, -1 for a dynamic size");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {"k": {"operator": "o",
      "inputs": [], "results": [], "verdict": "accepted"}}})"),
            "m.json: error: kernels.k.verdict: must be an object");
}

// nlohmann reports a number beyond double's range as out_of_range, not as a
// parse_error (found by the manifest fuzz target: it ended the process).
TEST(Manifest, ANumberOutOfRangeIsAnError) {
  EXPECT_EQ(errorOf(R"({"version": 1e999, "kernels": {}})").rfind(
                "m.json: error: malformed manifest: ", 0),
            0u)
      << errorOf(R"({"version": 1e999, "kernels": {}})");
}

TEST(Manifest, MissingFilesSayWhy) {
  Result<Manifest> read = readManifest("/nonexistent/manifest.json");
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().format(), "/nonexistent/manifest.json: error: cannot "
                                   "read: No such file or directory");
}

TEST(Manifest, LibrariesAreFoundBesideTheManifest) {
  ManifestKernel kernel;
  kernel.library = "k_x.so";
  EXPECT_EQ(libraryPath("/a/b/manifest.json", kernel), "/a/b/k_x.so");
  EXPECT_EQ(libraryPath("manifest.json", kernel), "k_x.so");
  kernel.library = "/abs/k_x.so";
  EXPECT_EQ(libraryPath("/a/b/manifest.json", kernel), "/abs/k_x.so");
}

TEST(Manifest, ABadVerdictIsNotPrinted) {
  Manifest manifest = twoKernels();
  manifest.kernels["aaaa"].verdictJson = "[1, 2]";
  Result<std::string> text = printManifest(manifest);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().format(),
            "error: kernels.aaaa.verdict: is not a JSON object");
}

} // namespace
