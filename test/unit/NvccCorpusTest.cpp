//===- NvccCorpusTest.cpp - honest corpus kernels build with nvcc ---------===//
//
// Compile-only (no GPU): every honest kernel of the verifier corpus must
// build for sm_90 with the include setup the verifier uses. nvcc spends
// most of a minute in the torch headers per translation unit, so the
// kernels share one: each file is included in a namespace of its own after
// all their headers were included once at global scope.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> honestKernels() {
  std::vector<fs::path> files;
  for (const auto &entry : fs::directory_iterator(DICE_VERIFIER_CORPUS))
    if (entry.path().filename().string().rfind("honest_", 0) == 0 &&
        entry.path().extension() == ".cu")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(NvccCorpus, HonestKernelsCompileForSm90) {
  if (!fs::exists(DICE_NVCC))
    GTEST_SKIP() << "no nvcc at " << DICE_NVCC;
  std::vector<fs::path> files = honestKernels();
  ASSERT_GE(files.size(), 12u);

  // Headers first, at global scope; then each kernel file in its namespace,
  // where its own #includes are no-ops and its line numbers are its own.
  std::set<std::string> includes;
  for (const fs::path &file : files) {
    std::stringstream in(readFile(file));
    for (std::string line; std::getline(in, line);)
      if (line.rfind("#include", 0) == 0)
        includes.insert(line);
  }
  fs::path dir = fs::path(DICE_TEST_SCRATCH) / "nvcc-corpus";
  fs::create_directories(dir);
  fs::path tu = dir / "honest_kernels.cu";
  {
    std::ofstream out(tu);
    for (const std::string &line : includes)
      out << line << "\n";
    for (const fs::path &file : files)
      out << "namespace " << file.stem().string() << " {\n#include \""
          << file.string() << "\"\n}\n";
  }

  std::string command = std::string(DICE_NVCC) +
                        " -c -arch=sm_90 -std=c++17 --expt-relaxed-constexpr"
                        " -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__"
                        " -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__"
                        " -I" DICE_CANDIDATE_PROLOGUE_DIR " -include dice_prologue.h";
  std::stringstream dirs(DICE_CANDIDATE_INCLUDE_DIRS);
  for (std::string d; std::getline(dirs, d, '|');)
    if (!d.empty())
      command += " -isystem " + d;
  fs::path log = dir / "nvcc.log";
  command += " -o " + (dir / "honest_kernels.o").string() + " " + tu.string() +
             " > " + log.string() + " 2>&1";
  auto start = std::chrono::steady_clock::now();
  int rc = std::system(command.c_str());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("nvcc, %zu honest kernels in one TU: %.1f s\n", files.size(), seconds);
  EXPECT_EQ(rc, 0) << command << "\n" << readFile(log);
}

} // namespace
