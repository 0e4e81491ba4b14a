// Included before every candidate (`-include dice_prologue.h`): what a
// load_inline build of the CUDA source would have had in scope.
#pragma once

#include <torch/extension.h>
#include <cuda_runtime.h>
