#include <torch/extension.h>

// No kernel at all: returns a buffer that happens to match a zero result.
torch::Tensor dice_forward(torch::Tensor x0) { // expect: no_kernel
  return torch::zeros_like(x0);
}
