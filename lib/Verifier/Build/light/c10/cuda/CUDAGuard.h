// Light build: <c10/cuda/CUDAGuard.h> is part of the light tensor API.
#pragma once

#include "dice_light/tensor.h"
