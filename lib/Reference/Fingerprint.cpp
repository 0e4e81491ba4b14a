//===- Fingerprint.cpp - the identity of a kernel request -----------------===//

#include "dice/Reference/Fingerprint.h"

#include "dice/Support/Sha256.h"

#include <bit>

namespace dice {
namespace {

void hashType(Sha256 &hash, const TensorType &type) {
  hash.updateField(dtypeName(type.dtype));
  hash.updateField(std::to_string(type.shape.size()));
  for (int64_t size : type.shape)
    hash.updateField(std::to_string(size));
}

/// The exact bits: 0.1 and 0.1000000001 differ, -0.0 and 0.0 differ, and
/// infinities and NaNs hash like any other value.
void hashDouble(Sha256 &hash, double value) {
  hash.updateField(std::to_string(std::bit_cast<uint64_t>(value)));
}

} // namespace

std::string fingerprintOf(const ReferenceProgram &program) {
  // Each value's digest depends only on how it is computed, never on where
  // its op stands in the list.
  std::vector<std::string> digests;
  digests.reserve(program.inputs.size() + program.ops.size());
  for (size_t index = 0; index < program.inputs.size(); ++index) {
    Sha256 hash;
    hash.updateField("input");
    hash.updateField(std::to_string(index));
    hashType(hash, program.inputs[index]);
    digests.push_back(hash.finishHex());
  }
  for (const RefOp &op : program.ops) {
    Sha256 hash;
    hash.updateField("op");
    hash.updateField(refFnName(op.fn));
    hashType(hash, op.type);
    hash.updateField(std::to_string(op.ints.size()));
    for (const auto &[name, values] : op.ints) { // std::map: sorted by name
      hash.updateField(name);
      hash.updateField(std::to_string(values.size()));
      for (int64_t v : values)
        hash.updateField(std::to_string(v));
    }
    hashDouble(hash, op.value);
    hash.updateField(std::to_string(op.args.size()));
    for (int arg : op.args)
      hash.updateField(arg >= 0 && static_cast<size_t>(arg) < digests.size()
                           ? digests[arg]
                           : "dangling");
    digests.push_back(hash.finishHex());
  }

  Sha256 hash;
  hash.updateField("dice-fingerprint");
  hash.updateField(std::to_string(kFingerprintScheme));
  // Size symbols by how they relate, not by their examples: a request
  // exported at another batch is the same request (static programs hash
  // as they always did).
  if (!program.symbols.empty()) {
    hash.updateField("symbols");
    hash.updateField(std::to_string(program.symbols.size()));
    for (const SizeSymbol &symbol : program.symbols) {
      hash.updateField(std::to_string(symbol.base));
      hash.updateField(std::to_string(symbol.factor));
    }
  }
  hash.updateField(std::to_string(program.inputs.size()));
  for (const TensorType &type : program.inputs)
    hashType(hash, type);
  hash.updateField(std::to_string(program.outputs.size()));
  for (int output : program.outputs)
    hash.updateField(output >= 0 && static_cast<size_t>(output) < digests.size()
                         ? digests[output]
                         : "dangling");
  return hash.finishHex().substr(0, 16);
}

} // namespace dice
