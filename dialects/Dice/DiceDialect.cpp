//===- DiceDialect.cpp - dice dialect registration ------------------------===//

#include "Dice/DiceDialect.h"
#include "Dice/DiceAttrs.h"
#include "Dice/DiceOps.h"

using namespace mlir;
using namespace mlir::dice;

#include "Dice/DiceDialect.cpp.inc"

void DiceDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dice/DiceOps.cpp.inc"
      >();
  registerAttributes();
}
