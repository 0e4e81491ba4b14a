// Light build: <c10/cuda/CUDAStream.h> is part of the light tensor API.
#pragma once

#include "dice_light/tensor.h"
