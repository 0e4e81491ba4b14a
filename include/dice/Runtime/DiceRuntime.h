/*===- DiceRuntime.h - calling kernel libraries from lowered code -*- C -*-===*\
|*                                                                            *|
|* The C ABI through which code lowered by dice-lower calls DICE kernels. A   *|
|* plain C header: lowered programs, their generated trampolines and foreign  *|
|* callers include it without LibTorch. Every function reports failure as a   *|
|* return value with a message; nothing throws across it. docs/runtime.md.    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef DICE_RUNTIME_DICERUNTIME_H
#define DICE_RUNTIME_DICERUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Element types. The values are ABI: generated trampolines embed them, and
/// they follow the order of dice::DType (the reference program's dtypes).
typedef enum DiceDType {
  DICE_DTYPE_FLOAT32 = 0,
  DICE_DTYPE_FLOAT16 = 1,
  DICE_DTYPE_BFLOAT16 = 2,
  DICE_DTYPE_FLOAT64 = 3,
  DICE_DTYPE_INT64 = 4,
  DICE_DTYPE_INT32 = 5,
  DICE_DTYPE_INT16 = 6,
  DICE_DTYPE_INT8 = 7,
  DICE_DTYPE_UINT8 = 8,
  DICE_DTYPE_BOOL = 9
} DiceDType;

/// `DiceMemRef::device` of host memory; 0, 1, ... are CUDA devices.
#define DICE_DEVICE_CPU (-1)

/// One tensor argument or result, in the terms of an MLIR strided memref.
typedef struct DiceMemRef {
  /// The first element (an MLIR descriptor's aligned pointer plus its offset
  /// times the element size). A result with a null `data` is allocated by
  /// the runtime, which fills in `data`, `sizes` and `strides`.
  void *data;
  int64_t rank;
  /// `rank` sizes and strides (in elements), owned by the caller. The
  /// runtime reads them for inputs and caller-provided results, and writes
  /// them for results it allocates.
  int64_t *sizes;
  int64_t *strides;
  int32_t dtype;  ///< a DiceDType
  int32_t device; ///< DICE_DEVICE_CPU or a CUDA device index
} DiceMemRef;

/// Loads a manifest written by dice-lower and loads each kernel library it
/// names (loading registers the kernel's dispatcher op), unless that op is
/// already registered in this process. Opening a manifest already opened is
/// cheap and does nothing, unless the file was replaced since (dice-lower
/// adds kernels by replacing it): then it is read again. Returns 0, or
/// nonzero with a message in `error` (at most `error_len` bytes,
/// NUL-terminated) that names the manifest and, for malformed JSON, the
/// line and column, or the kernel and field at fault.
int dice_runtime_open(const char *manifest_path, char *error, size_t error_len);

/// The opened manifest `manifest_path` as JSON, in the form dice-lower
/// writes (docs/runtime.md), after the runtime's reader has checked it: how
/// foreign callers (python/dice) learn the kernels' operators and signatures
/// without a manifest reader of their own. Writes at most `out_len` bytes,
/// NUL-terminated, and sets `*needed` (when not null) to the text's length
/// plus one, so a caller whose buffer was too small can call again. Returns
/// 0, or nonzero with a message in `error` (for a manifest not opened).
int dice_runtime_describe(const char *manifest_path, char *out, size_t out_len,
                          size_t *needed, char *error, size_t error_len);

/// Calls kernel `fingerprint` of an opened manifest. Inputs are passed to
/// the kernel without a copy, as tensors over the caller's memory; shapes
/// and dtypes must match the manifest. Each result is copied into the
/// caller's buffer when `results[i].data` is set; otherwise the runtime
/// keeps the kernel's output alive and describes it in `results[i]`.
/// Host inputs of a kernel that only has a CUDA implementation are staged
/// through CUDA device 0 and its results copied back to host memory.
/// Returns 0, or nonzero with a message in `error`.
int dice_runtime_call(const char *fingerprint, size_t num_inputs,
                      const DiceMemRef *inputs, size_t num_results,
                      DiceMemRef *results, char *error, size_t error_len);

/// Frees a result the runtime allocated, by its `data`. Returns 0, or
/// nonzero when `data` is not such a result.
int dice_runtime_release(void *data);

/// Number of results the runtime currently keeps alive.
size_t dice_runtime_live_results(void);

/// Forgets every opened manifest and frees every result the runtime holds.
/// Kernel libraries stay loaded: their ops stay registered.
void dice_runtime_close(void);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DICE_RUNTIME_DICERUNTIME_H
