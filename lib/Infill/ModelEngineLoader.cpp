//===- ModelEngineLoader.cpp - open the model engine when it is asked for -===//
//
// The model runtime links LibTorch; the compiler opens it (ModelEnginePlugin)
// only the first time a compile asks for the model. It is looked for in
// $DICE_MODEL_PLUGIN, else in ../lib/ beside the binary that holds this code
// (build/bin/dice-opt -> build/lib/libDiceModelPlugin.so).
//
//===----------------------------------------------------------------------===//

#include "dice/Infill/EngineFactory.h"
#include "dice/Infill/ModelEnginePlugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <mutex>

namespace dice {

std::string binaryFolder() {
  std::string path;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&binaryFolder), &info) && info.dli_fname &&
      std::string(info.dli_fname).find('/') != std::string::npos)
    path = info.dli_fname;
  else {
    char buffer[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
    if (n <= 0)
      return ".";
    path.assign(buffer, n);
  }
  if (char *real = realpath(path.c_str(), nullptr)) {
    path = real;
    free(real);
  }
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

namespace {

std::string pluginPath() {
  if (const char *env = getenv("DICE_MODEL_PLUGIN"); env && *env)
    return env;
  return binaryFolder() + "/../lib/" + kDiceModelPluginFile;
}

} // namespace

Result<std::unique_ptr<InfillEngine>>
createModelInfillEngine(const std::string &modelDir,
                        const std::string &adapterDir,
                        const std::string &device,
                        const std::string &dtype) {
  // Opened once per process and never closed: engines' code lives there.
  static std::once_flag once;
  static DiceModelEngineEntry entry = nullptr;
  static std::string openError;
  std::call_once(once, [] {
    std::string path = pluginPath();
    if (access(path.c_str(), F_OK) != 0) {
      openError = "the model runtime is not installed (no " + path +
                  "; DICE is built with it when DICE_ENABLE_TORCH=ON)";
      return;
    }
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      openError = "cannot open the model runtime: " + std::string(dlerror());
      return;
    }
    entry = reinterpret_cast<DiceModelEngineEntry>(
        dlsym(handle, DICE_MODEL_ENGINE_ENTRY_NAME));
    if (!entry)
      openError = path + " has no " + DICE_MODEL_ENGINE_ENTRY_NAME;
  });
  if (!entry)
    return Error("cannot load the DICE model at '" + modelDir +
                 "': " + openError +
                 "; use engine=replay:<file.jsonl> or a warm kernel database");
  return entry(modelDir.c_str(), adapterDir.c_str(), device.c_str(), dtype.c_str());
}

} // namespace dice
