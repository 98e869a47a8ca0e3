// The CUDA backend: cuDNN (legacy API), cuBLAS and kernels of our own. Declared here for the
// backend factory; defined in compute/cuda/*.cpp and *.cu.
#pragma once

#include <memory>
#include <string>

#include "compute/backend.hpp"

namespace petra {

/// True when a CUDA device can be used; otherwise `why` holds the runtime's reason.
bool cuda_available(std::string* why);

/// A backend on GPU `device_index`, with its own stream and cuDNN/cuBLAS handles.
std::unique_ptr<backend> make_cuda_backend(int device_index, bool tf32, bool deterministic);

}  // namespace petra
