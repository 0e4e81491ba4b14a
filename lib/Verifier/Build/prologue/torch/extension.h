// The verifier's <torch/extension.h>: the C++ half of the real header.
//
// Candidates include <torch/extension.h> because load_inline programs do. The
// real header adds the Python bindings (Python.h, pybind11), which a kernel
// library registered through TORCH_LIBRARY never uses, and <torch/all.h>
// (the nn/optim frontend), which costs nvcc about 60% more time than the
// tensor API below. Both the static analysis and the compile of a candidate
// put this directory first on the include path, so they see the same API.
#pragma once

#include <torch/types.h>          // torch::Tensor, factories, ATen ops
#include <ATen/cuda/CUDAContext.h> // at::cuda::getCurrentCUDAStream, ...
#include <c10/cuda/CUDAGuard.h>    // c10::cuda::CUDAGuard
