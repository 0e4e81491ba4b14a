//===- DeceptionRules.cpp - which names are hacks --------------------------===//

#include "DeceptionRules.h"
#include "dice/Deception/DeceptionAnalysis.h"

#include "clang/AST/Decl.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace llvm;

namespace dice {

bool isAllowedTorchCall(StringRef name) {
  static const StringSet<> allowed = {
      // Allocation: the candidate's kernels fill the result.
      "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones",
      "ones_like", "full", "full_like", "zero_", "from_blob",
      // Shape, type and placement queries.
      "size", "sizes", "sym_size", "sym_sizes", "stride", "strides", "numel",
      "sym_numel", "dim", "ndimension", "element_size", "itemsize", "nbytes",
      "storage_offset", "is_contiguous", "options", "dtype", "scalar_type",
      "device", "get_device", "is_cuda", "is_cpu", "layout", "defined",
      "is_same_size", "is_floating_point", "suggest_memory_format",
      "requires_grad",
      // Layout: views, and `contiguous` (a copy only for strided inputs,
      // which honest launchers need to flatten).
      "contiguous", "view", "reshape", "flatten", "unflatten", "squeeze",
      "unsqueeze", "view_as", "reshape_as", "expand", "expand_as", "narrow",
      "select", "slice", "transpose", "permute", "t", "as_strided",
      // Raw pointers for the kernels.
      "data_ptr", "mutable_data_ptr", "const_data_ptr", "accessor",
      "packed_accessor32", "packed_accessor64", "generic_packed_accessor",
      // Stream and device queries (the verifier times the current stream).
      "getCurrentCUDAStream", "getDefaultCUDAStream",
      "getCurrentDeviceProperties", "getDeviceProperties", "current_device",
      // Handle assignment `out = torch::empty(...)`.
      "operator="};
  return allowed.contains(name);
}

std::optional<std::string> vendorLibraryOf(StringRef name, StringRef ns,
                                           StringRef cls) {
  if (name.starts_with("cublas"))
    return "cuBLAS";
  if (name.starts_with("cudnn"))
    return "cuDNN";
  if (name.starts_with("cufft"))
    return "cuFFT";
  if (name.starts_with("cusparse"))
    return "cuSPARSE";
  if (name.starts_with("cusolver"))
    return "cuSOLVER";
  if (name == "getCurrentCUDABlasHandle" || name == "getCurrentCUDABlasLtHandle")
    return "cuBLAS";
  if (name == "getCurrentCUDASparseHandle")
    return "cuSPARSE";
  if (name == "getCurrentCUDASolverDnHandle")
    return "cuSOLVER";
  // thrust algorithms run their own kernels; its pointer wrappers do not.
  if (ns == "thrust" && cls.empty() && name != "raw_pointer_cast" &&
      name != "device_pointer_cast")
    return "thrust";
  // Device-wide CUB (cub::DeviceReduce::Sum, ...) launches CUB's kernels;
  // block- and warp-level CUB runs inside the candidate's own kernel.
  if (ns == "cub" && cls.starts_with("Device"))
    return "CUB (" + cls.str() + ")";
  return std::nullopt;
}

bool isStreamOrGraphCall(StringRef name) {
  return name.starts_with("cudaStreamCreate") ||
         name.starts_with("cudaStreamBeginCapture") ||
         name == "cudaStreamEndCapture" || name.starts_with("cudaGraph") ||
         name.starts_with("cuStreamCreate") || name.starts_with("cuGraph") ||
         name == "getStreamFromPool" || name == "getStreamFromExternal";
}

bool isThreadCall(StringRef name) {
  return name == "pthread_create" || name == "async" || name == "thrd_create" ||
         name == "clone" || name.starts_with("omp_");
}

bool isSystemCall(StringRef name) {
  static const StringSet<> calls = {
      "system", "popen", "fork", "vfork", "execl", "execlp", "execle", "execv",
      "execvp", "execvpe", "execve", "fexecve", "posix_spawn", "posix_spawnp",
      "fopen", "fopen64", "freopen", "fdopen", "open", "open64", "openat",
      "creat", "read", "write", "pread", "pwrite", "unlink", "remove",
      "rename", "mkdir", "opendir", "mmap", "socket", "connect", "bind",
      "listen", "accept", "getaddrinfo", "gethostbyname", "gethostname",
      "uname", "getenv", "secure_getenv", "setenv", "putenv", "unsetenv",
      "dlopen", "dlsym", "kill", "ptrace",
      // Descriptors moved under stdout (the worker's reply channel, say).
      "dup", "dup2", "dup3",
      // Any of the above, and every other system call, by number.
      "syscall"};
  return calls.contains(name);
}

bool isFilePathInclude(StringRef name) {
  if (name.starts_with("/"))
    return true;
  SmallVector<StringRef> parts;
  name.split(parts, '/');
  return llvm::is_contained(parts, "..");
}

bool isEnvironmentVariable(StringRef name) {
  return name == "environ" || name == "__environ" || name == "_environ";
}

bool isFilesystemNamespaceMember(const clang::FunctionDecl *callee) {
  for (const clang::DeclContext *dc = callee->getDeclContext(); dc;
       dc = dc->getParent())
    if (const auto *ns = dyn_cast<clang::NamespaceDecl>(dc))
      if (ns->getName() == "filesystem")
        return true;
  return false;
}

bool isFileStreamClass(StringRef name) {
  return name == "basic_ifstream" || name == "basic_ofstream" ||
         name == "basic_fstream" || name == "basic_filebuf";
}

bool isSymbolWriteCall(StringRef name) {
  return name == "cudaMemcpyToSymbol" || name == "cudaMemcpyToSymbolAsync" ||
         name == "cudaMemsetSymbol" || name == "cudaGetSymbolAddress";
}

std::optional<std::string> findControlFlowPtx(StringRef asmText) {
  // Instructions end at `;` or a newline; `{ }` scope registers.
  std::string text = asmText.str();
  for (char &c : text)
    if (c == '\n' || c == '{' || c == '}')
      c = ';';
  SmallVector<StringRef> pieces;
  StringRef(text).split(pieces, ';');
  for (StringRef piece : pieces) {
    piece = piece.trim(" \t\r");
    // A label `L1: bra L1` keeps its instruction after the colon.
    if (size_t colon = piece.find(':'); colon != StringRef::npos &&
                                         !piece.take_front(colon).contains(' '))
      piece = piece.drop_front(colon + 1).ltrim(" \t");
    if (piece.starts_with("@")) // predicate guard: `@p bra L;`
      piece = piece.drop_until([](char c) { return c == ' ' || c == '\t'; }).ltrim(" \t");
    StringRef opcode = piece.take_until([](char c) {
      return c == ' ' || c == '\t' || c == '.';
    });
    if (StringSwitch<bool>(opcode)
            .Cases({"bra", "brx", "trap", "exit", "brkpt", "ret"}, true)
            .Default(false))
      return piece.take_until([](char c) { return c == ' ' || c == '\t'; }).str();
  }
  return std::nullopt;
}

namespace {
struct KindName {
  DeceptionKind kind;
  const char *name;
};
constexpr KindName kKindNames[] = {
    {DeceptionKind::TorchCompute, "torch_compute"},
    {DeceptionKind::VendorLibrary, "vendor_library"},
    {DeceptionKind::NoKernel, "no_kernel"},
    {DeceptionKind::UnreachableKernel, "unreachable_kernel"},
    {DeceptionKind::StreamOrGraph, "stream_or_graph"},
    {DeceptionKind::Threads, "threads"},
    {DeceptionKind::PersistentState, "persistent_state"},
    {DeceptionKind::SystemAccess, "system_access"},
    {DeceptionKind::InlinePtxControl, "inline_ptx_control"},
};
} // namespace

std::string_view deceptionKindName(DeceptionKind kind) {
  for (const KindName &entry : kKindNames)
    if (entry.kind == kind)
      return entry.name;
  return "unknown";
}

std::optional<DeceptionKind> parseDeceptionKind(std::string_view name) {
  for (const KindName &entry : kKindNames)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

std::string DeceptionFinding::format() const {
  return "line " + std::to_string(line) + ": " +
         std::string(deceptionKindName(kind)) + ": " + message;
}

} // namespace dice
