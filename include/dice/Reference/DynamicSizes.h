//===- DynamicSizes.h - which dynamic dimensions are the same size -*- C++ -*-===//
//
// A tensor type says only `?` for a dynamic dimension; which `?`s are the
// same size follows from the ops: a linalg op's indexing maps tie every
// operand dimension of one loop together, a tensor.empty's size operand
// names the dimension it was read from (tensor.dim), a reshape ties a
// dimension to another or to a multiple of it. DynamicSizes walks one block
// and groups the dynamic dimensions of its values into classes (union-find),
// each known as a static size, as a multiple of another class (a flattened
// dimension), or as free. Compiler side only.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_REFERENCE_DYNAMICSIZES_H
#define DICE_REFERENCE_DYNAMICSIZES_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <vector>

namespace dice {

/// The attribute of a function argument (and of a kernel request) giving
/// the example shapes of its dynamic dimensions: what the program was
/// exported with. A DenseI64ArrayAttr on an argument (`dice.example_shape`),
/// an ArrayAttr of them on a request (`dice.example_shapes`, one per operand).
inline constexpr const char kExampleShapeAttr[] = "dice.example_shape";
inline constexpr const char kExampleShapesAttr[] = "dice.example_shapes";

/// The example of a dynamic size no annotation gives.
inline constexpr int64_t kDefaultExampleSize = 16;

class DynamicSizes {
public:
  /// What a class of sizes is known as.
  struct Size {
    std::optional<int64_t> staticSize; ///< proven equal to this number
    /// Else: `factor` times the size of class `base` (the root of another
    /// class), or free (base < 0).
    int base = -1;
    int64_t factor = 1;
  };

  explicit DynamicSizes(mlir::Block &block);

  /// The class of dimension `dim` of `value` (a ranked tensor, dynamic
  /// there); nullopt when the walk never met it.
  std::optional<int> classOf(mlir::Value value, unsigned dim);
  /// The first argument of `block` with a dynamic dimension of class
  /// `cls`, and that dimension: a tensor a program can read the size from
  /// (an argument, so that reading it orders the program after nothing).
  std::optional<std::pair<mlir::Value, unsigned>> firstHolder(int cls, mlir::Block &block);
  /// An index value as a size: `times / per` of the size of class `cls`
  /// (tensor.dim, times or divided by constants: muli, divsi, affine.apply).
  struct SizeExpr {
    int cls;
    int64_t times = 1, per = 1;
  };
  std::optional<SizeExpr> sizeExpr(mlir::Value value);
  /// Class `cls` as `factor` times a free (or static) class `root`.
  std::pair<int, int64_t> rootOf(int cls);
  /// `to` has the sizes of `from` from now on (a value that replaces it).
  void rename(mlir::Value from, mlir::Value to);
  /// What class `cls` is known as, multiples followed to a free class.
  Size resolve(int cls);

private:
  std::vector<int> parent;
  std::vector<Size> known; ///< at each root
  llvm::DenseMap<std::pair<mlir::Value, unsigned>, int> nodes;
  /// (base class, factor) -> a node of that multiple.
  llvm::DenseMap<std::pair<int, int64_t>, int> multiples;

  int node(mlir::Value value, unsigned dim);
  int fresh();
  int find(int n);
  void unite(int a, int b);
  void setStatic(int n, int64_t size);
  void setMultiple(int child, int base, int64_t factor);
  /// Ties `value`'s dimension `dim` to node `n` (a static dimension makes
  /// the class static).
  void tie(mlir::Value value, unsigned dim, int n);
  void tieValues(mlir::Value a, mlir::Value b);
  /// Ties dimension `dim` of `value` to the index value `size` it was made
  /// with (the same size, a multiple or a fraction of one).
  void tieToSize(mlir::Value value, unsigned dim, mlir::Value size);
  void visit(mlir::Operation *op);
  void visitReassociation(mlir::Value collapsed, mlir::Value expanded,
                          llvm::ArrayRef<llvm::SmallVector<int64_t, 2>> groups);
};

} // namespace dice

#endif // DICE_REFERENCE_DYNAMICSIZES_H
