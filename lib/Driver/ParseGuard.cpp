//===- ParseGuard.cpp - find inputs MLIR's parser crashes on --------------===//

#include "dice/Driver/ParseGuard.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;

namespace {

/// The child: parse, writing each diagnostic to `fd` as it comes (the
/// crash may follow it at once), then exit 0.
[[noreturn]] void parseInChild(int fd, llvm::StringRef text,
                               llvm::StringRef bufferName,
                               const DialectRegistry &registry,
                               llvm::StringRef splitMarker) {
  // Nothing of the child reaches the user but its diagnostics: no LLVM
  // crash report on stderr, no core file.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP})
    ::signal(sig, SIG_DFL);
  if (int null = ::open("/dev/null", O_WRONLY); null >= 0)
    ::dup2(null, STDERR_FILENO);
  struct rlimit noCore = {0, 0};
  ::setrlimit(RLIMIT_CORE, &noCore);
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/false, /*unbuffered=*/true);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects();
  auto parseChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                        raw_ostream &) {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context, out);
    Block block;
    (void)parseSourceFile(sourceMgr, &block, ParserConfig(&context));
    return success();
  };
  // A copy ends in the NUL that MLIR's lexer takes for the end.
  (void)splitAndProcessBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName),
      NoSourceChunkBufferHandler(parseChunk), llvm::nulls(), splitMarker, "");
  out.flush();
  ::_exit(0);
}

} // namespace

std::optional<dice::ParserCrash>
dice::findParserCrash(llvm::StringRef text, llvm::StringRef bufferName,
                      const DialectRegistry &registry,
                      llvm::StringRef splitMarker) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return std::nullopt; // no guard: the parse itself still runs
  pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    ::close(fds[0]);
    parseInChild(fds[1], text, bufferName, registry, splitMarker);
  }
  ::close(fds[1]);
  std::string diagnostics;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n > 0)
      diagnostics.append(chunk, size_t(n));
    else if (n == 0 || errno != EINTR)
      break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFSIGNALED(status))
    return std::nullopt;
  return ParserCrash{WTERMSIG(status), std::move(diagnostics)};
}
