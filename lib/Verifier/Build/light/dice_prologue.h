// Included before every candidate of a light build (`-include
// dice_prologue.h`): what a load_inline build of the CUDA source would have
// had in scope, with the light tensor API in place of LibTorch.
#pragma once

#include <torch/extension.h>
#include <cuda_runtime.h>
