//===- DiceDialect.cpp - dice dialect registration ------------------------===//

#include "dice/Dialect/Dice/DiceDialect.h"
#include "dice/Dialect/Dice/DiceAttrs.h"
#include "dice/Dialect/Dice/DiceOps.h"

using namespace mlir;
using namespace mlir::dice;

#include "dice/Dialect/Dice/DiceDialect.cpp.inc"

void DiceDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dice/Dialect/Dice/DiceOps.cpp.inc"
      >();
  registerAttributes();
}

LogicalResult DiceDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == kPositionAttrName) {
    if (!isa<IntegerAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' must be an integer";
    return success();
  }
  if (name == kLibraryAttrName) {
    if (!isa<StringAttr>(attribute.getValue()))
      return op->emitError() << "'" << name << "' must be a string";
    return success();
  }
  if (name == kExampleShapesAttrName) {
    auto shapes = dyn_cast<ArrayAttr>(attribute.getValue());
    if (!shapes || !llvm::all_of(shapes, llvm::IsaPred<DenseI64ArrayAttr>))
      return op->emitError() << "'" << name << "' must be an array of i64 arrays";
    return success();
  }
  return op->emitError() << "unknown dice attribute '" << name
                         << "' (known: " << kPositionAttrName << ", "
                         << kLibraryAttrName << ", " << kExampleShapesAttrName << ")";
}
