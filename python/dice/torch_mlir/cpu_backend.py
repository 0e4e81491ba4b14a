"""The default inner backend: linalg-on-tensors MLIR run on the CPU.

Lowered with upstream MLIR passes (torch-mlir's bindings, so its newer MLIR
does the work) and run through MLIR's execution engine. Shaped like
torch-mlir's e2e backends: `compile(module)` gives a compiled module,
`load(compiled)` an invoker whose methods take and return numpy arrays.
"""

import ctypes
from dataclasses import dataclass

import numpy as np

from dice.torch_mlir.errors import InvocationError, ModuleError

# One-shot bufferization across function boundaries (identity layouts, so
# the entry's descriptors are plain dense arrays), then ownership-based
# deallocation: every returned buffer is a fresh one the caller frees, and
# what an external kernel returns is taken to be the caller's, as the dice
# trampolines promise.
BUFFERIZE_PIPELINE = ",".join([
    "func.func(llvm-request-c-wrappers)",
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map}",
    "buffer-deallocation-pipeline",
    "convert-bufferization-to-memref",
])

# Between the two, every memref.copy becomes a linalg.copy (see
# `copies_to_linalg`); then loops and the LLVM dialect.
LLVM_PIPELINE = ",".join([
    "func.func(convert-linalg-to-loops)",
    "lower-affine",
    "convert-scf-to-cf",
    "expand-strided-metadata",
    "finalize-memref-to-llvm",
    "convert-math-to-llvm",
    # What has no LLVM intrinsic (tanh, erf, ...) becomes a libm call.
    "convert-math-to-libm",
    "convert-arith-to-llvm",
    "convert-func-to-llvm",
    "convert-cf-to-llvm",
    "reconcile-unrealized-casts",
])

CPU_PIPELINE = f"{BUFFERIZE_PIPELINE},<memref.copy -> linalg.copy>,{LLVM_PIPELINE}"

# MLIR element types and the numpy dtypes that have the same bytes.
ELEMENT_DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "i1": np.bool_,
}


@dataclass(frozen=True)
class TensorType:
    """A ranked tensor type of a function's signature."""
    shape: tuple   # -1 for a dynamic size
    dtype: type    # a numpy scalar type

    def describe(self):
        dims = "x".join("?" if d < 0 else str(d) for d in self.shape)
        return f"{dims + 'x' if dims else ''}{np.dtype(self.dtype).name}"


@dataclass(frozen=True)
class FunctionSignature:
    name: str
    inputs: tuple
    results: tuple


@dataclass(frozen=True)
class CompiledCpuModule:
    """What `CpuLinalgBackend.compile` gives: the module in the LLVM dialect
    (as text, so it outlives the MLIR context) and its public functions'
    signatures."""
    llvm_text: str
    functions: dict  # name -> FunctionSignature


def _parse(ir, text, what):
    try:
        return ir.Module.parse(text)
    except ir.MLIRError as e:
        raise ModuleError(f"{what} does not parse:\n{_diagnostics(e)}") from None


def _diagnostics(error):
    """An MLIRError's diagnostics, one `location: message` line each."""
    lines = [f"{d.location}: {d.message}" for d in error.error_diagnostics]
    return "\n".join(lines) or str(error)


def _tensor_type(ir, mlir_type, where):
    try:
        ranked = ir.RankedTensorType(mlir_type)
    except ValueError:
        raise ModuleError(f"{where} is {mlir_type}: the CPU backend takes ranked tensors "
                          "only") from None
    element = str(ranked.element_type)
    if element not in ELEMENT_DTYPES:
        raise ModuleError(f"{where} has element type {element}, which numpy cannot hold")
    shape = tuple(-1 if ranked.is_dynamic_dim(i) else ranked.shape[i]
                  for i in range(ranked.rank))
    return TensorType(shape, ELEMENT_DTYPES[element])


def _public_signatures(ir, module):
    """The signatures of the module's public functions with bodies."""
    functions = {}
    for op in module.body.operations:
        if op.operation.name != "func.func" or len(op.regions[0].blocks) == 0:
            continue
        if "sym_visibility" in op.attributes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        inputs = tuple(_tensor_type(ir, t, f"@{name}'s argument {i}")
                       for i, t in enumerate(ftype.inputs))
        results = tuple(_tensor_type(ir, t, f"@{name}'s result {i}")
                        for i, t in enumerate(ftype.results))
        functions[name] = FunctionSignature(name, inputs, results)
    if not functions:
        raise ModuleError("the module has no public function to run")
    return functions


def _run_passes(passmanager, pipeline, module):
    passmanager.PassManager.parse(f"builtin.module({pipeline})").run(module.operation)


def copies_to_linalg(ir, module):
    """Rewrites each memref.copy as a linalg.copy, which becomes loops.

    finalize-memref-to-llvm turns a copy that is not between contiguous
    buffers (a padded convolution's input written into a subview) into a
    call of `memrefCopy` from MLIR's runner-utils library, which torch-mlir's
    wheel does not ship; as loops the module needs no library at all."""
    from torch_mlir.dialects import linalg

    copies = []

    def collect(op):
        if op.name == "memref.copy":
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    for op in copies:
        with ir.InsertionPoint(op), op.location:
            linalg.copy(op.operands[0], outs=[op.operands[1]])
        op.erase()


class CpuLinalgBackend:
    """Linalg-on-tensors to the LLVM dialect with upstream passes, run on the
    CPU by MLIR's execution engine."""

    def __init__(self, opt_level=2):
        self.opt_level = opt_level

    def compile(self, module):
        """`module`: MLIR text or a torch_mlir `ir.Module`; returns a
        CompiledCpuModule."""
        from torch_mlir import ir, passmanager

        text = module if isinstance(module, str) else str(module)
        with ir.Context():
            parsed = _parse(ir, text, "the linalg-on-tensors module")
            functions = _public_signatures(ir, parsed)
            try:
                _run_passes(passmanager, BUFFERIZE_PIPELINE, parsed)
                copies_to_linalg(ir, parsed)
                _run_passes(passmanager, LLVM_PIPELINE, parsed)
            except ir.MLIRError as e:
                raise ModuleError("lowering to the LLVM dialect failed:\n"
                                  f"{_diagnostics(e)}") from None
            return CompiledCpuModule(str(parsed), functions)

    def load(self, compiled, shared_libs=()):
        """An invoker of `compiled`; `shared_libs` are loaded into the
        execution engine to resolve the module's external functions (dice's
        kernel trampolines)."""
        return CpuInvoker(compiled, [str(p) for p in shared_libs], self.opt_level)


class CpuInvoker:
    """`invoker.<function>(*arrays)`: numpy arrays in, a numpy array (one
    result) or a tuple of them out."""

    def __init__(self, compiled, shared_libs, opt_level):
        from torch_mlir import execution_engine, ir

        self._functions = compiled.functions
        # The engine keeps its own copy of the code; the context must live
        # as long as the engine does.
        self._context = ir.Context()
        with self._context:
            module = _parse(ir, compiled.llvm_text, "the lowered module")
            try:
                self._engine = execution_engine.ExecutionEngine(
                    module, opt_level=opt_level, shared_libs=shared_libs)
            except RuntimeError as e:
                raise ModuleError(f"the execution engine cannot compile the module: {e}") from None

    def __getattr__(self, name):
        functions = self.__dict__.get("_functions", {})
        if name not in functions:
            raise AttributeError(f"the module has no public function @{name}")
        signature = functions[name]
        return lambda *arrays: self._invoke(signature, arrays)

    def _invoke(self, signature, arrays):
        inputs = _check_inputs(signature, arrays)
        descriptors = [_descriptor_of(a) for a in inputs]
        results = _ResultStruct(signature.results)
        pointers = [ctypes.pointer(ctypes.pointer(d)) for d in descriptors]
        if signature.results:
            pointers.insert(0, ctypes.pointer(ctypes.pointer(results.value)))
        self._engine.invoke(signature.name, *pointers)
        outputs = results.take()
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _check_inputs(signature, arrays):
    """Contiguous copies of the arguments, checked against the signature: the
    compiled code may write into its arguments' buffers, and the caller's
    arrays must not change."""
    where = f"@{signature.name}"
    if len(arrays) != len(signature.inputs):
        raise InvocationError(f"{where} takes {len(signature.inputs)} arrays, got {len(arrays)}")
    checked = []
    for i, (array, want) in enumerate(zip(arrays, signature.inputs)):
        array = np.asarray(array)
        got = TensorType(array.shape, array.dtype.type)
        if array.dtype != np.dtype(want.dtype) or len(array.shape) != len(want.shape) or any(
                w >= 0 and g != w for g, w in zip(array.shape, want.shape)):
            raise InvocationError(f"{where}: argument {i} is {got.describe()}, "
                                  f"the function takes {want.describe()}")
        checked.append(np.array(array, order="C", copy=True))
    return checked


def _descriptor_type(rank, dtype):
    """StridedMemRefType<T, rank>, the C interface's memref descriptor."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}_{np.dtype(dtype).name}", (ctypes.Structure,), {"_fields_": fields})


def _descriptor_of(array):
    """A descriptor over `array`'s buffer (which the caller keeps alive)."""
    desc = _descriptor_type(array.ndim, array.dtype)()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    for d in range(array.ndim):
        desc.sizes[d] = array.shape[d]
        desc.strides[d] = array.strides[d] // array.itemsize
    return desc


_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes = [ctypes.c_void_p]


class _ResultStruct:
    """The results the C interface writes: one descriptor, or a struct of
    them when the function returns several."""

    def __init__(self, types):
        self._types = types
        classes = [_descriptor_type(len(t.shape), t.dtype) for t in types]
        if len(classes) == 1:
            self.value = classes[0]()
        else:
            self.value = type("Results", (ctypes.Structure,),
                              {"_fields_": [(f"r{i}", c) for i, c in enumerate(classes)]})()

    def take(self):
        """Copies of the results as numpy arrays; the buffers are freed (each
        is a fresh allocation the caller owns, by ownership-based
        deallocation)."""
        descs = [self.value] if len(self._types) == 1 else \
            [getattr(self.value, f"r{i}") for i in range(len(self._types))]
        arrays = [_copy_out(d, t) for d, t in zip(descs, self._types)]
        for desc in descs:
            _LIBC.free(desc.allocated)
        return arrays


def _copy_out(desc, tensor_type):
    rank = len(tensor_type.shape)
    sizes = [desc.sizes[d] for d in range(rank)]
    strides = [desc.strides[d] for d in range(rank)]
    itemsize = np.dtype(tensor_type.dtype).itemsize
    if any(s == 0 for s in sizes):
        return np.zeros(sizes, dtype=tensor_type.dtype)
    extent = 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    start = desc.aligned + desc.offset * itemsize
    flat = np.ctypeslib.as_array((ctypes.c_byte * (extent * itemsize)).from_address(start))
    view = np.lib.stride_tricks.as_strided(flat.view(tensor_type.dtype), shape=sizes,
                                           strides=[st * itemsize for st in strides])
    return np.array(view, copy=True)
