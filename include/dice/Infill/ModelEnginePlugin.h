//===- ModelEnginePlugin.h - the model engine's loadable entry --*- C++ -*-===//
//
// The embedded model lives in a module of its own (libDiceModelEngine.so,
// beside the tools' lib/ folder) that the compiler opens only when a compile
// asks for the model. Both sides are built by the same compiler from this
// tree, so the entry point passes C++ types.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_INFILL_MODELENGINEPLUGIN_H
#define DICE_INFILL_MODELENGINEPLUGIN_H

#include "dice/Infill/InfillEngine.h"

#include <memory>

/// The entry's symbol, and its name for dlsym.
#define DICE_MODEL_ENGINE_ENTRY dice_load_model_engine
#define DICE_MODEL_ENGINE_ENTRY_NAME "dice_load_model_engine"

/// Loads the checkpoint at `modelDir` (config.json, safetensors, tokenizer
/// files), with the adapter folder `adapterDir` merged in unless it is
/// empty, onto `device` ("auto": the GPU when there is one, "cuda", "cpu"),
/// computing in `dtype` ("auto": the checkpoint's torch_dtype on a GPU,
/// float32 on the CPU; "bfloat16", "float16", "float32"); on failure says
/// why.
using DiceModelEngineEntry = dice::Result<std::unique_ptr<dice::InfillEngine>> (*)(
    const char *modelDir, const char *adapterDir, const char *device, const char *dtype);

/// The module's file name.
inline constexpr const char *kDiceModelPluginFile = "libDiceModelPlugin.so";

#endif // DICE_INFILL_MODELENGINEPLUGIN_H
