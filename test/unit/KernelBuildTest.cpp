//===- KernelBuildTest.cpp - kernel library build -------------------------===//
//
// The parts of the build that need no compiler: the signature, the schema
// and registration it generates, the cache key's hash, the deadline of a
// child process. Then the light build with nvcc (skipped where nvcc or the
// bridge library is missing): the honest corpus builds light, a candidate
// beyond the light API falls back to the full headers, compile errors keep
// their candidate line, and a loaded library registers its operator;
// candidates of several requests share a build, and a failed shared build
// is split by the members its errors name. The full build alone is tested
// by test_dice_verify.py.
//
// DICE_KERNEL_BUILD_TEST_CACHE, when set, is the build cache the nvcc tests
// use (and keep); test_light_build.py loads the libraries from it.
//
//===----------------------------------------------------------------------===//

#include "dice/KernelBuild/GroupSource.h"
#include "dice/KernelBuild/KernelBuild.h"
#include "dice/Sandbox/Subprocess.h"
#include "dice/Support/Sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <dlfcn.h>
#include <unistd.h>
#include <sys/resource.h>

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
  auto one = parseDiceForwardSignature(
      "torch::Tensor dice_forward(torch::Tensor x0, torch::Tensor x1);");
  ASSERT_TRUE(one) << one.error().format();
  EXPECT_EQ(one->parameters, (std::vector<std::string>{"x0", "x1"}));
  EXPECT_FALSE(one->returnsList);
  EXPECT_EQ(operatorSchema("3f9a", *one), "k_3f9a(Tensor x0, Tensor x1) -> Tensor");

  auto many = parseDiceForwardSignature(
      "std::vector<torch::Tensor>  dice_forward(const torch::Tensor &x0)");
  ASSERT_TRUE(many) << many.error().format();
  EXPECT_TRUE(many->returnsList);
  EXPECT_EQ(operatorSchema("ab", *many), "k_ab(Tensor x0) -> Tensor[]");
  EXPECT_EQ(many->declaration,
            "std::vector<torch::Tensor> dice_forward(const torch::Tensor &x0);");
}

TEST(KernelBuild, RejectsOtherSignatures) {
  auto error = [](std::string_view declaration) {
    Result<DiceForwardSignature> parsed =
        parseDiceForwardSignature(declaration);
    EXPECT_FALSE(parsed) << declaration;
    return parsed ? std::string() : parsed.error().message;
  };
  EXPECT_NE(error("torch::Tensor forward(torch::Tensor x0);")
                .find("not a declaration of dice_forward"),
            std::string::npos);
  EXPECT_NE(error("int dice_forward(torch::Tensor x0);")
                .find("must return torch::Tensor"),
            std::string::npos);
  EXPECT_EQ(error("torch::Tensor dice_forward(int64_t n);"),
            "dice_forward parameter 'int64_t n' is not a named torch::Tensor");
  EXPECT_NE(error("torch::Tensor dice_forward(torch::Tensor);"), "");
}

TEST(KernelBuild, RegistrationNamesNoFingerprint) {
  auto signature = parseDiceForwardSignature(
      "std::vector<torch::Tensor> dice_forward(torch::Tensor x0, torch::Tensor "
      "x1);");
  ASSERT_TRUE(signature) << signature.error().format();
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

TEST(KernelBuild, LightEntryCallsDiceForwardAndRegisters) {
  auto signature = parseDiceForwardSignature(
      "std::vector<torch::Tensor> dice_forward(torch::Tensor &x0, "
      "torch::Tensor x1);");
  ASSERT_TRUE(signature) << signature.error().format();
  std::string source = lightEntrySource("ab12", *signature);
  EXPECT_NE(source.find("int dice_light_entry_k_ab12("), std::string::npos) << source;
  // Lvalues, so a dice_forward taking references binds.
  EXPECT_NE(source.find("a0 = ::dice_light::Tensor::borrow(inputs[0]);"),
            std::string::npos);
  EXPECT_NE(source.find("return dice_forward(a0, a1);"), std::string::npos);
  EXPECT_NE(source.find("if (numInputs != 2)"), std::string::npos);
  EXPECT_NE(source.find("diceLightRegistration(\"k_ab12\", "
                        "\"k_ab12(Tensor x0, Tensor x1) -> Tensor[]\", 2, true, "
                        "&dice_light_entry_k_ab12)"),
            std::string::npos)
      << source;
  EXPECT_EQ(kernelBuildModeName(KernelBuildMode::Light), "light");
}

TEST(KernelBuild, LightModeWithoutBridgeIsAToolError) {
  KernelBuildOptions options;
  options.cacheDir = ::testing::TempDir() + "/dice-kernel-build-light";
  options.nvccPath = "/bin/true";
  options.mode = KernelBuildMode::Light;
  KernelBuildResult result = buildKernelLibrary(
      {"00ab", "torch::Tensor dice_forward(torch::Tensor x0);", "x"}, options);
  EXPECT_EQ(result.status, KernelBuildStatus::ToolError);
  EXPECT_NE(result.reason.find("bridge"), std::string::npos) << result.reason;
}

TEST(GroupSource, WhatMayShareATranslationUnit) {
  EXPECT_EQ(groupIneligibility("#include <torch/extension.h>\n"
                               "#include \"cuda_fp16.h\" // halves\n"
                               "#define CHECK(x) TORCH_CHECK(x, #x)\n"
                               "#define WIDE \\\n  4\n"
                               "__global__ void k(float *x) {\n"
                               "#pragma unroll 4\n"
                               "  for (int i = 0; i < WIDE; ++i) x[i] = 0;\n"
                               "}\n"),
            "");
  // Directives inside a block comment are text.
  EXPECT_EQ(groupIneligibility("/* notes\n#ifdef NOT_A_DIRECTIVE\n*/\nint x;\n"),
            "");
  for (const char *source :
       {"#ifdef FAST\nint x;\n#endif\n", "#if 1\n#endif\n", "#undef CHECK\n",
        "#line 40\n", "#pragma nv_diag_suppress 177\n",
        "#define HEADER <cmath>\n#include HEADER\n",
        "extern \"C\" __global__ void k() {}\n",
        "extern  \"C\" { int f(); }\n"}) {
    EXPECT_NE(groupIneligibility(source), "") << source;
  }
}

TEST(GroupSource, HoistsIncludesKeepsLinesAndUndefinesMacros) {
  Result<DiceForwardSignature> one =
      parseDiceForwardSignature("torch::Tensor dice_forward(torch::Tensor x0);");
  Result<DiceForwardSignature> two = parseDiceForwardSignature(
      "std::vector<torch::Tensor> dice_forward(torch::Tensor x0, "
      "torch::Tensor x1);");
  ASSERT_TRUE(one && two);
  std::string unit = groupTranslationUnit(
      {{"aa", *one,
        "#include <torch/extension.h>\n#define SCALE 2\n"
        "torch::Tensor dice_forward(torch::Tensor x0) { return x0; }\n"},
       {"bb", *two,
        "// second\n#include <torch/extension.h>\n#include <cfloat>\n"
        "std::vector<torch::Tensor> dice_forward(torch::Tensor x0, "
        "torch::Tensor x1) { return {x0, x1}; }\n"}});
  // Each include once, at the top, under the line of its first member.
  EXPECT_NE(unit.find("#line 1 \"candidate0.cu\"\n#include <torch/extension.h>\n"),
            std::string::npos) << unit;
  EXPECT_NE(unit.find("#line 3 \"candidate1.cu\"\n#include <cfloat>\n"),
            std::string::npos) << unit;
  size_t includes = 0;
  for (size_t at = 0; (at = unit.find("#include", at)) != std::string::npos; ++at)
    ++includes;
  EXPECT_EQ(includes, 2u) << unit;
  EXPECT_LT(unit.find("#include <cfloat>"), unit.find("namespace dice_member0_"));
  // Member texts keep their line numbers: blanked include lines stay.
  EXPECT_NE(unit.find("#line 1 \"candidate1.cu\"\n// second\n\n\nstd::vector"),
            std::string::npos) << unit;
  // Each member's own declaration, entry and registration in its namespace;
  // its macros do not reach the next member.
  size_t first = unit.find("namespace dice_member0_ {");
  size_t undef = unit.find("#undef SCALE");
  size_t second = unit.find("namespace dice_member1_ {");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(undef, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, undef);
  EXPECT_LT(undef, second);
  EXPECT_NE(unit.find("dice_light_entry_k_aa", first), std::string::npos);
  EXPECT_GT(unit.find("dice_light_entry_k_bb"), second);
  EXPECT_NE(unit.find("#line 1 \"dice_entry1.cu\""), std::string::npos);
}

TEST(GroupSource, BlamesTheMembersErrorsName) {
  // nvcc's front end, gcc, ptxas (mangled names) and the linker.
  EXPECT_EQ(blamedMembers("/tmp/x/candidate2.cu(14): error: expected a \";\"\n"
                          "1 error detected in the compilation of \"group.cu\".\n",
                          4),
            (std::set<size_t>{2}));
  EXPECT_EQ(blamedMembers("candidate0.cu:3:1: error: 'foo' was not declared\n"
                          "dice_entry3.cu(9): error: no instance of function\n",
                          4),
            (std::set<size_t>{0, 3}));
  EXPECT_EQ(blamedMembers("ptxas error   : Entry function "
                          "'_ZN13dice_member12_6kernelEPf' uses too much shared data\n",
                          16),
            (std::set<size_t>{12}));
  EXPECT_EQ(blamedMembers("group.o: undefined reference to "
                          "`dice_member1_::dice_forward(dice_light::Tensor)'\n"
                          "collect2: error: ld returned 1 exit status\n",
                          2),
            (std::set<size_t>{1}));
  // Warnings name no culprit; an error naming no member blames nobody; an
  // index past the group is not a member.
  EXPECT_TRUE(blamedMembers("candidate1.cu(3): warning #177-D: unused\n"
                            "group.cu(2): catastrophic error: cannot open source file\n",
                            2)
                  .empty());
  EXPECT_TRUE(blamedMembers("candidate7.cu(1): error: x\n", 2).empty());
}

#if defined(DICE_NVCC) && defined(DICE_LIGHT_BRIDGE_LIBRARY)

namespace fs = std::filesystem;

std::string readText(const fs::path &path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// The dice_forward declaration of a corpus kernel, from its definition.
std::string declarationOf(const std::string &source) {
  static const std::regex definition(
      R"(((?:std::vector<\s*torch::Tensor\s*>|torch::Tensor)\s+dice_forward\s*\([^)]*\)))");
  std::smatch m;
  if (!std::regex_search(source, m, definition))
    return "";
  return m[1].str() + ";";
}

std::string outputOf(const std::string &command) {
  std::string out;
  if (FILE *pipe = popen(command.c_str(), "r")) {
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      out.append(buffer, n);
    pclose(pipe);
  }
  return out;
}

/// The symbols a library defines in its dynamic symbol table.
std::set<std::string> exportedSymbols(const std::string &library) {
  std::stringstream in(outputOf("nm -D --defined-only " + library));
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);) {
    std::stringstream fields(line);
    std::string address, kind, name;
    if (fields >> address >> kind >> name)
      names.insert(name);
  }
  return names;
}

/// A candidate nvcc rejects at line 5 (it names the line after the missing
/// semicolon).
constexpr const char *kMissingSemicolon = R"(#include <torch/extension.h>
__global__ void k(float *x) { x[0] = 1.f; }
torch::Tensor dice_forward(torch::Tensor x0) {
  auto y = x0.contiguous()
  return y;
}
)";

class LightBuild : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fs::exists(DICE_NVCC))
      GTEST_SKIP() << "no nvcc at '" DICE_NVCC "'";
    if (!fs::exists(DICE_LIGHT_BRIDGE_LIBRARY))
      GTEST_SKIP() << "no bridge library at '" DICE_LIGHT_BRIDGE_LIBRARY "'";
    options.nvccPath = DICE_NVCC;
    options.prologueDir = DICE_CANDIDATE_PROLOGUE_DIR;
    std::stringstream dirs(DICE_CANDIDATE_INCLUDE_DIRS);
    for (std::string dir; std::getline(dirs, dir, '|');)
      if (!dir.empty())
        options.includeDirs.push_back(dir);
    options.torchLibraryDir = DICE_TORCH_LIBRARY_DIR;
    options.lightIncludeDir = DICE_LIGHT_INCLUDE_DIR;
    options.lightBridgeLibrary = DICE_LIGHT_BRIDGE_LIBRARY;
    const char *cache = std::getenv("DICE_KERNEL_BUILD_TEST_CACHE");
    options.cacheDir = cache ? std::string(cache)
                             : ::testing::TempDir() + "/dice-light-build-cache";
  }

  /// CPU time of the finished children (nvcc and its tools) so far.
  static double childCpuSeconds() {
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
           (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  }

  /// The schema the dispatcher holds for `dice::<name>`, read through the
  /// bridge (which loads LibTorch); empty when none is registered.
  static std::string registeredSchema(const std::string &name) {
    static void *bridge = dlopen(DICE_LIGHT_BRIDGE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    using SchemaFn = char *(*)(const char *);
    auto schemaOf = bridge ? reinterpret_cast<SchemaFn>(
                                 dlsym(bridge, "dice_light_registered_schema"))
                           : nullptr;
    if (!schemaOf) {
      ADD_FAILURE() << "no bridge: " << dlerror();
      return "";
    }
    char *schema = schemaOf(name.c_str());
    std::string text = schema ? schema : "";
    std::free(schema);
    return text;
  }

  KernelBuildOptions options;
};

// The library's path is absolute even when the cache is named relative to
// the caller's directory (GPU workers load it from their own directories).
TEST_F(LightBuild, LibraryPathIsAbsoluteForARelativeCache) {
  fs::path source = fs::path(DICE_VERIFIER_CORPUS) / "honest_add.cu";
  ASSERT_TRUE(fs::exists(source)) << source;
  std::string text = readText(source);
  fs::path root = fs::path(::testing::TempDir()) / "dice-relative-cache";
  fs::create_directories(root);
  fs::path was = fs::current_path();
  fs::current_path(root);
  options.cacheDir = "cache";
  KernelBuildResult result =
      buildKernelLibrary({"relative_add", declarationOf(text), text}, options);
  fs::current_path(was);
  ASSERT_TRUE(result.ok()) << result.reason << "\n" << result.diagnostics;
  EXPECT_TRUE(fs::path(result.artifactPath).is_absolute()) << result.artifactPath;
  EXPECT_EQ(result.artifactPath.rfind((root / "cache").string(), 0), 0u) << result.artifactPath;
  EXPECT_TRUE(fs::exists(result.artifactPath));
}

TEST_F(LightBuild, HonestCorpusBuildsLightAndExportsOnlyItsEntry) {
  options.mode = KernelBuildMode::Light;
  std::vector<KernelBuildRequest> requests;
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(DICE_VERIFIER_CORPUS)) {
    std::string name = entry.path().stem().string();
    if (name.rfind("honest_", 0) != 0 || entry.path().extension() != ".cu")
      continue;
    std::string source = readText(entry.path());
    std::string declaration = declarationOf(source);
    ASSERT_FALSE(declaration.empty()) << name;
    requests.push_back({"light_" + name.substr(7), declaration, source});
    names.push_back(name);
  }
  ASSERT_GE(requests.size(), 14u);
  for (size_t i = 0; i < requests.size(); ++i) {
    double cpu = childCpuSeconds();
    KernelBuildResult result = buildKernelLibrary(requests[i], options);
    std::printf("light build %-32s %s %6.2f s wall %6.2f s CPU%s\n",
                names[i].c_str(),
                std::string(kernelBuildStatusName(result.status)).c_str(),
                result.milliseconds / 1000, childCpuSeconds() - cpu,
                result.cacheHit ? " (cache hit)" : "");
    ASSERT_TRUE(result.ok()) << names[i] << ": " << result.reason << "\n"
                             << result.diagnostics;
    EXPECT_EQ(result.mode, KernelBuildMode::Light);
    // Everything but the C entry is local: libraries loaded into one
    // process never bind each other's kernels, helpers or templates.
    EXPECT_EQ(exportedSymbols(result.artifactPath),
              (std::set<std::string>{"dice_light_entry_k_" +
                                     requests[i].fingerprint}))
        << names[i];
    std::string needed = outputOf("readelf -d " + result.artifactPath);
    EXPECT_NE(needed.find("libDiceLightBridge.so"), std::string::npos) << needed;
    EXPECT_EQ(needed.find("libtorch"), std::string::npos) << needed;
    EXPECT_EQ(needed.find("libc10"), std::string::npos) << needed;
  }
}

TEST_F(LightBuild, HonestAddRegistersFromCpp) {
  std::string source =
      readText(fs::path(DICE_VERIFIER_CORPUS) / "honest_add.cu");
  KernelBuildResult result = buildKernelLibrary(
      {"light_add", declarationOf(source), source}, options);
  ASSERT_TRUE(result.ok()) << result.reason << "\n" << result.diagnostics;
  EXPECT_EQ(result.mode, KernelBuildMode::Light);

  // Loading the library loads the bridge and LibTorch behind it.
  void *library = dlopen(result.artifactPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  EXPECT_EQ(registeredSchema("k_light_add"),
            "dice::k_light_add(Tensor x0, Tensor x1) -> Tensor");
  // Unloading deregisters, so a rebuilt candidate can be loaded again.
  ASSERT_EQ(dlclose(library), 0);
  EXPECT_EQ(registeredSchema("k_light_add"), "");
}

TEST_F(LightBuild, CpuOnlyCandidateBuildsLight) {
  // Used by test_light_build.py: runs on CPU tensors (no kernel launch), so
  // the entry, the factories and list results are checked without a GPU.
  std::string source = R"(#include <torch/extension.h>
#include <vector>
std::vector<torch::Tensor> dice_forward(torch::Tensor x0, torch::Tensor x1) {
  TORCH_CHECK(x0.dim() == 2, "x0 must be 2-D, got ", x0.dim(), " dims");
  auto flat = x0.contiguous().view({-1});
  auto filled = torch::full({x0.size(-1)}, 3.5, x0.options());
  auto zeros = torch::zeros_like(x1, torch::kInt64);
  float *p = flat.data_ptr<float>();
  p[0] = static_cast<float>(x0.sizes()[0] * 100 + x0.stride(0));
  return {flat, filled, zeros};
}
)";
  KernelBuildResult result = buildKernelLibrary(
      {"light_cpu", "std::vector<torch::Tensor> dice_forward(torch::Tensor x0, "
                    "torch::Tensor x1);",
       source},
      options);
  ASSERT_TRUE(result.ok()) << result.reason << "\n" << result.diagnostics;
  EXPECT_EQ(result.mode, KernelBuildMode::Light);
}

TEST_F(LightBuild, MessagesFormatLikeLibTorch) {
  // Used by test_light_build.py: TORCH_CHECK and c10::str take what
  // LibTorch's take, std::string where the candidate includes <string>,
  // and the light types print on a std::ostream where it includes
  // <iostream> (the light header includes neither).
  std::string source = R"(#include <torch/extension.h>
#include <iostream>
#include <string>
torch::Tensor dice_forward(torch::Tensor x0) {
  std::string name = "x0";
  std::cerr << "shape " << x0.sizes() << " " << x0.scalar_type() << " "
            << x0.device() << std::endl;
  std::string said = c10::str(name, " is ", x0.dim(), "-D");
  TORCH_CHECK(x0.dim() == 1, said, ": sizes ", x0.sizes(), ", dtype ",
              x0.scalar_type(), ", device ", x0.device(), ", scale ", 2.5,
              ", half ", at::Half(1.5f), ", flag ", true, ", count ",
              x0.numel() * 1000000000000LL);
  return x0;
}
)";
  KernelBuildResult result = buildKernelLibrary(
      {"light_messages", "torch::Tensor dice_forward(torch::Tensor x0);",
       source},
      options);
  ASSERT_TRUE(result.ok()) << result.reason << "\n" << result.diagnostics;
  EXPECT_EQ(result.mode, KernelBuildMode::Light);
}

TEST_F(LightBuild, ApiBeyondTheLightHeaderFallsBackToFull) {
  // Tensor arithmetic is not in the light API; the full headers have it.
  std::string source = R"(#include <torch/extension.h>
torch::Tensor dice_forward(torch::Tensor x0) {
  return x0 * 2;
}
)";
  KernelBuildRequest request{"light_fallback",
                             "torch::Tensor dice_forward(torch::Tensor x0);",
                             source};
  options.mode = KernelBuildMode::Light;
  KernelBuildResult light = buildKernelLibrary(request, options);
  EXPECT_EQ(light.status, KernelBuildStatus::CompileError);

  options.mode = KernelBuildMode::Auto;
  KernelBuildResult result = buildKernelLibrary(request, options);
  ASSERT_TRUE(result.ok()) << result.reason << "\n" << result.diagnostics;
  EXPECT_EQ(result.mode, KernelBuildMode::Full);
  EXPECT_NE(result.lightFailure.find("line 3"), std::string::npos)
      << result.lightFailure;
  EXPECT_NE(result.key, light.key);
}

TEST_F(LightBuild, CompileErrorKeepsTheCandidateLine) {
  KernelBuildResult result = buildKernelLibrary(
      {"light_error", "torch::Tensor dice_forward(torch::Tensor x0);",
       kMissingSemicolon},
      options);
  ASSERT_EQ(result.status, KernelBuildStatus::CompileError) << result.reason;
  // The full build reports it, so the message is the one the analysis and
  // a load_inline build would give.
  EXPECT_EQ(result.mode, KernelBuildMode::Full);
  EXPECT_EQ(result.reason.rfind("line 5:", 0), 0u) << result.reason;
  EXPECT_EQ(result.lightFailure.rfind("line 5:", 0), 0u) << result.lightFailure;
}

TEST_F(LightBuild, HonestCorpusSharesBuildsAndEachMemberRegisters) {
  options.mode = KernelBuildMode::Light;
  options.groupSize = 4;
  std::vector<KernelBuildRequest> requests;
  for (const auto &entry : fs::directory_iterator(DICE_VERIFIER_CORPUS)) {
    std::string name = entry.path().stem().string();
    if (name.rfind("honest_", 0) != 0 || entry.path().extension() != ".cu")
      continue;
    std::string source = readText(entry.path());
    ASSERT_EQ(groupIneligibility(source), "") << name;
    requests.push_back({"group_" + name.substr(7), declarationOf(source), source});
  }
  ASSERT_GE(requests.size(), 14u);
  std::vector<KernelBuildResult> results = buildAll(requests, options, 2);
  std::map<std::string, std::set<std::string>> members;
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << requests[i].fingerprint << ": "
                                 << results[i].reason << "\n"
                                 << results[i].diagnostics;
    EXPECT_TRUE(results[i].sharedLibrary) << requests[i].fingerprint;
    EXPECT_EQ(results[i].mode, KernelBuildMode::Light);
    members[results[i].artifactPath].insert("k_" + requests[i].fingerprint);
  }
  // Two jobs: as many groups as keep both busy, none above four.
  EXPECT_EQ(members.size(), (requests.size() + 3) / 4);
  for (const auto &[library, ops] : members) {
    std::set<std::string> entries;
    for (const std::string &op : ops)
      entries.insert("dice_light_entry_" + op);
    EXPECT_EQ(exportedSymbols(library), entries) << library;
  }
  // Loading a shared library registers every member's operator, with its
  // own schema; unloading deregisters them all.
  const auto &[library, ops] = *members.begin();
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  for (const std::string &op : ops)
    EXPECT_EQ(registeredSchema(op).rfind("dice::" + op + "(Tensor x0", 0), 0u)
        << op << ": " << registeredSchema(op);
  ASSERT_EQ(dlclose(handle), 0);
  for (const std::string &op : ops)
    EXPECT_EQ(registeredSchema(op), "") << op;
}

TEST_F(LightBuild, FailedSharedBuildGivesEachCandidateItsOwnVerdict) {
  // A fresh cache, so that nothing below is a cache hit.
  options.cacheDir = ::testing::TempDir() + "/dice-group-split-" +
                     std::to_string(getpid());
  options.mode = KernelBuildMode::Light;
  options.groupSize = 8;
  std::vector<KernelBuildRequest> requests;
  for (const char *name : {"honest_add", "honest_softmax", "honest_transpose"}) {
    std::string source =
        readText(fs::path(DICE_VERIFIER_CORPUS) / (std::string(name) + ".cu"));
    requests.push_back({std::string("split_") + name, declarationOf(source), source});
  }
  requests.insert(requests.begin() + 1,
                  {"split_broken", "torch::Tensor dice_forward(torch::Tensor x0);",
                   kMissingSemicolon});
  std::string conditional = "#ifndef WIDTH\n#define WIDTH 1\n#endif\n" +
                            requests[0].cudaSource;
  requests.push_back({"split_conditional", requests[0].signature, conditional});

  std::vector<KernelBuildResult> results = buildAll(requests, options, 1);
  // The broken candidate's verdict and line are those of its own build.
  ASSERT_EQ(results[1].status, KernelBuildStatus::CompileError);
  EXPECT_FALSE(results[1].sharedLibrary);
  EXPECT_EQ(results[1].reason.rfind("line 5:", 0), 0u) << results[1].reason;
  EXPECT_NE(results[1].diagnostics.find("candidate.cu(5)"), std::string::npos)
      << results[1].diagnostics;
  // The others share the second try.
  for (size_t i : {0, 2, 3}) {
    ASSERT_TRUE(results[i].ok()) << results[i].reason << "\n" << results[i].diagnostics;
    EXPECT_TRUE(results[i].sharedLibrary);
    EXPECT_EQ(results[i].artifactPath, results[0].artifactPath);
  }
  // A conditional may not share: built alone, a library of its own.
  ASSERT_TRUE(results[4].ok()) << results[4].reason;
  EXPECT_FALSE(results[4].sharedLibrary);
  EXPECT_EQ(exportedSymbols(results[4].artifactPath),
            (std::set<std::string>{"dice_light_entry_k_split_conditional"}));
  fs::remove_all(options.cacheDir);
}

#endif // DICE_NVCC && DICE_LIGHT_BRIDGE_LIBRARY

} // namespace
