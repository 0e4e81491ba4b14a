// Light build: <torch/types.h> is part of the light tensor API.
#pragma once

#include "dice_light/tensor.h"
