//===- FunctionPlan.cpp - parse and run a function plan -------------------===//

#include "FunctionPlan.h"

#include "dice/Reference/AtenExecutor.h"
#include "dice/Support/Text.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <limits>
#include <map>

namespace dice {
namespace {

using nlohmann::json;

Error fieldError(std::string key, std::string message) {
  Error error(std::move(message));
  error.key = std::move(key);
  return error;
}

/// A program's error, located inside the plan: its key under `prefix`.
Error nested(Error error, const std::string &prefix) {
  error.key = error.key.empty() ? prefix : prefix + "." + error.key;
  return error;
}

Result<TensorType> parseType(const json &j, const std::string &key) {
  // A one-input program is the simplest way to reuse the program's checks.
  json wrapper = {{"inputs", json::array({j})},
                  {"ops", json::array()},
                  {"outputs", json::array({0})}};
  Result<ReferenceProgram> program = ReferenceProgram::fromJson(wrapper.dump());
  if (!program) {
    Error error = program.error();
    if (error.key.starts_with("inputs[0]"))
      error.key = key + error.key.substr(9);
    else
      error.key = key;
    return error;
  }
  return program->inputs[0];
}

Result<std::vector<int>> parseValueList(const json &j, const std::string &where,
                                        const char *name) {
  std::string key = where.empty() ? name : where + "." + name;
  auto it = j.find(name);
  if (it == j.end() || !it->is_array())
    return fieldError(key, "must be an array of value numbers");
  std::vector<int> out;
  for (size_t i = 0; i < it->size(); ++i) {
    const json &v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
        v.get<int64_t>() > std::numeric_limits<int>::max())
      return fieldError(key + "[" + std::to_string(i) + "]",
                        "must be a value number");
    out.push_back(v.get<int>());
  }
  return out;
}

bool parseHex(const std::string &hex, std::vector<uint8_t> &bytes) {
  if (hex.size() % 2)
    return false;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = hexDigitValue(hex[i]), lo = hexDigitValue(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return true;
}

Result<PlanStep> parseWeight(const json &j, const std::string &key) {
  PlanStep step;
  step.kind = PlanStep::Kind::Weight;
  auto result = j.find("result");
  if (result == j.end() || !result->is_number_integer() ||
      result->get<int64_t>() < 0 ||
      result->get<int64_t>() > std::numeric_limits<int>::max())
    return fieldError(key + ".result", "a weight needs a value number 'result'");
  step.result = result->get<int>();
  auto type = j.find("type");
  if (type == j.end())
    return fieldError(key + ".type", "a weight needs a 'type'");
  Result<TensorType> parsed = parseType(*type, key + ".type");
  if (!parsed)
    return parsed.error();
  step.type = parsed.take();
  auto data = j.find("data");
  if (data == j.end() || !data->is_string() ||
      !parseHex(data->get<std::string>(), step.bytes))
    return fieldError(key + ".data",
                      "a weight needs 'data', a hex string of its bytes");
  return step;
}

Result<PlanStep> parseStep(const json &j, const std::string &key) {
  if (!j.is_object())
    return fieldError(key, "must be an object");
  auto kindField = j.find("kind");
  if (kindField == j.end() || !kindField->is_string())
    return fieldError(key + ".kind", "must be a string");
  std::string kind = kindField->get<std::string>();
  if (kind == "weight")
    return parseWeight(j, key);
  PlanStep step;
  if (kind == "program") {
    step.kind = PlanStep::Kind::Program;
    if (auto request = j.find("request"); request != j.end()) {
      if (!request->is_string())
        return fieldError(key + ".request", "must be a fingerprint string");
      step.request = request->get<std::string>();
    }
    auto program = j.find("program");
    if (program == j.end() || !program->is_object())
      return fieldError(key + ".program",
                        "a program step needs an object 'program'");
    Result<ReferenceProgram> parsed = ReferenceProgram::fromJson(program->dump());
    if (!parsed)
      return nested(parsed.error(), key + ".program");
    step.program = parsed.take();
  } else if (kind == "kernel") {
    step.kind = PlanStep::Kind::Kernel;
    auto fingerprint = j.find("fingerprint");
    if (fingerprint == j.end() || !fingerprint->is_string())
      return fieldError(key + ".fingerprint",
                        "a kernel step needs a string 'fingerprint'");
    step.fingerprint = fingerprint->get<std::string>();
  } else {
    return fieldError(key + ".kind", "unknown kind '" + kind +
                                         "' (known: weight, program, kernel)");
  }
  Result<std::vector<int>> args = parseValueList(j, key, "args");
  if (!args)
    return args.error();
  step.args = args.take();
  Result<std::vector<int>> results = parseValueList(j, key, "results");
  if (!results)
    return results.error();
  step.results = results.take();
  return step;
}

std::string stepName(const PlanStep &step, size_t index) {
  std::string name = "step " + std::to_string(index);
  if (step.kind == PlanStep::Kind::Weight)
    return name + " (weight " + std::to_string(step.result) + ")";
  if (step.kind == PlanStep::Kind::Kernel)
    return name + " (kernel " + step.fingerprint + ")";
  return name + (step.request.empty() ? " (program)"
                                      : " (request " + step.request + ")");
}

at::Tensor makeWeight(const PlanStep &step, c10::Device device,
                      std::string &error) {
  at::Tensor weight =
      at::empty(step.type.shape,
                at::TensorOptions().dtype(toScalarType(step.type.dtype)));
  size_t expected = static_cast<size_t>(weight.numel()) * weight.element_size();
  if (step.bytes.size() != expected) {
    error = "data holds " + std::to_string(step.bytes.size()) + " bytes, " +
            dtypeName(step.type.dtype) + " of this shape needs " +
            std::to_string(expected);
    return at::Tensor();
  }
  if (expected)
    std::memcpy(weight.data_ptr(), step.bytes.data(), expected);
  return weight.to(device);
}

} // namespace

Result<FunctionPlan> FunctionPlan::fromJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // The program's parse says where the syntax error is.
    Result<ReferenceProgram> located = ReferenceProgram::fromJson(text);
    return located ? Error("the plan is not JSON") : located.error();
  }
  if (!j.is_object())
    return Error("a plan must be a JSON object");
  FunctionPlan plan;
  if (auto function = j.find("function"); function != j.end()) {
    if (!function->is_string())
      return fieldError("function", "must be a string");
    plan.function = function->get<std::string>();
  }
  auto arguments = j.find("arguments");
  if (arguments == j.end() || !arguments->is_array())
    return fieldError("arguments", "must be an array of tensor types");
  auto symbols = j.find("symbols");
  for (size_t i = 0; symbols == j.end() && i < arguments->size(); ++i) {
    Result<TensorType> type =
        parseType((*arguments)[i], "arguments[" + std::to_string(i) + "]");
    if (!type)
      return type.error();
    plan.arguments.push_back(type.take());
  }
  if (symbols != j.end()) {
    // Read as a program's: the same fields, the same checks.
    json wrapper = {{"inputs", *arguments}, {"ops", json::array()},
                    {"outputs", json::array({0})}, {"symbols", *symbols}};
    Result<ReferenceProgram> signature = ReferenceProgram::fromJson(wrapper.dump());
    if (!signature) {
      Error error = signature.error();
      if (error.key.starts_with("inputs"))
        error.key = "arguments" + error.key.substr(6);
      return error;
    }
    plan.arguments = signature->inputs;
    plan.symbols = signature->symbols;
  }
  auto steps = j.find("steps");
  if (steps == j.end() || !steps->is_array())
    return fieldError("steps", "must be an array of steps");
  for (size_t i = 0; i < steps->size(); ++i) {
    Result<PlanStep> step = parseStep((*steps)[i], "steps[" + std::to_string(i) + "]");
    if (!step)
      return step.error();
    plan.steps.push_back(step.take());
  }
  Result<std::vector<int>> outputs = parseValueList(j, "", "outputs");
  if (!outputs)
    return outputs.error();
  plan.outputs = outputs.take();
  return plan;
}

std::string runFunctionPlan(const FunctionPlan &plan,
                            const std::vector<at::Tensor> &arguments,
                            std::vector<at::Tensor> &outputs,
                            const KernelCaller &callKernel) {
  ReferenceProgram signature;
  signature.inputs = plan.arguments;
  signature.symbols = plan.symbols;
  if (std::string error = checkReferenceInputs(signature, arguments);
      !error.empty())
    return "arguments: " + error;
  c10::Device device =
      arguments.empty() ? c10::Device(c10::kCPU) : arguments[0].device();

  std::map<int, at::Tensor> values;
  for (size_t i = 0; i < arguments.size(); ++i)
    values[static_cast<int>(i)] = arguments[i];
  auto define = [&](int id, at::Tensor tensor) -> std::string {
    if (!values.emplace(id, std::move(tensor)).second)
      return "value " + std::to_string(id) + " is defined twice";
    return "";
  };

  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &step = plan.steps[i];
    std::string error;
    if (step.kind == PlanStep::Kind::Weight) {
      at::Tensor weight;
      try {
        weight = makeWeight(step, device, error);
      } catch (const std::exception &e) {
        error = e.what();
      }
      if (error.empty())
        error = define(step.result, std::move(weight));
    } else {
      std::vector<at::Tensor> inputs;
      for (int a : step.args) {
        auto it = values.find(a);
        if (it == values.end()) {
          error =
              "value " + std::to_string(a) + " is used before it is defined";
          break;
        }
        inputs.push_back(it->second);
      }
      if (error.empty() && step.kind == PlanStep::Kind::Kernel) {
        std::vector<at::Tensor> results;
        if (!callKernel)
          error = "a call of an accepted kernel: run the plan with the "
                  "manifest dice-lower wrote (--manifest)";
        else
          error = callKernel(step.fingerprint, inputs, step.results.size(),
                             results);
        for (size_t r = 0; error.empty() && r < step.results.size(); ++r)
          error = define(step.results[r], results[r]);
      } else if (error.empty() &&
                 step.results.size() != step.program.outputs.size()) {
        error = "binds " + std::to_string(step.results.size()) +
                " results, the program returns " +
                std::to_string(step.program.outputs.size());
      } else if (error.empty()) {
        ReferenceRun run = runReferenceProgram(step.program, inputs, device);
        error = run.error;
        for (size_t r = 0; error.empty() && r < step.results.size(); ++r)
          error = define(step.results[r], run.outputs[r]);
      }
    }
    if (!error.empty())
      return stepName(step, i) + ": " + error;
  }
  for (int v : plan.outputs) {
    auto it = values.find(v);
    if (it == values.end())
      return "output " + std::to_string(v) + " is not a value of the plan";
    outputs.push_back(it->second);
  }
  return "";
}

} // namespace dice
