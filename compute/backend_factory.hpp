// Backends by device: the one place that knows which backends this build has.
#pragma once

#include <memory>
#include <string>

#include "compute/backend.hpp"

namespace petra {

struct backend_options {
  int threads = 1;              // CPU: compute threads
  bool tf32 = false;            // CUDA: TF32 tensor-core math for convolutions and GEMMs
  bool deterministic = false;   // CUDA: deterministic algorithms only (tests, lockstep parity)
};

/// A backend for `where` ("cpu", "cuda:N"); throws std::invalid_argument naming the device and
/// the reason when this build or this machine cannot provide it.
std::unique_ptr<backend> make_backend(const device& where, const backend_options& options);

/// True when this build has the CUDA backend and a GPU is usable; `why` says why not.
bool cuda_usable(std::string* why);

}  // namespace petra
