// Backends by device.
#include "compute/backend_factory.hpp"

#include <stdexcept>

#ifdef PETRA_HAVE_CUDA
#include "compute/cuda/cuda_backend.hpp"
#endif

namespace petra {

std::unique_ptr<backend> make_backend(const device& where, const backend_options& options) {
  if (where.type == device_type::cpu) return make_cpu_backend(options.threads);
#ifdef PETRA_HAVE_CUDA
  std::string why;
  if (!cuda_usable(&why))
    throw std::invalid_argument("device " + where.str() + " is not usable: " + why);
  return make_cuda_backend(where.index, options.tf32, options.deterministic);
#else
  throw std::invalid_argument("device " + where.str() +
                              ": this build has no CUDA backend (the CUDA toolkit was not found at configure time)");
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
