// Backends by device: the one place that knows which backends this build has.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "compute/backend.hpp"

namespace petra {

class sim_devices;

struct backend_options {
  int threads = 1;             // CPU and sim: compute threads
  bool tf32 = false;           // CUDA: TF32 tensor-core math for convolutions and GEMMs
  bool deterministic = false;  // CUDA: deterministic algorithms only (tests, lockstep parity)
  /// sim:N: the run's simulated devices (one worker thread per device, shared by its backends);
  /// required for a sim device. The backend keeps its device alive, not the registry.
  std::shared_ptr<sim_devices> sim;
  int sim_latency_us = 0;             // sim: each op waits this long on the worker before it runs
  bool sim_skip_import_wait = false;  // sim, tests only: import does not wait for the producer
};

/// A backend for `where` ("cpu", "cuda:N", "sim:N"); throws std::invalid_argument naming the
/// device and the reason when this build or this machine cannot provide it.
std::unique_ptr<backend> make_backend(const device& where, const backend_options& options);

/// True when this build has the CUDA backend and a GPU is usable; `why` says why not.
bool cuda_usable(std::string* why);

}  // namespace petra
