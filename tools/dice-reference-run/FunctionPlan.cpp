//===- FunctionPlan.cpp - parse and run a function plan -------------------===//

#include "FunctionPlan.h"

#include "dice/Scaffold/AtenExecutor.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <map>

namespace dice {
namespace {

using nlohmann::json;

std::optional<TensorType> parseType(const json &j, std::string &error) {
  // A one-input program is the simplest way to reuse the program's checks.
  json wrapper = {{"inputs", json::array({j})},
                  {"ops", json::array()},
                  {"outputs", json::array({0})}};
  auto program = ReferenceProgram::fromJson(wrapper.dump(), error);
  if (!program)
    return std::nullopt;
  return program->inputs[0];
}

bool parseValueList(const json &j, const char *key, std::vector<int> &out,
                    std::string &error) {
  if (!j.contains(key) || !j[key].is_array()) {
    error = std::string("needs an array '") + key + "'";
    return false;
  }
  for (const json &v : j[key]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      error = std::string("'") + key + "' must hold value numbers";
      return false;
    }
    out.push_back(v.get<int>());
  }
  return true;
}

bool parseHex(const std::string &hex, std::vector<uint8_t> &bytes) {
  if (hex.size() % 2)
    return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return true;
}

bool parseStep(const json &j, PlanStep &step, std::string &error) {
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) {
    error = "needs a string 'kind'";
    return false;
  }
  std::string kind = j["kind"].get<std::string>();
  if (kind == "weight") {
    step.kind = PlanStep::Kind::Weight;
    if (!j.contains("result") || !j["result"].is_number_integer() ||
        j["result"].get<int64_t>() < 0) {
      error = "weight needs a value number 'result'";
      return false;
    }
    step.result = j["result"].get<int>();
    if (!j.contains("type")) {
      error = "weight needs a 'type'";
      return false;
    }
    auto type = parseType(j["type"], error);
    if (!type)
      return false;
    step.type = *type;
    if (!j.contains("data") || !j["data"].is_string() ||
        !parseHex(j["data"].get<std::string>(), step.bytes)) {
      error = "weight needs 'data', a hex string of its bytes";
      return false;
    }
    return true;
  }
  if (kind == "program") {
    step.kind = PlanStep::Kind::Program;
    if (!parseValueList(j, "args", step.args, error) ||
        !parseValueList(j, "results", step.results, error))
      return false;
    if (j.contains("request") && j["request"].is_string())
      step.request = j["request"].get<std::string>();
    if (!j.contains("program") || !j["program"].is_object()) {
      error = "program step needs an object 'program'";
      return false;
    }
    auto program = ReferenceProgram::fromJson(j["program"].dump(), error);
    if (!program)
      return false;
    step.program = std::move(*program);
    return true;
  }
  if (kind == "kernel") {
    step.kind = PlanStep::Kind::Kernel;
    if (!j.contains("fingerprint") || !j["fingerprint"].is_string()) {
      error = "kernel step needs a string 'fingerprint'";
      return false;
    }
    step.fingerprint = j["fingerprint"].get<std::string>();
    return parseValueList(j, "args", step.args, error) &&
           parseValueList(j, "results", step.results, error);
  }
  error = "unknown kind '" + kind + "' (known: weight, program, kernel)";
  return false;
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

std::optional<FunctionPlan> FunctionPlan::fromJson(const std::string &text,
                                                   std::string &error) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    error = "the plan is not a JSON object";
    return std::nullopt;
  }
  FunctionPlan plan;
  if (j.contains("function") && j["function"].is_string())
    plan.function = j["function"].get<std::string>();
  if (!j.contains("arguments") || !j["arguments"].is_array() ||
      !j.contains("steps") || !j["steps"].is_array()) {
    error = "the plan needs arrays 'arguments' and 'steps'";
    return std::nullopt;
  }
  for (const json &a : j["arguments"]) {
    auto type = parseType(a, error);
    if (!type) {
      error =
          "argument " + std::to_string(plan.arguments.size()) + ": " + error;
      return std::nullopt;
    }
    plan.arguments.push_back(*type);
  }
  for (const json &s : j["steps"]) {
    PlanStep step;
    if (!parseStep(s, step, error)) {
      error = "step " + std::to_string(plan.steps.size()) + ": " + error;
      return std::nullopt;
    }
    plan.steps.push_back(std::move(step));
  }
  if (!parseValueList(j, "outputs", plan.outputs, error)) {
    error = "the plan " + error;
    return std::nullopt;
  }
  return plan;
}

std::string runFunctionPlan(const FunctionPlan &plan,
                            const std::vector<at::Tensor> &arguments,
                            std::vector<at::Tensor> &outputs,
                            const KernelCaller &callKernel) {
  ReferenceProgram signature;
  signature.inputs = plan.arguments;
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
