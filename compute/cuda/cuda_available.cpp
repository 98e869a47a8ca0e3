// Whether a CUDA device can be used: the runtime's answer, with its reason when not.
#include <cuda_runtime_api.h>

#include "compute/cuda/cuda_backend.hpp"

namespace petra {

bool cuda_available(std::string* why) {
  int count = 0;  // cudaGetDeviceCount leaves it unwritten when it fails
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why) *why = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
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
