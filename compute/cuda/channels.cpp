// Channel halves on the GPU: each image's block of C·H·W floats is one row of a 2-D copy.
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"

namespace petra {

using cuda::fail;

std::pair<tensor, tensor> cuda_backend::split_channels(const tensor& x) {
  const char* op = "split_channels";
  require(op, "x", x, 4, "(N, 2C, H, W)");
  if (x.dim(1) % 2)
    fail(op, "x " + x.shape_str() + " has " + std::to_string(x.dim(1)) +
                 " channels, expected an even number: the split makes two equal halves");
  enter();
  const shape_t half_shape{x.dim(0), x.dim(1) / 2, x.dim(2), x.dim(3)};
  tensor first = output(half_shape), second = output(half_shape);
  const std::size_t half =
      static_cast<std::size_t>(half_shape[1] * half_shape[2] * half_shape[3]) * sizeof(float);
  const auto rows = static_cast<std::size_t>(x.dim(0));
  if (half && rows) {
    const char* in = reinterpret_cast<const char*>(x.data());
    PETRA_CUDA_CHECK(
        cudaMemcpy2DAsync(first.data(), half, in, 2 * half, half, rows, cudaMemcpyDeviceToDevice, stream()));
    PETRA_CUDA_CHECK(cudaMemcpy2DAsync(second.data(), half, in + half, 2 * half, half, rows,
                                       cudaMemcpyDeviceToDevice, stream()));
  }
  return {std::move(first), std::move(second)};
}

tensor cuda_backend::concat_channels(const tensor& a, const tensor& b) {
  const char* op = "concat_channels";
  require(op, "a", a, 4, "(N, C, H, W)");
  require(op, "b", b, 4, "(N, C, H, W)");
  cuda::require_same_shape(op, "a", a, "b", b);
  enter();
  tensor y = output({a.dim(0), 2 * a.dim(1), a.dim(2), a.dim(3)});
  const std::size_t half = static_cast<std::size_t>(a.dim(1) * a.dim(2) * a.dim(3)) * sizeof(float);
  const auto rows = static_cast<std::size_t>(a.dim(0));
  if (half && rows) {
    char* out = reinterpret_cast<char*>(y.data());
    PETRA_CUDA_CHECK(
        cudaMemcpy2DAsync(out, 2 * half, a.data(), half, half, rows, cudaMemcpyDeviceToDevice, stream()));
    PETRA_CUDA_CHECK(cudaMemcpy2DAsync(out + half, 2 * half, b.data(), half, half, rows,
                                       cudaMemcpyDeviceToDevice, stream()));
  }
  return y;
}

}  // namespace petra
