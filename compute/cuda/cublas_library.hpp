// cuBLAS, loaded when a CUDA backend first needs it rather than when petra starts. Linking it
// would make every petra process (a CPU run, `petra node`, `petra model-info`, each test) pay
// libcublasLt's start-up work, about 0.4 s of CPU on the test machine, GPU or not.
#pragma once

#include <cublas_v2.h>

namespace petra::cuda {

/// cublasGemmEx and cublasGemmStridedBatchedEx with a cublasComputeType_t (the library's own
/// functions; cublas_api.h adds C++ overloads taking a cudaDataType, which the library lacks).
using cublas_gemm_ex_t = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                            int, const void*, const void*, cudaDataType, int, const void*,
                                            cudaDataType, int, const void*, void*, cudaDataType, int,
                                            cublasComputeType_t, cublasGemmAlgo_t);
using cublas_gemm_strided_batched_ex_t = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                            cublasOperation_t, int, int, int, const void*,
                                                            const void*, cudaDataType, int, long long,
                                                            const void*, cudaDataType, int, long long,
                                                            const void*, void*, cudaDataType, int, long long,
                                                            int, cublasComputeType_t, cublasGemmAlgo_t);

/// The cuBLAS functions the backend calls, as the toolkit's cublas_v2.h declares them.
struct cublas_functions {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetPointerMode) set_pointer_mode;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm) sgemm;
  cublas_gemm_ex_t gemm_ex;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  cublas_gemm_strided_batched_ex_t gemm_strided_batched_ex;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

/// The toolkit's cuBLAS (libcublas.so.<major> of the headers petra was built with), loaded on the
/// first call from the library path; std::runtime_error naming the library and the loader's
/// reason when it cannot be loaded or lacks one of the functions.
const cublas_functions& cublas();

/// The file name cublas() loads.
const char* cublas_library_name();

/// True once this process has loaded cuBLAS through cublas().
bool cublas_loaded();

}  // namespace petra::cuda
