// Status checks for the CUDA runtime, cuDNN and cuBLAS: a failed call throws std::runtime_error
// naming the call, the status and what to do. (The ops' preconditions are backend's, op_checks.)
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <string>

#define PETRA_CUDA_STRINGIFY_(x) #x
#define PETRA_CUDA_STRINGIFY(x) PETRA_CUDA_STRINGIFY_(x)
/// Checks one CUDA runtime, cuDNN or cuBLAS call; the message quotes the call and its place.
#define PETRA_CUDA_CHECK(call) \
  ::petra::cuda::check((call), #call, __FILE__ ":" PETRA_CUDA_STRINGIFY(__LINE__))

namespace petra::cuda {

[[noreturn]] void throw_status(cudaError_t status, const char* call, const char* where);
[[noreturn]] void throw_status(cudnnStatus_t status, const char* call, const char* where);
[[noreturn]] void throw_status(cublasStatus_t status, const char* call, const char* where);

inline void check(cudaError_t status, const char* call, const char* where) {
  if (status != cudaSuccess) throw_status(status, call, where);
}
inline void check(cudnnStatus_t status, const char* call, const char* where) {
  if (status != CUDNN_STATUS_SUCCESS) throw_status(status, call, where);
}
inline void check(cublasStatus_t status, const char* call, const char* where) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_status(status, call, where);
}

/// After a kernel launch: a bad configuration or a fault of an earlier kernel surfaces here.
void check_launch(const char* kernel);

/// cuDNN and cuBLAS take int extents: `value` as an int, or std::invalid_argument naming `op`.
int to_int(const char* op, const char* what, int64_t value);

}  // namespace petra::cuda
