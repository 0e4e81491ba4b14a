//===- dice-reference-run.cpp - run reference programs with ATen ----------===//
//
//   dice-reference-run --program prog.json --inputs in.pt --outputs out.pt
//   dice-reference-run --plan plan.json --inputs in.pt --outputs out.pt
//                      [--manifest artifacts/manifest.json]
//   dice-reference-run --program prog.json --print-python
//
// Tensor files are torch.save files: inputs a list (or tuple) of tensors as
// `torch.save([t0, t1, ...], path)` writes them, outputs a tuple of tensors
// (contiguous, on the CPU) that `torch.load(path)` reads with its default
// weights_only=True. LibTorch's pickle_load/pickle_save speak that format.
// A lowered function's plan calls accepted kernels; --manifest (dice-lower's)
// provides them, through lib/Runtime's C ABI as lowered code would.
//
//===----------------------------------------------------------------------===//

#include "FunctionPlan.h"
#include "ManifestKernels.h"

#include "dice/Scaffold/AtenExecutor.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

namespace {

struct Options {
  std::string program, plan, inputs, outputs, manifest, device = "cpu";
  bool printPython = false;
};

const char *kUsage =
    "usage: dice-reference-run (--program prog.json | --plan plan.json)\n"
    "                          --inputs in.pt --outputs out.pt [--device "
    "cpu|cuda]\n"
    "                          [--manifest manifest.json]  (kernel steps of a "
    "lowered plan)\n"
    "       dice-reference-run --program prog.json --print-python\n";

std::string parseArgs(int argc, char **argv, Options &options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--print-python") {
      options.printPython = true;
      continue;
    }
    if (arg == "-h" || arg == "--help")
      return "help";
    std::string *target = arg == "--program"   ? &options.program
                          : arg == "--plan"    ? &options.plan
                          : arg == "--inputs"  ? &options.inputs
                          : arg == "--outputs" ? &options.outputs
                          : arg == "--device"  ? &options.device
                          : arg == "--manifest" ? &options.manifest
                                               : nullptr;
    if (!target)
      return "unknown argument '" + arg + "'";
    if (++i == argc)
      return arg + " needs a value";
    *target = argv[i];
  }
  if (options.program.empty() == options.plan.empty())
    return "give exactly one of --program and --plan";
  if (options.printPython)
    return options.program.empty() ? "--print-python needs --program" : "";
  if (!options.manifest.empty() && options.plan.empty())
    return "--manifest goes with --plan";
  if (options.inputs.empty() || options.outputs.empty())
    return "--inputs and --outputs are required";
  if (options.device != "cpu" && options.device != "cuda")
    return "--device must be cpu or cuda";
  return "";
}

bool readFile(const std::string &path, std::string &text, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  text.assign(std::istreambuf_iterator<char>(in), {});
  return true;
}

/// The tensors of a `torch.save`d list (or tuple, or single tensor).
std::string loadTensors(const std::string &path,
                        std::vector<at::Tensor> &tensors) {
  std::string bytes, error;
  if (!readFile(path, bytes, error))
    return error;
  try {
    c10::IValue value =
        torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    std::vector<c10::IValue> items;
    if (value.isTensor())
      items.push_back(value);
    else if (value.isList())
      items = value.toList().vec();
    else if (value.isTuple())
      items = value.toTupleRef().elements().vec();
    else
      return path + ": holds a " + value.tagKind() + ", not a list of tensors";
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isTensor())
        return path + ": item " + std::to_string(i) + " is not a tensor";
      tensors.push_back(items[i].toTensor());
    }
  } catch (const std::exception &e) {
    std::string what = e.what();
    return path + ": not a torch.save file (" +
           what.substr(0, what.find('\n')) + ")";
  }
  return "";
}

std::string saveTensors(const std::string &path,
                        const std::vector<at::Tensor> &tensors) {
  // A tuple: LibTorch pickles lists with a JIT type tag that
  // torch.load(weights_only=True) refuses; tuples pickle plainly.
  std::vector<c10::IValue> items;
  for (const at::Tensor &t : tensors)
    items.emplace_back(t.to(at::kCPU).contiguous());
  std::vector<char> bytes = torch::jit::pickle_save(
      c10::IValue(c10::ivalue::Tuple::create(std::move(items))));
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out ? "" : "cannot write " + path;
}

int fail(const std::string &message) {
  std::cerr << "dice-reference-run: error: " << message << "\n";
  return 1;
}

int run(const Options &options) {
  std::string text, error;
  const std::string &jsonPath =
      options.program.empty() ? options.plan : options.program;
  if (!readFile(jsonPath, text, error))
    return fail(error);

  if (options.printPython) {
    auto program = dice::ReferenceProgram::fromJson(text, error);
    if (!program)
      return fail(jsonPath + ": " + error);
    std::cout << dice::renderPythonModel(*program);
    return 0;
  }

  if (options.device == "cuda" && !at::hasCUDA())
    return fail("--device cuda: this machine has no CUDA device");
  c10::Device device(options.device);
  std::vector<at::Tensor> inputs, outputs;
  if (error = loadTensors(options.inputs, inputs); !error.empty())
    return fail(error);
  for (at::Tensor &t : inputs)
    t = t.to(device);

  if (!options.program.empty()) {
    auto program = dice::ReferenceProgram::fromJson(text, error);
    if (!program)
      return fail(jsonPath + ": " + error);
    dice::ReferenceRun result =
        dice::runReferenceProgram(*program, inputs, device);
    if (!result.ok())
      return fail(jsonPath + ": " + result.error);
    outputs = std::move(result.outputs);
  } else {
    auto plan = dice::FunctionPlan::fromJson(text, error);
    if (!plan)
      return fail(jsonPath + ": " + error);
    dice::KernelCaller kernels;
    if (!options.manifest.empty()) {
      std::optional<dice::KernelCaller> opened =
          dice::openManifestKernels(options.manifest, error);
      if (!opened)
        return fail(error);
      kernels = std::move(*opened);
    }
    if (error = dice::runFunctionPlan(*plan, inputs, outputs, kernels);
        !error.empty())
      return fail(jsonPath + ": " + error);
  }
  if (error = saveTensors(options.outputs, outputs); !error.empty())
    return fail(error);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  std::string error = parseArgs(argc, argv, options);
  if (error == "help") {
    std::cout << kUsage;
    return 0;
  }
  if (!error.empty()) {
    std::cerr << kUsage;
    return fail(error);
  }
  try {
    return run(options);
  } catch (const std::exception &e) {
    // Anything LibTorch throws outside the executor (a device move, a file).
    std::string what = e.what();
    return fail(what.substr(0, what.find('\n')));
  }
}
