//===- RuntimeTest.cpp - the DICE runtime's C ABI, on CPU -----------------===//
//
// The kernels are registered here for the CPU key (and one in a small
// library the runtime loads), so every path but CUDA staging runs without a
// GPU. Descriptors are built by hand, as a trampoline builds them from MLIR
// memrefs. Files are handled with POSIX calls: libtorch.so exports
// std::filesystem symbols of its own that crash when a test resolves to them.
//
//===----------------------------------------------------------------------===//

#include "dice/Runtime/DiceRuntime.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

at::Tensor scaleAdd(const at::Tensor &a, const at::Tensor &b) {
  return a * 2 + b;
}
std::vector<at::Tensor> pair(const at::Tensor &a) { return {a + 1, a.t()}; }
at::Tensor wrongDtype(const at::Tensor &a) { return a.to(at::kDouble); }
at::Tensor onlyOnCuda(const at::Tensor &a) { return a; }
/// Reads its input's memory as row-major without checking, as a generated
/// kernel judged on contiguous inputs may.
at::Tensor rowMajorCopy(const at::Tensor &a) {
  at::Tensor out = at::empty(a.sizes(), a.options());
  std::memcpy(out.data_ptr<float>(), a.data_ptr<float>(),
              a.numel() * sizeof(float));
  return out;
}

} // namespace

TORCH_LIBRARY_FRAGMENT(dice, m) {
  m.def("k_runtimetest(Tensor a, Tensor b) -> Tensor");
  m.def("k_runtimepair(Tensor a) -> Tensor[]");
  m.def("k_runtimebaddtype(Tensor a) -> Tensor");
  m.def("k_runtimecuda(Tensor a) -> Tensor");
  m.def("k_runtimerowmajor(Tensor a) -> Tensor");
}
TORCH_LIBRARY_IMPL(dice, CPU, m) {
  m.impl("k_runtimetest", TORCH_FN(scaleAdd));
  m.impl("k_runtimepair", TORCH_FN(pair));
  m.impl("k_runtimebaddtype", TORCH_FN(wrongDtype));
  m.impl("k_runtimerowmajor", TORCH_FN(rowMajorCopy));
}
TORCH_LIBRARY_IMPL(dice, CUDA, m) {
  m.impl("k_runtimecuda", TORCH_FN(onlyOnCuda));
}

namespace {

/// Removes a flat directory and its files. Not std::filesystem::remove_all:
/// libtorch.so exports a copy of it that crashes when this binary binds to it.
void removeDir(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        ::unlink((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

const char *kManifest = R"({
  "version": 1,
  "kernels": {
    "runtimetest": {
      "operator": "dice::k_runtimetest",
      "inputs": [{"shape": [2, 3], "dtype": "float32"},
                 {"shape": [2, 3], "dtype": "float32"}],
      "results": [{"shape": [2, 3], "dtype": "float32"}]
    },
    "runtimepair": {
      "library": null,
      "operator": "dice::k_runtimepair",
      "inputs": [{"shape": [2, 3], "dtype": "float32"}],
      "results": [{"shape": [2, 3], "dtype": "float32"},
                  {"shape": [3, 2], "dtype": "float32"}]
    },
    "runtimerowmajor": {
      "operator": "dice::k_runtimerowmajor",
      "inputs": [{"shape": [2, 3], "dtype": "float32"}],
      "results": [{"shape": [2, 3], "dtype": "float32"}]
    },
    "runtimebaddtype": {
      "operator": "dice::k_runtimebaddtype",
      "inputs": [{"shape": [2], "dtype": "float32"}],
      "results": [{"shape": [2], "dtype": "float32"}]
    },
    "runtimecuda": {
      "operator": "dice::k_runtimecuda",
      "inputs": [{"shape": [2], "dtype": "float32"}],
      "results": [{"shape": [2], "dtype": "float32"}]
    },
    "runtimeunregistered": {
      "operator": "dice::k_runtimeunregistered",
      "inputs": [],
      "results": []
    },
    "runtimelibrary": {
      "library": ")" DICE_RUNTIME_TEST_KERNEL R"(",
      "operator": "dice::k_runtimelibrary",
      "inputs": [{"shape": [-1], "dtype": "float32"}],
      "results": [{"shape": [-1], "dtype": "float32"}]
    }
  }
})";

/// A descriptor of `t`'s memory; `t` must outlive it.
struct Ref {
  std::vector<int64_t> sizes, strides;
  DiceMemRef ref;

  explicit Ref(const at::Tensor &t, bool withData = true)
      : sizes(t.sizes().vec()), strides(t.strides().vec()) {
    ref = {withData ? t.data_ptr() : nullptr,
           t.dim(),
           sizes.data(),
           strides.data(),
           DICE_DTYPE_FLOAT32,
           DICE_DEVICE_CPU};
  }
  /// An empty result slot of rank `rank` for the runtime to fill.
  static Ref result(int64_t rank) {
    return Ref(at::zeros(std::vector<int64_t>(rank, 1)), /*withData=*/false);
  }
};

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp ? tmp : "/tmp") + "/dice-runtime-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    // The runtime names manifests by their real path.
    char *real = ::realpath(pattern.c_str(), nullptr);
    ASSERT_NE(real, nullptr);
    dir = real;
    std::free(real);
  }
  void TearDown() override {
    dice_runtime_close();
    removeDir(dir);
  }

  std::string write(const std::string &name, const std::string &text) {
    std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  /// Opens the test manifest; fails the test on error.
  void open() {
    std::string path = write("manifest.json", kManifest);
    ASSERT_EQ(dice_runtime_open(path.c_str(), error, sizeof error), 0) << error;
  }
  /// The message of a failing open.
  std::string openError(const std::string &text) {
    std::string path = write("manifest.json", text);
    EXPECT_NE(dice_runtime_open(path.c_str(), error, sizeof error), 0);
    return error;
  }
  int call(const char *fp, std::vector<Ref *> inputs,
           std::vector<Ref *> results) {
    std::vector<DiceMemRef> in, out;
    for (Ref *r : inputs)
      in.push_back(r->ref);
    for (Ref *r : results)
      out.push_back(r->ref);
    int rc = dice_runtime_call(fp, in.size(), in.data(), out.size(), out.data(),
                               error, sizeof error);
    for (size_t i = 0; i < results.size(); ++i)
      results[i]->ref = out[i];
    return rc;
  }

  std::string dir;
  char error[2048] = "";
};

at::Tensor viewOf(const DiceMemRef &ref) {
  return at::from_blob(ref.data, at::IntArrayRef(ref.sizes, ref.rank),
                       at::IntArrayRef(ref.strides, ref.rank), at::kFloat);
}

TEST_F(RuntimeTest, ContiguousIntoCallerBuffer) {
  open();
  at::Tensor a = at::randn({2, 3}), b = at::randn({2, 3});
  at::Tensor out = at::full({2, 3}, -7.0f);
  Ref ra(a), rb(b), rout(out);
  ASSERT_EQ(call("runtimetest", {&ra, &rb}, {&rout}), 0) << error;
  EXPECT_TRUE(at::equal(out, a * 2 + b));
  EXPECT_EQ(rout.ref.data, out.data_ptr());
  EXPECT_EQ(dice_runtime_live_results(), 0u);
}

TEST_F(RuntimeTest, StridedInputsAndResultBuffer) {
  open();
  // a: the transpose of a 3x2 buffer; b: row 1 of a 3x3 buffer broadcast
  // over two rows (stride 0) at an offset; out: a transposed buffer.
  at::Tensor aBase = at::randn({3, 2}), bBase = at::randn({3, 3});
  at::Tensor a = aBase.t(), b = bBase[1].expand({2, 3});
  at::Tensor outBase = at::zeros({3, 2}), out = outBase.t();
  Ref ra(a), rb(b), rout(out);
  ASSERT_EQ(rb.strides, (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(call("runtimetest", {&ra, &rb}, {&rout}), 0) << error;
  EXPECT_TRUE(at::equal(out, a * 2 + b));
  EXPECT_TRUE(at::equal(outBase, (a * 2 + b).t()));
}

TEST_F(RuntimeTest, KernelsGetContiguousInputs) {
  open();
  // The verifier judged kernels on contiguous inputs: a transposed view is
  // handed over as a row-major copy, and the caller's memory is untouched.
  at::Tensor base = at::randn({3, 2}), a = base.t(), before = base.clone();
  at::Tensor out = at::zeros({2, 3});
  Ref ra(a), rout(out);
  ASSERT_EQ(call("runtimerowmajor", {&ra}, {&rout}), 0) << error;
  EXPECT_TRUE(at::equal(out, a));
  EXPECT_TRUE(at::equal(base, before));
}

TEST_F(RuntimeTest, RuntimeOwnedResultsAreDescribed) {
  open();
  at::Tensor a = at::randn({2, 3});
  Ref ra(a), r0 = Ref::result(2), r1 = Ref::result(2);
  ASSERT_EQ(call("runtimepair", {&ra}, {&r0, &r1}), 0) << error;
  ASSERT_NE(r0.ref.data, nullptr);
  ASSERT_NE(r1.ref.data, nullptr);
  EXPECT_EQ(r0.sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r0.strides, (std::vector<int64_t>{3, 1}));
  // a.t() comes back as the kernel made it: no copy into a new layout.
  EXPECT_EQ(r1.sizes, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r1.strides, (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(at::equal(viewOf(r0.ref), a + 1));
  EXPECT_TRUE(at::equal(viewOf(r1.ref), a.t()));
  EXPECT_EQ(dice_runtime_live_results(), 2u);
  EXPECT_EQ(dice_runtime_release(r0.ref.data), 0);
  EXPECT_EQ(dice_runtime_release(r0.ref.data), 1);
  EXPECT_EQ(dice_runtime_live_results(), 1u);
  dice_runtime_close();
  EXPECT_EQ(dice_runtime_live_results(), 0u);
}

TEST_F(RuntimeTest, LoadsTheLibraryThatRegistersTheOp) {
  open();
  at::Tensor x = at::randn({5}), out = at::zeros({5});
  Ref rx(x), rout(out);
  ASSERT_EQ(call("runtimelibrary", {&rx}, {&rout}), 0) << error;
  EXPECT_TRUE(at::equal(out, x * x));
}

TEST_F(RuntimeTest, ReopeningIsANoOp) {
  open();
  open();
  at::Tensor a = at::randn({2, 3}), b = at::randn({2, 3}),
             out = at::zeros({2, 3});
  Ref ra(a), rb(b), rout(out);
  EXPECT_EQ(call("runtimetest", {&ra, &rb}, {&rout}), 0) << error;
}

TEST_F(RuntimeTest, AReplacedManifestIsReadAgain) {
  // What dice-lower does when a second lowering adds a kernel: the new
  // manifest replaces the old one by a rename.
  std::string path = write("manifest.json", R"({"version": 1, "kernels": {
    "runtimetest": {"operator": "dice::k_runtimetest",
      "inputs": [{"shape": [2, 3], "dtype": "float32"},
                 {"shape": [2, 3], "dtype": "float32"}],
      "results": [{"shape": [2, 3], "dtype": "float32"}]}}})");
  ASSERT_EQ(dice_runtime_open(path.c_str(), error, sizeof error), 0) << error;
  at::Tensor x = at::randn({2, 3});
  Ref rx(x), r0 = Ref::result(2), r1 = Ref::result(2);
  EXPECT_NE(call("runtimepair", {&rx}, {&r0, &r1}), 0);

  std::string next = write("manifest.json.tmp", kManifest);
  ASSERT_EQ(::rename(next.c_str(), path.c_str()), 0);
  ASSERT_EQ(dice_runtime_open(path.c_str(), error, sizeof error), 0) << error;
  EXPECT_EQ(call("runtimepair", {&rx}, {&r0, &r1}), 0) << error;
  dice_runtime_release(r0.ref.data);
  dice_runtime_release(r1.ref.data);
}

TEST_F(RuntimeTest, DescribesTheCheckedManifest) {
  std::string path = dir + "/manifest.json";
  EXPECT_NE(dice_runtime_describe(path.c_str(), nullptr, 0, nullptr, error,
                                  sizeof error),
            0);
  EXPECT_EQ(std::string(error),
            path + ": not opened (dice_runtime_open it first)");

  write("manifest.json", R"({"version": 1, "kernels": {"runtimetest": {
      "operator": "dice::k_runtimetest", "library": null, "extra": 1,
      "inputs": [{"shape": [2, -1], "dtype": "float32"}],
      "results": [{"shape": [], "dtype": "bool"}]}}})");
  ASSERT_EQ(dice_runtime_open(path.c_str(), error, sizeof error), 0) << error;
  // Asked with too small a buffer, it says how much it needs.
  size_t needed = 0;
  char small[8];
  ASSERT_EQ(dice_runtime_describe(path.c_str(), small, sizeof small, &needed,
                                  error, sizeof error),
            0)
      << error;
  ASSERT_GT(needed, sizeof small);
  EXPECT_EQ(std::string(small), "{\n  \"ke"); // 7 bytes and the NUL
  std::string text(needed, '\0');
  ASSERT_EQ(dice_runtime_describe(path.c_str(), text.data(), text.size(),
                                  &needed, error, sizeof error),
            0);
  text.resize(needed - 1);
  // Normalised: no null library, no unknown keys.
  EXPECT_EQ(text, R"({
  "kernels": {
    "runtimetest": {
      "inputs": [
        {
          "dtype": "float32",
          "shape": [
            2,
            -1
          ]
        }
      ],
      "operator": "dice::k_runtimetest",
      "results": [
        {
          "dtype": "bool",
          "shape": []
        }
      ]
    }
  },
  "version": 1
}
)");
}

TEST_F(RuntimeTest, CallErrors) {
  open();
  at::Tensor a = at::randn({2, 3}), b = at::randn({2, 3}),
             out = at::zeros({2, 3});
  Ref ra(a), rb(b), rout(out);

  EXPECT_NE(call("0123456789abcdef", {&ra, &rb}, {&rout}), 0);
  EXPECT_STREQ(error, "unknown kernel '0123456789abcdef': no opened manifest "
                      "lists it");

  EXPECT_NE(call("runtimetest", {&ra}, {&rout}), 0);
  EXPECT_STREQ(error, "kernel 'runtimetest' takes 2 inputs and returns 1 "
                      "results, called with 1 inputs and 1 results");

  Ref rwrong(at::randn({3, 2}));
  EXPECT_NE(call("runtimetest", {&ra, &rwrong}, {&rout}), 0);
  EXPECT_STREQ(error, "kernel 'runtimetest': input 1 has shape [3, 2], the "
                      "kernel's is [2, 3]");

  Ref rint(a);
  rint.ref.dtype = DICE_DTYPE_INT64;
  EXPECT_NE(call("runtimetest", {&ra, &rint}, {&rout}), 0);
  EXPECT_STREQ(error, "kernel 'runtimetest': input 1 is int64, the kernel "
                      "takes float32");

  Ref rbad(a);
  rbad.ref.dtype = 42;
  EXPECT_NE(call("runtimetest", {&ra, &rbad}, {&rout}), 0);
  EXPECT_STREQ(error, "kernel 'runtimetest': input 1 has dtype code 42, which "
                      "is not a DiceDType");

  at::Tensor small = at::zeros({3, 2});
  Ref rsmall(small);
  EXPECT_NE(call("runtimetest", {&ra, &rb}, {&rsmall}), 0);
  EXPECT_STREQ(error, "kernel 'runtimetest': result 0 buffer has shape [3, 2], "
                      "the kernel returned [2, 3]");
  EXPECT_TRUE(at::equal(small, at::zeros({3, 2}))) << "written on failure";

  at::Tensor two = at::randn({2});
  Ref rtwo(two), rtwoOut(at::zeros({2}));
  EXPECT_NE(call("runtimebaddtype", {&rtwo}, {&rtwoOut}), 0);
  EXPECT_STREQ(error, "kernel 'runtimebaddtype': result 0 is float64, the "
                      "manifest says float32");

  EXPECT_NE(call("runtimeunregistered", {}, {}), 0);
  EXPECT_EQ(std::string(error),
            "kernel 'runtimeunregistered': operator "
            "dice::k_runtimeunregistered is not registered (" +
                dir + "/manifest.json" +
                " names no library that registers it)");

  // A short buffer still gets a terminated prefix of the message.
  char shortError[8];
  DiceMemRef in[2] = {ra.ref, rb.ref};
  EXPECT_NE(dice_runtime_call("nope", 2, in, 0, nullptr, shortError,
                              sizeof shortError),
            0);
  EXPECT_STREQ(shortError, "unknown");
}

TEST_F(RuntimeTest, CudaOnlyKernelFromHostMemory) {
  if (at::hasCUDA())
    GTEST_SKIP() << "this machine stages through CUDA";
  open();
  at::Tensor x = at::randn({2}), out = at::zeros({2});
  Ref rx(x), rout(out);
  EXPECT_NE(call("runtimecuda", {&rx}, {&rout}), 0);
  EXPECT_STREQ(error, "kernel 'runtimecuda' has only a CUDA implementation and "
                      "this process has no CUDA device");
}

TEST_F(RuntimeTest, ManifestErrors) {
  std::string path = dir + "/manifest.json";
  std::string message =
      openError("{\n  \"version\": 1,\n  \"kernels\": {,}\n}\n");
  EXPECT_EQ(message.rfind(path + ":3:15: error: malformed manifest: ", 0), 0u)
      << message;

  EXPECT_EQ(openError("{\"version\": 2, \"kernels\": {}}"),
            path + ": error: not a version 1 DICE manifest");
  EXPECT_EQ(openError("{\"version\": 1}"),
            path + ": error: the manifest has no 'kernels' object");
  EXPECT_EQ(
      openError(
          R"({"version": 1, "kernels": {"x": {"inputs": [], "results": []}}})"),
      path + ": error: kernels.x.operator: is missing");
  EXPECT_EQ(
      openError(R"({"version": 1, "kernels": {"x": {"operator": "dice::k_x",
    "inputs": [{"shape": [1], "dtype": "complex64"}], "results": []}}})"),
      path + ": error: kernels.x.inputs[0].dtype: must name a dtype (float32, "
             "float16, bfloat16, float64, int64, int32, int16, int8, uint8, "
             "bool)");
  EXPECT_EQ(
      openError(R"({"version": 1, "kernels": {"x": {"operator": "dice::k_x",
    "library": "k_x.so", "inputs": [], "results": []}}})"),
      path + ": kernel 'x': library '" + dir + "/k_x.so" + "' does not exist");
  std::string notElf = write("k_x.so", "not a library");
  message =
      openError(R"({"version": 1, "kernels": {"x": {"operator": "dice::k_x",
    "library": "k_x.so", "inputs": [], "results": []}}})");
  EXPECT_EQ(
      message.rfind(path + ": kernel 'x': cannot load '" + notElf + "': ", 0),
      0u)
      << message;

  std::string missing = dir + "/absent.json";
  EXPECT_NE(dice_runtime_open(missing.c_str(), error, sizeof error), 0);
  EXPECT_EQ(std::string(error),
            missing + ": error: cannot read: No such file or directory");

  // A manifest that failed to open lists nothing.
  EXPECT_NE(dice_runtime_call("x", 0, nullptr, 0, nullptr, error, sizeof error),
            0);
}

} // namespace
