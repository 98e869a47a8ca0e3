// Elementwise ops on the GPU: ReLU forward/backward, add, sub, add_inplace (kernels.cu).
#include "compute/cuda/checks.hpp"
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

tensor cuda_backend::relu_forward(const tensor& x) {
  require("relu_forward", "x", x, x.rank(), "on this GPU");
  enter();
  tensor y = output(x.shape());
  cuda::kernels::relu_forward(x.data(), y.data(), x.numel(), stream());
  return y;
}

tensor cuda_backend::relu_backward(const tensor& y, const tensor& dy) {
  const char* op = "relu_backward";
  require(op, "y", y, y.rank(), "on this GPU");
  require(op, "dy", dy, dy.rank(), "on this GPU");
  cuda::require_same_shape(op, "y", y, "dy", dy);
  enter();
  tensor dx = output(y.shape());
  cuda::kernels::relu_backward(y.data(), dy.data(), dx.data(), y.numel(), stream());
  return dx;
}

tensor cuda_backend::add(const tensor& a, const tensor& b) {
  require("add", "a", a, a.rank(), "on this GPU");
  require("add", "b", b, b.rank(), "on this GPU");
  cuda::require_same_shape("add", "a", a, "b", b);
  enter();
  tensor sum = output(a.shape());
  cuda::kernels::add(a.data(), b.data(), sum.data(), a.numel(), stream());
  return sum;
}

tensor cuda_backend::sub(const tensor& a, const tensor& b) {
  require("sub", "a", a, a.rank(), "on this GPU");
  require("sub", "b", b, b.rank(), "on this GPU");
  cuda::require_same_shape("sub", "a", a, "b", b);
  enter();
  tensor difference = output(a.shape());
  cuda::kernels::sub(a.data(), b.data(), difference.data(), a.numel(), stream());
  return difference;
}

void cuda_backend::add_inplace(tensor& a, const tensor& b) {
  require("add_inplace", "a", a, a.rank(), "on this GPU");
  require("add_inplace", "b", b, b.rank(), "on this GPU");
  cuda::require_same_shape("add_inplace", "a", a, "b", b);
  enter();
  cuda::kernels::add(a.data(), b.data(), a.data(), a.numel(), stream());
}

}  // namespace petra
