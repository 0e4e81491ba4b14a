// The translation unit DiceTorchPch precompiles <torch/torch.h> for
// (cmake/DiceTorch.cmake); it defines nothing.
