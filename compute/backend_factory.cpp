// Backends by device.
#include "compute/backend_factory.hpp"

#include <stdexcept>

#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_devices.hpp"

#ifdef PETRA_HAVE_CUDA
#include "compute/cuda/cuda_backend.hpp"
#endif

namespace petra {

std::unique_ptr<backend> make_backend(const device& where, const backend_options& options) {
  if (where.type == device_type::cpu) return make_cpu_backend(options.threads);
  if (where.type == device_type::sim) {
    if (!options.sim)
      throw std::invalid_argument(
          "device " + where.str() +
          " needs the run's simulated devices: pass a sim_devices in backend_options::sim");
    sim_options sim;
    sim.threads = options.threads;
    sim.latency_us = options.sim_latency_us;
    sim.skip_import_wait = options.sim_skip_import_wait;
    return make_sim_backend(*options.sim, where.index, sim);
  }
#ifdef PETRA_HAVE_CUDA
  std::string why;
  if (!cuda_usable(&why)) throw std::invalid_argument("device " + where.str() + " is not usable: " + why);
  return make_cuda_backend(where.index, options.tf32, options.deterministic);
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

bool cuda_usable(std::string* why) {
#ifdef PETRA_HAVE_CUDA
  return cuda_available(why);
#else
  if (why) *why = "this build has no CUDA backend";
  return false;
#endif
}

}  // namespace petra
