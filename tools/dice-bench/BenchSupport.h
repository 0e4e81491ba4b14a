//===- BenchSupport.h - what dice-bench's modes share ---*- C++ -*-===//

#ifndef DICE_TOOLS_DICE_BENCH_BENCHSUPPORT_H
#define DICE_TOOLS_DICE_BENCH_BENCHSUPPORT_H

#include "dice/Model/ModelConfig.h"

#include <c10/cuda/CUDAStream.h>

#include <chrono>

#include <stdexcept>
#include <string>

namespace dice {

/// The SDAR shapes (1.7B follows Qwen3-1.7B; 4B and 8B are SDAR-{4B,8B}-Chat's
/// config.json). Copied here so the benchmark needs no files.
inline ModelConfig sdarShape(const std::string &name) {
  ModelConfig c;
  c.numAttentionHeads = 32;
  c.numKeyValueHeads = 8;
  c.headDim = 128;
  c.vocabSize = 151936;
  c.ropeTheta = 1e6;
  c.rmsNormEps = 1e-6;
  c.numHiddenLayers = 36;
  if (name == "1.7b") {
    c.numHiddenLayers = 28;
    c.hiddenSize = 2048;
    c.intermediateSize = 6144;
    c.numAttentionHeads = 16;
  } else if (name == "4b") {
    c.hiddenSize = 2560;
    c.intermediateSize = 9728;
  } else if (name == "8b") {
    c.hiddenSize = 4096;
    c.intermediateSize = 12288;
  } else {
    throw std::runtime_error("unknown shape '" + name + "' (1.7b, 4b, 8b)");
  }
  return c;
}

/// Seconds on a steady clock.
inline double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void deviceSync() { c10::cuda::getCurrentCUDAStream().synchronize(); }

} // namespace dice

#endif // DICE_TOOLS_DICE_BENCH_BENCHSUPPORT_H
