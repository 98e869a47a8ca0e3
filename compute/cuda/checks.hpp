// Status checks for the CUDA runtime, cuDNN and cuBLAS, and the backend's preconditions.
// A failed call throws std::runtime_error naming the call, the status and what to do; a
// violated precondition throws std::invalid_argument naming the op, the tensor and its shape.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <stdexcept>
#include <string>

#include "compute/tensor.hpp"

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

[[noreturn]] inline void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

/// `t` is defined, lives on `where` and has the rank of `layout`, e.g. "(N, C, H, W)".
void require_on(const char* op, const char* name, const tensor& t, const device& where, std::size_t rank,
                const char* layout);
void require_same_shape(const char* op, const char* name_a, const tensor& a, const char* name_b,
                        const tensor& b);
/// A per-channel vector of `channels` entries on `where` (γ, β, bias, running statistics).
void require_vector(const char* op, const char* name, const tensor& t, const device& where, int64_t channels,
                    const char* of);
/// cuDNN and cuBLAS take int extents.
int to_int(const char* op, const char* what, int64_t value);

}  // namespace petra::cuda
