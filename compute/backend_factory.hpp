// Backends by device: the one place that knows which backends this build has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compute/backend.hpp"
#include "compute/conv_algorithms.hpp"

namespace petra {

class sim_devices;

struct backend_options {
  int threads = 1;  // CPU and sim: compute threads
  /// How convolutions and GEMMs round their operands (runtime.precision), on every device.
  math_precision precision = math_precision::fp32;
  bool deterministic = false;  // CUDA: deterministic algorithms only (tests, lockstep parity)
  /// CUDA: how each convolution shape's algorithms are searched for (runtime.cudnn_search), and
  /// the recorded choices to repeat first (runtime.cudnn_algorithms; null: none).
  conv_search cudnn_search = conv_search::automatic;
  std::shared_ptr<const conv_algorithm_table> cudnn_recorded;
  /// sim:N: the run's simulated devices (one worker thread per device, shared by its backends);
  /// required for a sim device. The backend keeps its device alive, not the registry.
  std::shared_ptr<sim_devices> sim;
  int sim_latency_us = 0;             // sim: each op waits this long on the worker before it runs
  bool sim_skip_import_wait = false;  // sim, tests only: import does not wait for the producer
};

/// A backend for `where` ("cpu", "cuda:N", "sim:N"); throws std::invalid_argument naming the
/// device and the reason when this build or this machine cannot provide it, and naming
/// runtime.precision when it is bf16 on a CPU or sim device and the CPU has neither AVX512-BF16
/// nor AMX-BF16 (bf16_emulated runs anywhere).
std::unique_ptr<backend> make_backend(const device& where, const backend_options& options);

/// The convolution algorithms this process's CUDA backends made with `options`' search and
/// recorded table chose so far (every GPU, each key once, in the order chosen); none without CUDA.
/// What a run writes to its directory as cudnn_algorithms.json.
std::vector<conv_algorithm_record> conv_algorithm_choices(const backend_options& options);

/// True when this build has the CUDA backend and a GPU is usable; `why` says why not.
bool cuda_usable(std::string* why);

/// Makes uninitialised host tensors (device `cpu`); may be called from several threads at once.
using host_tensor_maker = std::function<tensor(const shape_t&)>;

/// Host tensors that a backend on `consumer` will read: pinned (page-locked, from a pool of its own
/// that keeps up to `max_idle_bytes` of freed blocks for reuse) when `consumer` is cuda:N and this
/// build and machine can use CUDA, so that the GPU uploads them asynchronously and in place; plain
/// host memory otherwise (cpu, sim:N, a build without CUDA, a machine without a GPU).
host_tensor_maker host_tensors_for(const device& consumer, std::size_t max_idle_bytes);

}  // namespace petra
