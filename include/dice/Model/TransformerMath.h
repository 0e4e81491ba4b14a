//===- TransformerMath.h - the Qwen3 pieces both forwards share -*- C++ -*-===//
//
// RMSNorm and RoPE's rotation as Qwen3 computes them, for the runtime's
// transformer (model/Transformer.cpp) and the trainer's policy
// (lib/Train/PolicyModel.cpp), which are held to the same logits.
//
//===----------------------------------------------------------------------===//

#ifndef DICE_MODEL_TRANSFORMERMATH_H
#define DICE_MODEL_TRANSFORMERMATH_H

#include <torch/torch.h>

namespace dice {

/// Qwen3RMSNorm: normalise in fp32, scale in the input dtype.
inline torch::Tensor rmsNorm(const torch::Tensor &x, const torch::Tensor &weight,
                             double eps) {
  torch::Tensor x32 = x.to(torch::kFloat32);
  torch::Tensor normed =
      x32 * torch::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

/// [a, b] -> [-b, a] over the last dimension's halves.
inline torch::Tensor rotateHalf(const torch::Tensor &x) {
  int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

} // namespace dice

#endif // DICE_MODEL_TRANSFORMERMATH_H
