// cuBLAS loaded on first use (dlopen), its functions looked up by the names cublas_v2.h maps to.
#include "compute/cuda/cublas_library.hpp"

#include <dlfcn.h>

#include <atomic>
#include <stdexcept>
#include <string>

#define PETRA_CUBLAS_NAME_(x) #x
#define PETRA_CUBLAS_NAME(x) PETRA_CUBLAS_NAME_(x)  // after expansion: cublasCreate -> "cublasCreate_v2"

namespace petra::cuda {

namespace {

// The declared types are the headers' own (a changed signature fails to compile here).
[[maybe_unused]] constexpr cublas_gemm_ex_t gemm_ex_declared = &cublasGemmEx;
[[maybe_unused]] constexpr cublas_gemm_strided_batched_ex_t gemm_strided_batched_ex_declared =
    &cublasGemmStridedBatchedEx;

std::atomic<bool> loaded{false};

std::string loader_error() {
  const char* e = dlerror();
  return e ? e : "no reason given";
}

template <typename F>
void look_up(void* library, F& f, const char* name) {
  dlerror();
  f = reinterpret_cast<F>(dlsym(library, name));
  if (!f)
    throw std::runtime_error(std::string("cuBLAS: ") + cublas_library_name() + " has no function " + name +
                             " (" + loader_error() + "): it is not the cuBLAS " +
                             PETRA_CUBLAS_NAME(CUBLAS_VER_MAJOR) + " petra was built with");
}

cublas_functions load() {
  // Never closed: the handles it creates live until the process ends.
  void* library = dlopen(cublas_library_name(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw std::runtime_error(std::string("cuBLAS could not be loaded (") + loader_error() +
                             "): the CUDA backend needs the CUDA toolkit's " + cublas_library_name() +
                             " on the library path (LD_LIBRARY_PATH or the loader's cache)");
  cublas_functions f{};
  look_up(library, f.create, PETRA_CUBLAS_NAME(cublasCreate));
  look_up(library, f.destroy, PETRA_CUBLAS_NAME(cublasDestroy));
  look_up(library, f.set_stream, PETRA_CUBLAS_NAME(cublasSetStream));
  look_up(library, f.set_pointer_mode, PETRA_CUBLAS_NAME(cublasSetPointerMode));
  look_up(library, f.set_math_mode, PETRA_CUBLAS_NAME(cublasSetMathMode));
  look_up(library, f.sgemm, PETRA_CUBLAS_NAME(cublasSgemm));
  look_up(library, f.gemm_ex, PETRA_CUBLAS_NAME(cublasGemmEx));
  look_up(library, f.sgemm_strided_batched, PETRA_CUBLAS_NAME(cublasSgemmStridedBatched));
  look_up(library, f.gemm_strided_batched_ex, PETRA_CUBLAS_NAME(cublasGemmStridedBatchedEx));
  look_up(library, f.status_name, PETRA_CUBLAS_NAME(cublasGetStatusName));
  look_up(library, f.status_string, PETRA_CUBLAS_NAME(cublasGetStatusString));
  loaded = true;
  return f;
}

}  // namespace

const char* cublas_library_name() { return "libcublas.so." PETRA_CUBLAS_NAME(CUBLAS_VER_MAJOR); }

const cublas_functions& cublas() {
  static const cublas_functions functions = load();  // a failed load throws, and is tried again
  return functions;
}

bool cublas_loaded() { return loaded; }

}  // namespace petra::cuda
