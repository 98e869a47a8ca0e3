// Whether a CUDA device can be used: the runtime's answer, with its reason when not.
#include <cuda_runtime_api.h>

#include "compute/cuda/cuda_backend.hpp"

namespace petra {

bool cuda_available(std::string* why) {
  int count = 0;  // cudaGetDeviceCount leaves it unwritten when it fails
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    const std::string said = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
    // Without a GPU there is no driver either, and the runtime calls that an "insufficient" driver.
    if (why && status == cudaErrorInsufficientDriver)
      *why =
          "no GPU with a working NVIDIA driver found on this machine (none installed, or one older than "
          "this build's CUDA " +
          std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
          "; the CUDA runtime said " + said + ")";
    else if (why && status == cudaErrorNoDevice)
      *why = "no GPU found on this machine (the CUDA runtime said " + said + ")";
    else if (why)
      *why = said;
    cudaGetLastError();  // clear it so later calls start clean
    return false;
  }
  if (count == 0) {
    if (why) *why = "the CUDA runtime reports no device";
    return false;
  }
  return true;
}

}  // namespace petra
