//===- KernelBuild.cpp - a candidate's kernel library ---------------------===//

#include "dice/KernelBuild/KernelBuild.h"

#include "dice/KernelBuild/GroupSource.h"
#include "dice/Sandbox/Subprocess.h"
#include "dice/Support/File.h"
#include "dice/Support/Sha256.h"
#include "dice/Support/Text.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace fs = std::filesystem;

namespace dice {

namespace {

/// Lines of compiler output kept in a result: enough for the first error
/// and its context, little enough for a verdict reason and a prompt.
constexpr size_t kDiagnosticLines = 20;

/// The name of the candidate's file in every build directory and message.
constexpr const char *kCandidateFile = "candidate.cu";
constexpr const char *kRegistrationFile = "dice_registration.cu";
constexpr const char *kDeclarationFile = "dice_forward_decl.h";

/// The file's bytes; empty when it cannot be read (a log nvcc never wrote,
/// a cache entry without diagnostics).
std::string readFileOrEmpty(const fs::path &path) {
  Result<std::string> text = readFile(path.string());
  return text ? text.take() : std::string();
}

bool writeFile(const fs::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

/// `extern "C"` so the registration object can name it without knowing the
/// fingerprint; hidden so two loaded libraries never bind each other's.
std::string nameDefinition(std::string_view fingerprint) {
  return "\nextern \"C\" __attribute__((visibility(\"hidden\"))) const char "
         "dice_kernel_name[] = \"k_" +
         std::string(fingerprint) + "\";\n";
}

/// Force-included before the candidate. Hidden visibility makes a
/// definition that does not match the declaration a link error (the hidden
/// reference must be satisfied inside the library) and keeps libraries
/// loaded into one worker from interposing each other's dice_forward.
std::string declarationHeader(const DiceForwardSignature &signature) {
  return "#pragma once\n__attribute__((visibility(\"hidden\"))) " +
         signature.declaration + "\n";
}

std::string nvccVersion(const std::string &nvccPath, const fs::path &scratch,
                        std::string &error) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = versions.find(nvccPath); it != versions.end())
    return it->second;
  fs::path log = scratch / ("nvcc-version." + std::to_string(getpid()));
  fs::remove(log);
  ProcessResult run = runProcess({nvccPath, "--version"}, log.string(), 60);
  std::string text = readFileOrEmpty(log);
  fs::remove(log);
  if (!run.succeeded()) {
    error = run.spawnError.empty() ? "'" + nvccPath + " --version' failed: " + trim(text)
                                   : run.spawnError;
    return "";
  }
  versions[nvccPath] = text;
  return text;
}

/// Flags of every nvcc compile; paths inside a build directory are added by
/// the caller, so the list itself can be part of a cache key.
std::vector<std::string> compileFlags(const KernelBuildOptions &options) {
  // The defines are the ones torch.utils.cpp_extension passes, which the
  // static analysis also uses: both must agree on what parses.
  std::vector<std::string> flags = {
      "-std=c++17", "-O3", "-arch=" + options.gpuArch,
      "--expt-relaxed-constexpr",
      "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
      "-Xcompiler", "-fPIC"};
  if (!options.prologueDir.empty())
    flags.push_back("-I" + options.prologueDir);
  for (const std::string &dir : options.includeDirs) {
    flags.push_back("-isystem");
    flags.push_back(dir);
  }
  if (!options.prologueDir.empty()) {
    flags.push_back("-include");
    flags.push_back("dice_prologue.h");
  }
  flags.insert(flags.end(), options.extraFlags.begin(), options.extraFlags.end());
  return flags;
}

std::vector<std::string> linkFlags(const KernelBuildOptions &options) {
  // The CUDA runtime is shared, as in a torch extension: one runtime per
  // process, the one torch loaded.
  std::vector<std::string> flags = {"-shared", "-arch=" + options.gpuArch,
                                    "-cudart", "shared"};
  if (!options.torchLibraryDir.empty()) {
    flags.insert(flags.end(),
                 {"-Xlinker", "--no-undefined", "-L" + options.torchLibraryDir,
                  "-Xlinker", "-rpath," + options.torchLibraryDir, "-lc10",
                  "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch"});
  }
  return flags;
}

/// Whether `dir` holds LibTorch's headers, which a light build must not see:
/// a candidate including one the light API lacks should fail fast, not parse
/// half of LibTorch against the light types.
bool holdsTorchHeaders(const std::string &dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / "ATen", ec) ||
         fs::exists(fs::path(dir) / "torch" / "torch.h", ec) ||
         fs::exists(fs::path(dir) / "c10", ec);
}

/// Flags of a light compile: the full build's defines (what parses must not
/// depend on the mode), hidden visibility, the light headers, and the
/// include directories other than LibTorch's (CCCL).
std::vector<std::string> lightCompileFlags(const KernelBuildOptions &options) {
  std::vector<std::string> flags = {
      "-std=c++17", "-O3", "-arch=" + options.gpuArch,
      "--expt-relaxed-constexpr",
      "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
      "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
      "-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden",
      "-I" + options.lightIncludeDir};
  for (const std::string &dir : options.includeDirs) {
    if (holdsTorchHeaders(dir))
      continue;
    flags.push_back("-isystem");
    flags.push_back(dir);
  }
  flags.insert(flags.end(), {"-include", "dice_prologue.h"});
  flags.insert(flags.end(), options.extraFlags.begin(), options.extraFlags.end());
  return flags;
}

/// A light library needs the bridge and the shared CUDA runtime only; the
/// bridge brings LibTorch, which the caller's process has loaded anyway.
std::vector<std::string> lightLinkFlags(const KernelBuildOptions &options) {
  fs::path bridge(options.lightBridgeLibrary);
  return {"-shared", "-cudart", "shared", "-Xlinker", "--no-undefined",
          "-L" + bridge.parent_path().string(),
          "-l:" + bridge.filename().string(), "-Xlinker",
          "-rpath," + bridge.parent_path().string()};
}

bool lightConfigured(const KernelBuildOptions &options) {
  return !options.lightIncludeDir.empty() &&
         !options.lightBridgeLibrary.empty();
}

/// What the headers contribute to a key without hashing all of LibTorch:
/// the prologue files and torch's version header.
void hashHeaders(Sha256 &hash, const KernelBuildOptions &options) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!options.prologueDir.empty())
    for (auto it = fs::recursive_directory_iterator(options.prologueDir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file())
        files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const std::string &dir : options.includeDirs)
    if (fs::exists(fs::path(dir) / "torch" / "version.h"))
      files.push_back(fs::path(dir) / "torch" / "version.h");
  for (const fs::path &file : files) {
    hash.updateField(file.string());
    hash.updateField(readFileOrEmpty(file));
  }
}

void hashToolchain(Sha256 &hash, const KernelBuildOptions &options,
                   const std::string &version) {
  hash.updateField(version);
  for (const std::string &flag : compileFlags(options))
    hash.updateField(flag);
  for (const std::string &flag : linkFlags(options))
    hash.updateField(flag);
  hashHeaders(hash, options);
}

void hashLightToolchain(Sha256 &hash, const KernelBuildOptions &options,
                        const std::string &version) {
  hash.updateField(version);
  for (const std::string &flag : lightCompileFlags(options))
    hash.updateField(flag);
  for (const std::string &flag : lightLinkFlags(options))
    hash.updateField(flag);
  // The light headers include the bridge's ABI (dice_light/bridge.h).
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(options.lightIncludeDir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file())
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const fs::path &file : files) {
    hash.updateField(file.string());
    hash.updateField(readFileOrEmpty(file));
  }
}

/// Rewrites build-directory paths away and keeps the first lines.
std::string cleanDiagnostics(const std::string &log, const fs::path &buildDir) {
  std::string prefix = buildDir.string() + "/";
  std::stringstream in(log);
  std::string out;
  size_t kept = 0;
  for (std::string line; std::getline(in, line) && kept < kDiagnosticLines;) {
    for (size_t at; (at = line.find(prefix)) != std::string::npos;)
      line.erase(at, prefix.size());
    if (trim(line).empty())
      continue;
    out += line + "\n";
    ++kept;
  }
  return out;
}

/// The first error as a sentence with the candidate's line.
std::string firstError(const std::string &diagnostics,
                       const DiceForwardSignature &signature) {
  static const std::regex nvccStyle(
      R"(candidate\.cu\((\d+)\): (?:catastrophic )?error:?\s*(.*))");
  static const std::regex gccStyle(
      R"(candidate\.cu:(\d+):\d+: (?:fatal )?error: (.*))");
  static const std::regex registration(
      R"(dice_registration\.cu[(:](\d+).*error:?\s*(.*))");
  std::stringstream in(diagnostics);
  std::string fallback;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, nvccStyle) ||
        std::regex_search(line, m, gccStyle))
      return "line " + m[1].str() + ": " + trim(m[2].str());
    if (std::regex_search(line, m, registration))
      return "dice_forward cannot be called as `" + signature.declaration +
             "`: " + trim(m[2].str());
    if (line.find("dice_forward") != std::string::npos &&
        (line.find("undefined reference") != std::string::npos ||
         line.find("isn't defined") != std::string::npos))
      return "dice_forward is not defined with the request's signature `" +
             signature.declaration + "`";
    if (fallback.empty() && line.find("error") != std::string::npos)
      fallback = trim(line);
  }
  return fallback;
}

std::atomic<unsigned> buildCounter{0};

fs::path scratchDir(const KernelBuildOptions &options, std::string_view tag) {
  return fs::path(options.cacheDir) / "tmp" /
         (std::string(tag) + "." + std::to_string(getpid()) + "." +
          std::to_string(buildCounter++));
}

fs::path entryDir(const KernelBuildOptions &options, const std::string &key) {
  return fs::path(options.cacheDir) / key.substr(0, 2) / key;
}

/// Publishes a finished build directory under its key. Another process may
/// have published the same key first; its entry is as good as ours.
void publish(const fs::path &from, const fs::path &to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  fs::rename(from, to, ec);
  if (ec)
    fs::remove_all(from, ec);
}

/// Registration objects are shared by every build of a signature; one
/// thread builds each, the others wait for it.
std::shared_ptr<std::mutex> registrationLock(const std::string &key) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<std::mutex>> locks;
  std::lock_guard<std::mutex> lock(mutex);
  auto &entry = locks[key];
  if (!entry)
    entry = std::make_shared<std::mutex>();
  return entry;
}

struct Prepared {
  DiceForwardSignature signature;
  std::string version;
  std::string key;
  std::string registrationKey;
  std::string lightKey; ///< empty where no light build is configured
};

std::optional<Prepared> prepare(const KernelBuildRequest &request,
                                const KernelBuildOptions &options,
                                std::string &error) {
  // The fingerprint becomes part of an operator name (`k_<fp>`) and a file
  // name, so it may start with a digit but must stay a plain word.
  if (!isIdentifier("k_" + request.fingerprint) ||
      request.fingerprint.size() > 128) {
    error = "fingerprint '" + request.fingerprint +
            "' is not a name of letters, digits and '_'";
    return std::nullopt;
  }
  if (options.cacheDir.empty()) {
    error = "no build cache directory";
    return std::nullopt;
  }
  Prepared p;
  Result<DiceForwardSignature> signature =
      parseDiceForwardSignature(request.signature);
  if (!signature) {
    error = signature.error().message;
    return std::nullopt;
  }
  p.signature = *signature;
  std::error_code ec;
  fs::create_directories(fs::path(options.cacheDir) / "tmp", ec);
  if (ec) {
    error = "cannot create " + options.cacheDir + ": " + ec.message();
    return std::nullopt;
  }
  p.version = nvccVersion(options.nvccPath,
                          fs::path(options.cacheDir) / "tmp", error);
  if (p.version.empty())
    return std::nullopt;

  Sha256 registration;
  registration.updateField("registration");
  registration.updateField(registrationSource(p.signature));
  hashToolchain(registration, options, p.version);
  p.registrationKey = registration.finishHex();

  Sha256 key;
  key.updateField(options.separateRegistration ? "split" : "single");
  key.updateField(request.cudaSource);
  key.updateField(nameDefinition(request.fingerprint));
  key.updateField(declarationHeader(p.signature));
  key.updateField(registrationSource(p.signature));
  hashToolchain(key, options, p.version);
  p.key = key.finishHex();

  if (lightConfigured(options)) {
    Sha256 light;
    light.updateField("light");
    light.updateField(request.cudaSource);
    light.updateField(declarationHeader(p.signature));
    light.updateField(lightEntrySource(request.fingerprint, p.signature));
    hashLightToolchain(light, options, p.version);
    p.lightKey = light.finishHex();
  }
  return p;
}

/// The key of the first mode a build of `p` tries.
const std::string &firstKey(const Prepared &p, const KernelBuildOptions &options) {
  if (options.mode != KernelBuildMode::Full && !p.lightKey.empty())
    return p.lightKey;
  return p.key;
}

/// Builds (or finds) the registration object of a signature.
std::optional<fs::path> registrationObject(const Prepared &p,
                                           const KernelBuildOptions &options,
                                           std::string &error) {
  fs::path object =
      fs::path(options.cacheDir) / "registration" / (p.registrationKey + ".o");
  std::shared_ptr<std::mutex> lock = registrationLock(object.string());
  std::lock_guard<std::mutex> guard(*lock);
  if (fs::exists(object))
    return object;
  fs::path dir = scratchDir(options, "registration");
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::create_directories(object.parent_path(), ec);
  fs::path source = dir / kRegistrationFile;
  writeFile(source, registrationSource(p.signature));
  std::vector<std::string> argv = {options.nvccPath};
  for (const std::string &flag : compileFlags(options))
    argv.push_back(flag);
  fs::path built = dir / "registration.o";
  argv.insert(argv.end(), {"-c", source.string(), "-o", built.string()});
  fs::path log = dir / "build.log";
  ProcessResult run = runProcess(argv, log.string(), options.timeoutSeconds);
  if (!run.succeeded()) {
    error =
        "the generated registration does not compile: " +
        (run.spawnError.empty() ? cleanDiagnostics(readFileOrEmpty(log), dir)
                                : run.spawnError);
    fs::remove_all(dir, ec);
    return std::nullopt;
  }
  fs::rename(built, object, ec);
  fs::remove_all(dir, ec);
  if (ec && !fs::exists(object)) {
    error = "cannot store " + object.string() + ": " + ec.message();
    return std::nullopt;
  }
  return object;
}

/// Reads a published entry: a library or a recorded compile error.
std::optional<KernelBuildResult> lookup(const fs::path &entry,
                                        const std::string &fingerprint) {
  fs::path library = entry / ("k_" + fingerprint + ".so");
  KernelBuildResult result;
  if (fs::exists(library)) {
    result.status = KernelBuildStatus::Built;
    result.artifactPath = library.string();
  } else if (fs::exists(entry / "compile_error.txt")) {
    result.status = KernelBuildStatus::CompileError;
    result.reason = readFileOrEmpty(entry / "compile_error.txt");
    result.diagnostics = readFileOrEmpty(entry / "diagnostics.txt");
  } else {
    return std::nullopt;
  }
  result.cacheHit = true;
  return result;
}

/// Fills `result` for a failed nvcc run of the build in `dir`: compile
/// errors are published under `entry` (compiling the same text again fails
/// the same way), anything else is dropped.
void finishFailedStep(const ProcessResult &run, const std::string &output,
                      const fs::path &dir,
                      const DiceForwardSignature &signature,
                      const KernelBuildOptions &options, const fs::path &entry,
                      KernelBuildResult &result) {
  std::error_code ec;
  if (!run.spawnError.empty()) {
    result.reason = run.spawnError;
  } else if (run.timedOut) {
    result.status = KernelBuildStatus::Timeout;
    result.reason = "nvcc ran past " +
                    std::to_string(static_cast<int>(options.timeoutSeconds)) +
                    " s and was killed";
    result.diagnostics = cleanDiagnostics(output, dir);
  } else if (run.signal != 0) {
    // Killed from outside (the OOM killer, a user): not the candidate's
    // fault, so not recorded in the cache.
    result.reason = "nvcc was killed by signal " + std::to_string(run.signal);
    result.diagnostics = cleanDiagnostics(output, dir);
  } else {
    result.status = KernelBuildStatus::CompileError;
    result.diagnostics = cleanDiagnostics(output, dir);
    result.reason = firstError(result.diagnostics, signature);
    if (result.reason.empty())
      result.reason =
          "nvcc failed with exit status " + std::to_string(run.exitCode);
    fs::remove(dir / "candidate.o", ec);
    writeFile(dir / "compile_error.txt", result.reason);
    writeFile(dir / "diagnostics.txt", result.diagnostics);
    publish(dir, entry);
    return;
  }
  fs::remove_all(dir, ec);
}

KernelBuildResult compileAndLink(const KernelBuildRequest &request,
                                 const Prepared &p,
                                 const KernelBuildOptions &options) {
  KernelBuildResult result;
  result.key = p.key;
  // The registration object (first build of a signature) compiles beside
  // the candidate: two nvcc processes instead of one after the other.
  std::string registrationError;
  std::optional<fs::path> registration;
  std::thread registrationBuild;
  if (options.separateRegistration)
    registrationBuild = std::thread([&] {
      registration = registrationObject(p, options, registrationError);
    });
  struct Joiner {
    std::thread &thread;
    ~Joiner() {
      if (thread.joinable())
        thread.join();
    }
  } joiner{registrationBuild};

  fs::path dir = scratchDir(options, p.key.substr(0, 16));
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string source = request.cudaSource + nameDefinition(request.fingerprint);
  if (!options.separateRegistration)
    source += "#line 1 \"" + std::string(kRegistrationFile) + "\"\n" +
              registrationSource(p.signature);
  if (!writeFile(dir / kCandidateFile, source) ||
      !writeFile(dir / kDeclarationFile, declarationHeader(p.signature))) {
    result.reason = "cannot write to " + dir.string();
    return result;
  }
  std::string libraryName = "k_" + request.fingerprint + ".so";
  fs::path log = dir / "build.log";

  std::vector<std::string> compile = {options.nvccPath};
  for (const std::string &flag : compileFlags(options))
    compile.push_back(flag);
  compile.insert(compile.end(),
                 {"-include", (dir / kDeclarationFile).string()});
  std::vector<std::vector<std::string>> steps;
  if (options.separateRegistration) {
    compile.insert(compile.end(), {"-c", (dir / kCandidateFile).string(), "-o",
                                   (dir / "candidate.o").string()});
    std::vector<std::string> link = {options.nvccPath};
    for (const std::string &flag : linkFlags(options))
      link.push_back(flag);
    link.insert(link.end(), {(dir / "candidate.o").string(),
                             "<registration>", "-o",
                             (dir / libraryName).string()});
    steps = {compile, link};
  } else {
    for (const std::string &flag : linkFlags(options))
      if (flag != "-arch=" + options.gpuArch)
        compile.push_back(flag);
    compile.insert(compile.end(), {(dir / kCandidateFile).string(), "-o",
                                   (dir / libraryName).string()});
    steps = {compile};
  }

  for (const std::vector<std::string> &step : steps) {
    if (&step == &steps.back() && registrationBuild.joinable()) {
      registrationBuild.join();
      if (!registration) {
        result.reason = registrationError;
        fs::remove_all(dir, ec);
        return result;
      }
    }
    std::vector<std::string> argv = step;
    for (std::string &arg : argv)
      if (arg == "<registration>")
        arg = registration->string();
    ProcessResult run = runProcess(argv, log.string(), options.timeoutSeconds);
    if (run.succeeded())
      continue;
    finishFailedStep(run, readFileOrEmpty(log), dir, p.signature, options,
                     entryDir(options, p.key), result);
    return result;
  }
  fs::remove(dir / "candidate.o", ec);
  publish(dir, entryDir(options, p.key));
  std::optional<KernelBuildResult> published =
      lookup(entryDir(options, p.key), request.fingerprint);
  if (!published) {
    result.reason = "cannot store the library under " + options.cacheDir;
    return result;
  }
  published->cacheHit = false;
  published->key = p.key;
  return *published;
}

/// The light build: one nvcc run, candidate and generated entry in one TU,
/// linked against the bridge. Only the entry is exported (a version
/// script), so loaded libraries cannot interpose each other.
KernelBuildResult compileLight(const KernelBuildRequest &request,
                               const Prepared &p,
                               const KernelBuildOptions &options) {
  KernelBuildResult result;
  result.key = p.lightKey;
  result.mode = KernelBuildMode::Light;
  fs::path dir = scratchDir(options, "light." + p.lightKey.substr(0, 16));
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string entry = "dice_light_entry_k_" + request.fingerprint;
  std::string source = request.cudaSource + "\n#line 1 \"" +
                       std::string(kRegistrationFile) + "\"\n" +
                       lightEntrySource(request.fingerprint, p.signature);
  if (!writeFile(dir / kCandidateFile, source) ||
      !writeFile(dir / kDeclarationFile, declarationHeader(p.signature)) ||
      !writeFile(dir / "exports.map",
                 "{\n  global: " + entry + ";\n  local: *;\n};\n")) {
    result.reason = "cannot write to " + dir.string();
    return result;
  }
  std::string libraryName = "k_" + request.fingerprint + ".so";
  std::vector<std::string> argv = {options.nvccPath};
  for (const std::string &flag : lightCompileFlags(options))
    argv.push_back(flag);
  argv.insert(argv.end(), {"-include", (dir / kDeclarationFile).string()});
  for (const std::string &flag : lightLinkFlags(options))
    argv.push_back(flag);
  argv.insert(argv.end(),
              {"-Xlinker", "--version-script=" + (dir / "exports.map").string(),
               (dir / kCandidateFile).string(), "-o",
               (dir / libraryName).string()});
  fs::path log = dir / "build.log";
  ProcessResult run = runProcess(argv, log.string(), options.timeoutSeconds);
  if (!run.succeeded()) {
    finishFailedStep(run, readFileOrEmpty(log), dir, p.signature, options,
                     entryDir(options, p.lightKey), result);
    return result;
  }
  publish(dir, entryDir(options, p.lightKey));
  std::optional<KernelBuildResult> published =
      lookup(entryDir(options, p.lightKey), request.fingerprint);
  if (!published) {
    result.reason = "cannot store the library under " + options.cacheDir;
    return result;
  }
  published->cacheHit = false;
  published->key = p.lightKey;
  published->mode = KernelBuildMode::Light;
  return *published;
}

/// What one group build gave: a library every member can be checked from,
/// or the members its errors name (empty: none named, or not a compile
/// error).
struct GroupOutcome {
  bool built = false;
  bool cacheHit = false;
  std::string library;
  std::set<size_t> blamed;
};

/// Builds `members` (indices into `requests`, each with its prepared light
/// key) into one library, or finds it in the cache under `groups/`. Group
/// builds are never published under a member's own key: the library is
/// not any one candidate's.
GroupOutcome compileGroup(const std::vector<KernelBuildRequest> &requests,
                          const std::vector<size_t> &members,
                          const std::map<size_t, Prepared> &prepared,
                          const KernelBuildOptions &options) {
  GroupOutcome outcome;
  std::vector<GroupMember> sources;
  std::string exports;
  Sha256 key;
  key.updateField("group");
  for (size_t i : members) {
    const Prepared &p = prepared.at(i);
    sources.push_back({requests[i].fingerprint, p.signature,
                       requests[i].cudaSource});
    exports += "dice_light_entry_k_" + requests[i].fingerprint + "; ";
    key.updateField(p.lightKey);
  }
  std::string source = groupTranslationUnit(sources);
  key.updateField(source);
  std::string hex = key.finishHex();
  fs::path entry = fs::path(options.cacheDir) / "groups" / hex.substr(0, 2) / hex;
  if (fs::exists(entry / "group.so")) {
    outcome.built = outcome.cacheHit = true;
    outcome.library = (entry / "group.so").string();
    return outcome;
  }
  fs::path dir = scratchDir(options, "group." + hex.substr(0, 16));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!writeFile(dir / "group.cu", source) ||
      !writeFile(dir / "exports.map",
                 "{\n  global: " + exports + "\n  local: *;\n};\n"))
    return outcome;
  std::vector<std::string> argv = {options.nvccPath};
  for (const std::string &flag : lightCompileFlags(options))
    argv.push_back(flag);
  for (const std::string &flag : lightLinkFlags(options))
    argv.push_back(flag);
  argv.insert(argv.end(),
              {"-Xlinker", "--version-script=" + (dir / "exports.map").string(),
               (dir / "group.cu").string(), "-o", (dir / "group.so").string()});
  fs::path log = dir / "build.log";
  ProcessResult run = runProcess(argv, log.string(), options.timeoutSeconds);
  if (!run.succeeded()) {
    // Only a compile error names members; a timeout or a kill says nothing
    // about which one, so every member is then built alone.
    if (run.spawnError.empty() && !run.timedOut && run.signal == 0)
      outcome.blamed = blamedMembers(readFileOrEmpty(log), members.size());
    fs::remove_all(dir, ec);
    return outcome;
  }
  fs::remove(log, ec);
  publish(dir, entry);
  if (!fs::exists(entry / "group.so"))
    return outcome;
  outcome.built = true;
  outcome.library = (entry / "group.so").string();
  return outcome;
}

/// Splits the requests `work` names into groups for shared builds and
/// those built alone: light candidates not yet in the cache, whose text
/// may share a unit, go into groups of distinct fingerprints, as many
/// groups as keep `jobs` busy and no larger than `options.groupSize`.
void planGroups(const std::vector<KernelBuildRequest> &requests,
                const std::vector<size_t> &work,
                const std::map<size_t, Prepared> &prepared,
                const KernelBuildOptions &options, unsigned jobs,
                std::vector<std::vector<size_t>> &groups,
                std::vector<size_t> &alone) {
  std::vector<size_t> shareable;
  for (size_t i : work) {
    auto p = prepared.find(i);
    if (p == prepared.end() || p->second.lightKey.empty() ||
        lookup(entryDir(options, p->second.lightKey), requests[i].fingerprint) ||
        !groupIneligibility(requests[i].cudaSource).empty()) {
      alone.push_back(i);
      continue;
    }
    shareable.push_back(i);
  }
  size_t perGroup = (shareable.size() + jobs - 1) / std::max(1u, jobs);
  perGroup = std::clamp<size_t>(perGroup, 1, options.groupSize);
  for (size_t i : shareable) {
    auto open = std::find_if(groups.begin(), groups.end(), [&](const auto &g) {
      return g.size() < perGroup &&
             std::none_of(g.begin(), g.end(), [&](size_t j) {
               return requests[j].fingerprint == requests[i].fingerprint;
             });
    });
    if (open == groups.end())
      groups.push_back({i});
    else
      open->push_back(i);
  }
  // A group of one is a build alone.
  for (auto it = groups.begin(); it != groups.end();)
    if (it->size() == 1) {
      alone.push_back(it->front());
      it = groups.erase(it);
    } else {
      ++it;
    }
}

} // namespace

std::string operatorSchema(std::string_view fingerprint,
                           const DiceForwardSignature &signature) {
  std::string schema = "k_" + std::string(fingerprint) + "(";
  for (size_t i = 0; i < signature.parameters.size(); ++i)
    schema += (i ? ", Tensor " : "Tensor ") + signature.parameters[i];
  return schema + (signature.returnsList ? ") -> Tensor[]" : ") -> Tensor");
}

std::string registrationSource(const DiceForwardSignature &signature) {
  std::string params, args;
  for (size_t i = 0; i < signature.parameters.size(); ++i) {
    params += (i ? ", const at::Tensor &" : "const at::Tensor &") +
              signature.parameters[i];
    args += (i ? ", " : "") + signature.parameters[i];
  }
  std::string result =
      signature.returnsList ? "std::vector<at::Tensor>" : "at::Tensor";
  std::string schemaTail = operatorSchema("", signature).substr(2);
  return "// Registers the candidate's dice_forward as dice::<dice_kernel_name>"
         " (CUDA).\n"
         "#include <torch/library.h>\n"
         "#include <string>\n"
         "extern \"C\" __attribute__((visibility(\"hidden\"))) const char "
         "dice_kernel_name[];\n"
         "__attribute__((visibility(\"hidden\"))) " + signature.declaration + "\n"
         "namespace {\n" +
         result + " diceKernelEntry(" + params + ") {\n"
         "  return dice_forward(" + args + ");\n"
         "}\n"
         "std::string diceKernelSchema() {\n"
         "  return std::string(dice_kernel_name) + \"" + schemaTail + "\";\n"
         "}\n"
         "} // namespace\n"
         "TORCH_LIBRARY_FRAGMENT(dice, m) { m.def(diceKernelSchema().c_str()); }\n"
         "TORCH_LIBRARY_IMPL(dice, CUDA, m) {\n"
         "  m.impl(dice_kernel_name, TORCH_FN(diceKernelEntry));\n"
         "}\n";
}

std::string lightEntrySource(std::string_view fingerprint,
                             const DiceForwardSignature &signature) {
  std::string name = "k_" + std::string(fingerprint);
  std::string entry = "dice_light_entry_" + name;
  size_t arity = signature.parameters.size();
  std::string locals, args;
  for (size_t i = 0; i < arity; ++i) {
    std::string index = std::to_string(i);
    // Named lvalues: dice_forward may take its tensors by reference.
    locals += "    ::dice_light::Tensor a" + index +
              " = ::dice_light::Tensor::borrow(inputs[" + index + "]);\n";
    args += (i ? ", a" : "a") + index;
  }
  return "// Generated: the C entry and the dispatcher registration of a light "
         "build.\n"
         "extern \"C\" __attribute__((visibility(\"default\"))) int " + entry +
         "(const DiceLightHandle *inputs, size_t numInputs, DiceLightHandle "
         "**outputs, size_t *numOutputs, char **error) {\n"
         "  return ::dice_light::detail::runEntry([&] {\n"
         "    if (numInputs != " + std::to_string(arity) + ")\n"
         "      throw ::dice_light::Error(\"" + name + " takes " +
         std::to_string(arity) + " tensors\");\n" +
         locals +
         "    return dice_forward(" + args + ");\n"
         "  }, outputs, numOutputs, error);\n"
         "}\n"
         "namespace {\n"
         "const ::dice_light::detail::Registration diceLightRegistration(\"" +
         name + "\", \"" + operatorSchema(fingerprint, signature) + "\", " +
         std::to_string(arity) + ", " +
         (signature.returnsList ? "true" : "false") + ", &" + entry + ");\n"
         "} // namespace\n";
}

std::string_view kernelBuildModeName(KernelBuildMode mode) {
  switch (mode) {
  case KernelBuildMode::Auto:
    return "auto";
  case KernelBuildMode::Light:
    return "light";
  case KernelBuildMode::Full:
    return "full";
  }
  return "full";
}

std::string_view kernelBuildStatusName(KernelBuildStatus status) {
  switch (status) {
  case KernelBuildStatus::Built:
    return "built";
  case KernelBuildStatus::CompileError:
    return "compile_error";
  case KernelBuildStatus::Timeout:
    return "timeout";
  case KernelBuildStatus::ToolError:
    return "tool_error";
  }
  return "tool_error";
}

Result<std::string> kernelBuildKey(const KernelBuildRequest &request,
                                   const KernelBuildOptions &options) {
  std::string error;
  std::optional<Prepared> p = prepare(request, options, error);
  if (!p)
    return Error(error);
  return firstKey(*p, options);
}

KernelBuildResult buildKernelLibrary(const KernelBuildRequest &request,
                                     const KernelBuildOptions &given) {
  // Library paths go to GPU workers, which run in their own directories: a
  // cache named relative to this process's directory would not be found.
  KernelBuildOptions options = given;
  std::error_code ec;
  if (!options.cacheDir.empty())
    if (fs::path abs = fs::absolute(options.cacheDir, ec); !ec)
      options.cacheDir = abs.lexically_normal().string();
  auto start = std::chrono::steady_clock::now();
  KernelBuildResult result;
  std::string error;
  std::optional<Prepared> p = prepare(request, options, error);
  bool tryLight = options.mode == KernelBuildMode::Light ||
                  (options.mode == KernelBuildMode::Auto && p &&
                   !p->lightKey.empty());
  if (!p) {
    result.reason = error;
  } else if (tryLight && p->lightKey.empty()) {
    result.reason = "a light build needs the light include directory and "
                    "the bridge library";
  } else {
    std::string lightFailure;
    if (tryLight) {
      if (std::optional<KernelBuildResult> hit =
              lookup(entryDir(options, p->lightKey), request.fingerprint)) {
        result = *hit;
        result.key = p->lightKey;
        result.mode = KernelBuildMode::Light;
      } else {
        result = compileLight(request, *p, options);
      }
      // Only a candidate the light headers reject is worth the full build;
      // its diagnostics, not the light ones, are the candidate's.
      if (options.mode == KernelBuildMode::Auto &&
          result.status == KernelBuildStatus::CompileError)
        lightFailure = result.reason;
    }
    if (!tryLight || !lightFailure.empty()) {
      if (std::optional<KernelBuildResult> hit =
              lookup(entryDir(options, p->key), request.fingerprint)) {
        result = *hit;
        result.key = p->key;
      } else {
        result = compileAndLink(request, *p, options);
      }
      result.mode = KernelBuildMode::Full;
      result.lightFailure = lightFailure;
    }
  }
  result.milliseconds = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  return result;
}

std::vector<KernelBuildResult>
buildAll(const std::vector<KernelBuildRequest> &requests,
         const KernelBuildOptions &given, unsigned jobs,
         const ProgressCallback &progress) {
  KernelBuildOptions options = given;
  std::error_code ec;
  if (!options.cacheDir.empty())
    if (fs::path abs = fs::absolute(options.cacheDir, ec); !ec)
      options.cacheDir = abs.lexically_normal().string();
  jobs = std::max(1u, jobs);
  std::vector<KernelBuildResult> results(requests.size());
  // Identical requests build once: the first of each key does the work.
  std::vector<size_t> firstOf(requests.size());
  std::map<std::string, size_t> byKey;
  std::map<size_t, Prepared> prepared;
  for (size_t i = 0; i < requests.size(); ++i) {
    std::string error;
    std::optional<Prepared> p = prepare(requests[i], options, error);
    firstOf[i] = p ? byKey.emplace(firstKey(*p, options), i).first->second : i;
    if (p)
      prepared.emplace(i, std::move(*p));
  }
  std::vector<size_t> work;
  for (size_t i = 0; i < requests.size(); ++i)
    if (firstOf[i] == i)
      work.push_back(i);

  // A task is one build alone, or a group and how often it was tried.
  struct Task {
    std::vector<size_t> members;
    bool retried = false;
  };
  std::deque<Task> queue;
  if (options.groupSize > 1 && options.mode != KernelBuildMode::Full &&
      lightConfigured(options)) {
    std::vector<std::vector<size_t>> groups;
    std::vector<size_t> alone;
    planGroups(requests, work, prepared, options, jobs, groups, alone);
    // Groups first: they are the long builds.
    for (std::vector<size_t> &group : groups)
      queue.push_back({std::move(group)});
    for (size_t i : alone)
      queue.push_back({{i}});
  } else {
    for (size_t i : work)
      queue.push_back({{i}});
  }

  std::mutex mutex;
  std::condition_variable changed;
  size_t running = 0, finished = 0;
  auto runTask = [&](const Task &task) -> std::vector<Task> {
    if (task.members.size() == 1) {
      results[task.members[0]] =
          buildKernelLibrary(requests[task.members[0]], options);
      return {};
    }
    auto start = std::chrono::steady_clock::now();
    GroupOutcome outcome =
        compileGroup(requests, task.members, prepared, options);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (outcome.built) {
      for (size_t i : task.members) {
        KernelBuildResult &r = results[i];
        r.status = KernelBuildStatus::Built;
        r.key = prepared.at(i).lightKey;
        r.artifactPath = outcome.library;
        r.mode = KernelBuildMode::Light;
        r.sharedLibrary = true;
        r.cacheHit = outcome.cacheHit;
        r.milliseconds = ms;
      }
      return {};
    }
    // The members the errors name get their own build (and their own
    // diagnostics); the others share one more try, then go alone too.
    std::vector<Task> next;
    std::vector<size_t> rest;
    for (size_t k = 0; k < task.members.size(); ++k)
      if (outcome.blamed.count(k))
        next.push_back({{task.members[k]}});
      else
        rest.push_back(task.members[k]);
    if (!task.retried && !outcome.blamed.empty() && rest.size() > 1)
      next.push_back({rest, true});
    else
      for (size_t i : rest)
        next.push_back({{i}});
    return next;
  };
  auto worker = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return !queue.empty() || running == 0; });
      if (queue.empty())
        return;
      Task task = std::move(queue.front());
      queue.pop_front();
      ++running;
      lock.unlock();
      std::vector<Task> next = runTask(task);
      lock.lock();
      --running;
      if (next.empty()) {
        finished += task.members.size();
        if (progress)
          progress(finished, work.size());
      }
      for (Task &t : next)
        queue.push_back(std::move(t));
      changed.notify_all();
    }
  };
  std::vector<std::thread> threads;
  unsigned count = std::max<size_t>(1, std::min<size_t>(jobs, work.size()));
  for (unsigned t = 1; t < count; ++t)
    threads.emplace_back(worker);
  worker();
  for (std::thread &thread : threads)
    thread.join();
  for (size_t i = 0; i < requests.size(); ++i)
    if (firstOf[i] != i) {
      results[i] = results[firstOf[i]];
      results[i].cacheHit = true;
      results[i].milliseconds = 0;
    }
  return results;
}

} // namespace dice
