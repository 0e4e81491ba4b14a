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

#include "dice/Reference/AtenExecutor.h"
#include "dice/Support/CommandLine.h"
#include "dice/Support/File.h"

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

/// How the options combine, which CLI11 cannot say: std::nullopt when they
/// fit, else why not.
std::optional<std::string> checkCombination(const Options &options) {
  if (options.program.empty() == options.plan.empty())
    return "give exactly one of --program and --plan";
  if (options.printPython)
    return options.program.empty()
               ? std::optional<std::string>("--print-python needs --program")
               : std::nullopt;
  if (!options.manifest.empty() && options.plan.empty())
    return "--manifest goes with --plan";
  if (options.inputs.empty() || options.outputs.empty())
    return "--inputs and --outputs are required";
  return std::nullopt;
}

/// The tensors of a `torch.save`d list (or tuple, or single tensor).
std::string loadTensors(const std::string &path,
                        std::vector<at::Tensor> &tensors) {
  dice::Result<std::string> read = dice::readFile(path);
  if (!read)
    return read.error().describe();
  const std::string &bytes = *read;
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
  const std::string &jsonPath =
      options.program.empty() ? options.plan : options.program;
  dice::Result<std::string> read = dice::readFile(jsonPath);
  if (!read)
    return fail(read.error().describe());
  std::string text = read.take(), error;

  // A parse error is printed located: file, line and column, the field.
  auto located = [&](dice::Error parseError) {
    parseError.file = jsonPath;
    std::cerr << "dice-reference-run: " << parseError.format() << "\n";
    return 1;
  };
  if (options.printPython) {
    auto program = dice::ReferenceProgram::fromJson(text);
    if (!program)
      return located(program.error());
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
    auto program = dice::ReferenceProgram::fromJson(text);
    if (!program)
      return located(program.error());
    dice::ReferenceRun result =
        dice::runReferenceProgram(*program, inputs, device);
    if (!result.ok())
      return fail(jsonPath + ": " + result.error);
    outputs = std::move(result.outputs);
  } else {
    auto plan = dice::FunctionPlan::fromJson(text);
    if (!plan)
      return located(plan.error());
    dice::KernelCaller kernels;
    if (!options.manifest.empty()) {
      dice::Result<dice::KernelCaller> opened =
          dice::openManifestKernels(options.manifest);
      if (!opened)
        return fail(opened.error().message);
      kernels = opened.take();
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
  dice::CommandLine cl(
      "dice-reference-run",
      "runs a reference program or a whole function plan with ATen on "
      "torch.save files, or prints a program's Python reference",
      "(--program <prog.json> | --plan <plan.json>) --inputs <in.pt> "
      "--outputs <out.pt> [options]\n"
      "       dice-reference-run --program <prog.json> --print-python");
  Options options;
  cl.add_option("--program", options.program,
                "a reference program (JSON) to run")
      ->type_name("prog.json");
  cl.add_option("--plan", options.plan,
                "a function plan (dice-plan's JSON) to run")
      ->type_name("plan.json");
  cl.add_option("--inputs", options.inputs,
                "the inputs: a torch.save'd list (or tuple) of tensors")
      ->type_name("in.pt");
  cl.add_option("--outputs", options.outputs,
                "where the outputs go: a torch.save'd tuple of CPU tensors")
      ->type_name("out.pt");
  cl.add_option("--device", options.device, "where the program runs")
      ->type_name("cpu|cuda")
      ->check(dice::oneOf({"cpu", "cuda"}))
      ->capture_default_str();
  cl.add_option("--manifest", options.manifest,
                "dice-lower's artifacts/manifest.json: the kernels a lowered "
                "plan's kernel steps call")
      ->type_name("manifest.json");
  cl.add_flag("--print-python", options.printPython,
              "print the program as a Python module instead of running it");
  if (std::optional<int> exit = cl.parse(argc, argv))
    return *exit;
  if (std::optional<std::string> error = checkCombination(options))
    return cl.usageError(*error);
  try {
    return run(options);
  } catch (const std::exception &e) {
    // Anything LibTorch throws outside the executor (a device move, a file).
    std::string what = e.what();
    return fail(what.substr(0, what.find('\n')));
  }
}
