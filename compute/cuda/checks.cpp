// Status checks: messages that say which call failed, why, and what to do about it.
#include "compute/cuda/checks.hpp"

#include <limits>
#include <stdexcept>

#include "compute/cuda/cublas_library.hpp"
#include "compute/op_checks.hpp"

namespace petra::cuda {

namespace {

const char* const out_of_memory_advice =
    "the GPU is out of memory: lower the micro-batch size, put fewer stages on this GPU, or stop "
    "other processes using it (nvidia-smi)";
const char* const fault_advice =
    "a kernel failed and the CUDA context is lost: rerun with CUDA_LAUNCH_BLOCKING=1 (and under "
    "compute-sanitizer) to find the op, and report it with the shapes involved";

std::string message(const char* call, const std::string& status, const char* where,
                    const std::string& advice) {
  return std::string(call) + " failed with " + status + " (" + where + "): " + advice;
}

std::string advice_for(cudaError_t status) {
  switch (status) {
    case cudaErrorMemoryAllocation:
      return out_of_memory_advice;
    case cudaErrorInsufficientDriver:
    case cudaErrorNoDevice:
      return "no usable GPU: check the driver with nvidia-smi (this build needs a driver for CUDA 13), "
             "or run on the CPU (device: cpu)";
    case cudaErrorInvalidDevice:
      return "no GPU has this index: list them with nvidia-smi -L and fix the stage's device";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
      return "this build has kernels for sm_90 only (CMAKE_CUDA_ARCHITECTURES=90): rebuild for this "
             "GPU's architecture";
    case cudaErrorPeerAccessUnsupported:
      return "these GPUs cannot reach each other's memory: copies between them must go through the host";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorMisalignedAddress:
    case cudaErrorIllegalInstruction:
    case cudaErrorAssert:
      return fault_advice;
    default:
      return "see the CUDA runtime documentation for this status; rerun with CUDA_LAUNCH_BLOCKING=1 to "
             "locate the op that caused it";
  }
}

std::string advice_for(cudnnStatus_t status) {
  // cuDNN 9 numbers its statuses by category: 1xxx general, 2xxx bad parameter, 3xxx not
  // supported, 4xxx internal (4003/4004: allocation), 5xxx execution.
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    return out_of_memory_advice;
  switch (static_cast<int>(status) / 1000) {
    case 1:
      return "cuDNN could not start: no usable GPU, or cuDNN, its sub-libraries and the driver do not match "
             "(check nvidia-smi and that libcudnn*.so.9 are the ones this build was made with)";
    case 2:
      return "cuDNN rejected a shape or a descriptor: report the op with its shapes";
    case 3:
      return "this cuDNN cannot run the op for these shapes with the chosen settings: try without "
             "deterministic algorithms, or report the op with its shapes";
    case 5:
      return fault_advice;
    default:
      return "an internal cuDNN error: set CUDNN_LOGERR_DBG=1 CUDNN_LOGDEST_DBG=stderr for cuDNN's own log";
  }
}

std::string advice_for(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "cuBLAS could not start: no usable GPU or a driver that does not match (check nvidia-smi)";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return out_of_memory_advice;
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return fault_advice;
    case CUBLAS_STATUS_INVALID_VALUE:
      return "cuBLAS rejected an extent or a leading dimension: report the op with its shapes";
    default:
      return "see the cuBLAS documentation for this status";
  }
}

}  // namespace

void throw_status(cudaError_t status, const char* call, const char* where) {
  const std::string name = std::string(cudaGetErrorName(status)) + " \"" + cudaGetErrorString(status) + "\"";
  throw std::runtime_error(message(call, name, where, advice_for(status)));
}

void throw_status(cudnnStatus_t status, const char* call, const char* where) {
  throw std::runtime_error(message(call, cudnnGetErrorString(status), where, advice_for(status)));
}

void throw_status(cublasStatus_t status, const char* call, const char* where) {
  const std::string name =
      std::string(cublas().status_name(status)) + " \"" + cublas().status_string(status) + "\"";
  throw std::runtime_error(message(call, name, where, advice_for(status)));
}

void check_launch(const char* kernel) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    const std::string call = std::string("launching kernel ") + kernel;
    throw_status(status, call.c_str(), "after <<<>>>");
  }
}

int to_int(const char* op, const char* what, int64_t value) {
  if (value < 0 || value > std::numeric_limits<int>::max())
    fail_op(op, std::string(what) + " = " + std::to_string(value) +
                    " does not fit cuDNN/cuBLAS's int extents: split the micro-batch");
  return static_cast<int>(value);
}

}  // namespace petra::cuda
