// Light build: <c10/cuda/CUDAException.h> is part of the light tensor API.
#pragma once

#include "dice_light/tensor.h"
