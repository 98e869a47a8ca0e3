// Backends by device.
#include "compute/backend_factory.hpp"

#include <stdexcept>

#include "compute/cpu/bf16_support.hpp"
#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_devices.hpp"

#ifdef PETRA_HAVE_CUDA
#include "compute/cuda/cuda_backend.hpp"
#endif

namespace petra {

namespace {

/// bf16 on the CPU kernels (a CPU or sim device) needs the CPU's bf16 instructions: without them
/// oneDNN's bf16 convolutions are slow emulations or missing; bf16_emulated is the knowing choice.
void require_bf16_instructions(const backend_options& options) {
  if (options.precision != math_precision::bf16) return;
  const std::string missing = missing_bf16_instructions(cpu_flags());
  if (!missing.empty())
    throw std::invalid_argument("runtime.precision: bf16 needs bf16 instructions, and " + missing +
                                ": set runtime.precision: bf16_emulated (the same rounding on fp32 "
                                "kernels, slower) or fp32");
}

}  // namespace

std::unique_ptr<backend> make_backend(const device& where, const backend_options& options) {
  if (where.type != device_type::cuda) require_bf16_instructions(options);
  if (where.type == device_type::cpu) return make_cpu_backend(options.threads, options.precision);
  if (where.type == device_type::sim) {
    if (!options.sim)
      throw std::invalid_argument(
          "device " + where.str() +
          " needs the run's simulated devices: pass a sim_devices in backend_options::sim");
    sim_options sim;
    sim.threads = options.threads;
    sim.latency_us = options.sim_latency_us;
    sim.skip_import_wait = options.sim_skip_import_wait;
    sim.precision = options.precision;
    return make_sim_backend(*options.sim, where.index, sim);
  }
#ifdef PETRA_HAVE_CUDA
  std::string why;
  if (!cuda_usable(&why)) throw std::invalid_argument("device " + where.str() + " is not usable: " + why);
  return make_cuda_backend(where.index, options.precision, options.deterministic, options.cudnn_search,
                           options.cudnn_recorded);
#else
  throw std::invalid_argument(
      "device " + where.str() +
      ": this build has no CUDA backend (the CUDA toolkit was not found at configure time)");
#endif
}

host_tensor_maker host_tensors_for(const device& consumer, std::size_t max_idle_bytes) {
#ifdef PETRA_HAVE_CUDA
  if (consumer.type == device_type::cuda && cuda_usable(nullptr))
    return make_pinned_host_tensors(max_idle_bytes);
#else
  (void)max_idle_bytes;
#endif
  (void)consumer;
  return [](const shape_t& shape) { return tensor::empty(shape); };
}

std::vector<conv_algorithm_record> conv_algorithm_choices(const backend_options& options) {
#ifdef PETRA_HAVE_CUDA
  return cuda_conv_algorithm_choices(resolved(options.cudnn_search, options.deterministic),
                                     options.cudnn_recorded.get());
#else
  (void)options;
  return {};
#endif
}

bool cuda_usable(std::string* why) {
#ifdef PETRA_HAVE_CUDA
  return cuda_available(why);
#else
  if (why) *why = "this build has no CUDA backend";
  return false;
#endif
}

}  // namespace petra
