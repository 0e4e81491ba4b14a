//===- dice-plan.cpp - a function as an executable torch-level plan -------===//
//
// Reads a module (typically after dice-outline and dice-scaffold) and writes
// one function as a plan: its weights (raw bytes), then each kernel request
// and each op left outside requests as a reference program, in order. The
// ATen executor (dice-reference-run --plan) and the printed Python programs
// run it, which is how the tests check that outlining and rendering kept the
// model's meaning. Calls of accepted kernels (`dice.call`, or the
// `func.call @dice_k_<fp>` that dice-lower makes of them) become kernel
// steps, which run through the kernel libraries of a manifest
// (python/dice/runtime.py). Format: docs/reference-program.md.
//
//===----------------------------------------------------------------------===//

#include "dice/Dialect/Dice/DiceOps.h"
#include "dice/Reference/DynamicSizes.h"
#include "dice/Reference/ReferenceBuilder.h"
#include "dice/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<input .mlir>"),
                                            llvm::cl::init("-"));
static llvm::cl::opt<std::string> outputFile("o", llvm::cl::desc("output JSON"),
                                             llvm::cl::value_desc("file"),
                                             llvm::cl::init("-"));
static llvm::cl::opt<std::string>
    functionName("function", llvm::cl::desc("function to plan (default: the first)"),
                 llvm::cl::value_desc("name"), llvm::cl::init(""));
static llvm::cl::opt<bool> requestsOnly(
    "requests",
    llvm::cl::desc("write the function's scaffolded kernel requests only, not a "
                   "plan: for a function that does not plan as a whole (an op "
                   "outside the requests with a data-dependent shape)"),
    llvm::cl::init(false));

namespace {

llvm::json::Value typeJson(const ::dice::TensorType &type) {
  llvm::json::Array shape;
  for (int64_t d : type.shape)
    if (::dice::isSymbolicSize(d))
      shape.push_back("s" + std::to_string(::dice::symbolOfSize(d)));
    else
      shape.push_back(d);
  return llvm::json::Object{{"shape", std::move(shape)},
                            {"dtype", ::dice::dtypeName(type.dtype)}};
}

std::optional<::dice::TensorType> tensorTypeOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  auto dtype = ::dice::toDType(tensor.getElementType());
  if (!dtype)
    return std::nullopt;
  return ::dice::TensorType{std::vector<int64_t>(tensor.getShape().begin(),
                                               tensor.getShape().end()),
                          *dtype};
}

std::string hex(ArrayRef<char> bytes) {
  static const char *digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

/// The raw little-endian bytes of a weight, if it has them.
std::optional<ArrayRef<char>> weightBytes(Attribute value) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
    return std::nullopt;
  }
  if (auto dense = dyn_cast<DenseElementsAttr>(value);
      dense && !dense.isSplat() && !dense.getElementType().isInteger(1))
    return dense.getRawData();
  return std::nullopt;
}

class Planner {
public:
  LogicalResult plan(func::FuncOp func) {
    Block &body = func.getBody().front();
    ::dice::DynamicSizes &sizes = blockSizes.emplace(body);
    // Dynamic argument sizes are the plan's size symbols, one per class of
    // equal sizes, as in a reference program.
    llvm::DenseMap<int, int> symbolOfClass;
    llvm::json::Array arguments, symbols;
    for (BlockArgument arg : body.getArguments()) {
      // A scalar argument (a Python number torch-mlir kept) is a 0-d tensor
      // of its dtype in the plan, as in reference programs.
      auto tensor = dyn_cast<RankedTensorType>(arg.getType());
      auto dtype = ::dice::toDType(tensor ? tensor.getElementType() : arg.getType());
      if (!dtype || (!tensor && arg.getType().isIndex()))
        return func.emitError() << "dice-plan: argument #" << arg.getArgNumber()
                                << " is neither a tensor nor a scalar of a torch dtype";
      auto example = func.getArgAttrOfType<DenseI64ArrayAttr>(arg.getArgNumber(),
                                                              ::dice::kExampleShapeAttr);
      ::dice::TensorType type{tensor ? std::vector<int64_t>(tensor.getShape())
                                     : std::vector<int64_t>{},
                              *dtype};
      for (unsigned d = 0; d < type.shape.size(); ++d) {
        if (!tensor || !tensor.isDynamicDim(d))
          continue;
        int cls = sizes.classOf(arg, d).value_or(-1 - static_cast<int>(symbols.size()));
        auto [it, fresh] = symbolOfClass.try_emplace(cls, static_cast<int>(symbols.size()));
        if (fresh)
          symbols.push_back(llvm::json::Object{
              {"example", example && d < example.size() ? example[d]
                                                        : ::dice::kDefaultExampleSize}});
        type.shape[d] = ::dice::symbolicSize(it->second);
      }
      ids[arg] = next++;
      arguments.push_back(typeJson(type));
    }
    for (Operation &op : body) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands()) {
          if (!ids.count(v))
            return ret.emitError() << "dice-plan: returns a value the plan does not compute";
          outputs.push_back(ids[v]);
        }
        continue;
      }
      if (failed(planOp(&op)))
        return failure();
    }
    llvm::json::Object plan{{"function", func.getSymName()},
                            {"arguments", std::move(arguments)},
                            {"steps", std::move(steps)},
                            {"outputs", std::move(outputs)}};
    if (!symbols.empty())
      plan["symbols"] = std::move(symbols);
    result = std::move(plan);
    return success();
  }

  llvm::json::Value result = nullptr;

private:
  std::optional<::dice::DynamicSizes> blockSizes;
  llvm::DenseMap<Value, int> ids;
  int next = 0;
  llvm::json::Array steps, outputs;

  /// The fingerprint of an accepted kernel's call, before or after
  /// dice-lower.
  static std::optional<StringRef> kernelFingerprint(Operation *op) {
    if (auto call = dyn_cast<mlir::dice::CallOp>(op))
      return call.getCallee().drop_front(2); // k_<fp>
    if (auto call = dyn_cast<func::CallOp>(op);
        call && call.getCallee().starts_with("dice_k_"))
      return call.getCallee().drop_front(7); // dice_k_<fp>
    return std::nullopt;
  }

  /// The values `values` stand for in the plan, or failure.
  FailureOr<llvm::json::Array> valueIds(Operation *op, ValueRange values) {
    llvm::json::Array out;
    for (Value value : values) {
      auto it = ids.find(value);
      if (it == ids.end())
        return op->emitError() << "dice-plan: reads a value the plan does not compute";
      out.push_back(it->second);
    }
    return out;
  }

  LogicalResult planKernel(Operation *op, StringRef fingerprint) {
    FailureOr<llvm::json::Array> args = valueIds(op, op->getOperands());
    if (failed(args))
      return failure();
    llvm::json::Array outs;
    for (Value value : op->getResults()) {
      ids[value] = next;
      outs.push_back(next++);
    }
    steps.push_back(llvm::json::Object{{"kind", "kernel"},
                                       {"fingerprint", fingerprint},
                                       {"args", std::move(*args)},
                                       {"results", std::move(outs)}});
    return success();
  }

  LogicalResult planOp(Operation *op) {
    // A value the function returns as it is needs a step of its own even
    // where its readers would otherwise render it (a splat, a number).
    bool returned = llvm::any_of(op->getUsers(),
                                 [](Operation *user) { return isa<func::ReturnOp>(user); });
    auto constant = dyn_cast<arith::ConstantOp>(op);
    bool weight = constant && isa<ElementsAttr>(constant.getValue()) &&
                  !isa<SplatElementsAttr>(constant.getValue());
    if (constant && !weight && !returned)
      return success(); // scalars and splats live inside their users
    if (weight) {
      auto type = tensorTypeOf(constant.getType());
      auto bytes = weightBytes(constant.getValue());
      if (!type || !bytes)
        return op->emitError() << "dice-plan: cannot read this weight's bytes";
      ids[constant.getResult()] = next;
      steps.push_back(llvm::json::Object{{"kind", "weight"},
                                         {"result", next++},
                                         {"type", typeJson(*type)},
                                         {"data", hex(*bytes)}});
      return success();
    }
    if (isa<tensor::EmptyOp>(op) || op->use_empty())
      return success(); // destinations, and what nothing reads
    // A number as a 0-d tensor and back (a scalar argument as a request
    // takes it) are one value: a plan holds numbers as 0-d tensors.
    Value alias;
    if (auto wrap = dyn_cast<tensor::FromElementsOp>(op);
        wrap && wrap.getType().getRank() == 0)
      alias = wrap.getElements()[0];
    if (auto extract = dyn_cast<tensor::ExtractOp>(op); extract && extract.getIndices().empty())
      alias = extract.getTensor();
    if (alias) {
      if (auto it = ids.find(alias); it != ids.end()) {
        ids[op->getResult(0)] = it->second;
        return success();
      }
      if (!returned)
        return success(); // what reads it renders it
    }
    auto isTensor = [](Type t) { return isa<mlir::TensorType>(t); };
    if (!returned && llvm::none_of(op->getOperandTypes(), isTensor) &&
        llvm::none_of(op->getResultTypes(), isTensor))
      return success(); // scalar arithmetic (on sizes): what reads it renders it
    if (llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIndex(); }))
      return success(); // dynamic sizes (tensor.dim): programs bind their own
    if (std::optional<StringRef> fingerprint = kernelFingerprint(op))
      return planKernel(op, *fingerprint);

    SmallVector<Value> inputs, results;
    std::optional<::dice::ReferenceProgram> program;
    std::string whyNot, python;
    llvm::json::Object step{{"kind", "program"}};
    if (auto request = dyn_cast<mlir::dice::KernelRequestOp>(op)) {
      if (mlir::dice::ScaffoldAttr scaffold = request.getScaffoldAttr()) {
        ::dice::Result<::dice::ReferenceProgram> parsed =
            ::dice::ReferenceProgram::fromJson(scaffold.getProgram().str());
        if (!parsed)
          return op->emitError() << "dice-plan: the scaffold's program: "
                                 << parsed.error().format();
        program = parsed.take();
        python = scaffold.getReference().str();
        // The compiler's own declaration: callers never re-derive it.
        step["signature"] = scaffold.getSignature().str();
        // The rest of the scaffold, for the trainer's task packs and corpora.
        step["prefix"] = scaffold.getPrefix().str();
        step["suffix"] = scaffold.getSuffix().str();
        step["infill_prompt"] = scaffold.getInfillPrompt().str();
        step["end_to_end_prompt"] = scaffold.getEndToEndPrompt().str();
      } else {
        program = ::dice::buildReferenceProgram(request.getBody(), whyNot);
      }
      inputs.assign(request.getInputs().begin(), request.getInputs().end());
      results.assign(request.getResults().begin(), request.getResults().end());
      step["request"] = request.getFingerprint().str();
      step["level"] = request.getLevel();
    } else {
      program = ::dice::buildOpProgram(op, inputs, results, whyNot, &*blockSizes);
    }
    if (!program)
      return op->emitError() << "dice-plan: " << whyNot;
    if (python.empty())
      python = ::dice::renderPythonModel(*program);

    FailureOr<llvm::json::Array> args = valueIds(op, inputs);
    if (failed(args))
      return failure();
    llvm::json::Array outs;
    for (Value value : results) {
      ids[value] = next;
      outs.push_back(next++);
    }
    auto parsed = llvm::json::parse(program->toJson());
    if (!parsed)
      return op->emitError() << "dice-plan: internal error: "
                             << llvm::toString(parsed.takeError());
    step["args"] = std::move(*args);
    step["results"] = std::move(outs);
    step["program"] = std::move(*parsed);
    step["python"] = python;
    steps.push_back(std::move(step));
    return success();
  }
};

/// `{"function", "steps"}` with one step a scaffolded kernel request, in
/// order, as the plan writes it but without value numbers: what a request
/// is, whatever the ops around it are.
FailureOr<llvm::json::Value> requestSteps(func::FuncOp func) {
  llvm::json::Array steps;
  WalkResult walked = func.walk([&](mlir::dice::KernelRequestOp request) {
    mlir::dice::ScaffoldAttr scaffold = request.getScaffoldAttr();
    if (!scaffold) {
      request.emitError() << "dice-plan: a request without a scaffold; run "
                             "dice-scaffold first";
      return WalkResult::interrupt();
    }
    auto program = llvm::json::parse(scaffold.getProgram().str());
    if (!program) {
      request.emitError() << "dice-plan: the scaffold's program: "
                          << llvm::toString(program.takeError());
      return WalkResult::interrupt();
    }
    steps.push_back(llvm::json::Object{
        {"kind", "program"},
        {"request", request.getFingerprint().str()},
        {"level", request.getLevel()},
        {"program", std::move(*program)},
        {"python", scaffold.getReference().str()},
        {"signature", scaffold.getSignature().str()},
        {"prefix", scaffold.getPrefix().str()},
        {"suffix", scaffold.getSuffix().str()},
        {"infill_prompt", scaffold.getInfillPrompt().str()},
        {"end_to_end_prompt", scaffold.getEndToEndPrompt().str()}});
    return WalkResult::advance();
  });
  if (walked.wasInterrupted())
    return failure();
  return llvm::json::Value(llvm::json::Object{{"function", func.getSymName()},
                                              {"steps", std::move(steps)}});
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "DICE plan writer\n");

  DialectRegistry registry;
  mlir::dice::registerDiceDialects(registry);
  MLIRContext context(registry);
  // What dice-opt reads (ops of dialects MLIR has not got) dice-plan reads
  // too; it then says it cannot plan them.
  context.allowUnregisteredDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "dice-plan: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  func::FuncOp func;
  for (auto candidate : module->getOps<func::FuncOp>())
    if (!candidate.isExternal() &&
        (functionName.empty() || candidate.getSymName() == functionName)) {
      func = candidate;
      break;
    }
  if (!func) {
    llvm::errs() << "dice-plan: no function"
                 << (functionName.empty() ? "" : " named '" + functionName + "'")
                 << " with a body in " << inputFile << "\n";
    return 1;
  }

  llvm::json::Value written = nullptr;
  if (requestsOnly) {
    FailureOr<llvm::json::Value> requests = requestSteps(func);
    if (failed(requests))
      return 1;
    written = std::move(*requests);
  } else {
    Planner planner;
    if (failed(planner.plan(func)))
      return 1;
    written = std::move(planner.result);
  }
  auto output = openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "dice-plan: " << error << "\n";
    return 1;
  }
  output->os() << written << "\n";
  output->keep();
  return 0;
}
