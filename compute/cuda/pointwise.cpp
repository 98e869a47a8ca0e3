// Elementwise ops on the GPU: ReLU forward/backward, add, sub, add_inplace (kernels.cu).
#include "compute/cuda/cuda_backend_impl.hpp"
#include "compute/cuda/kernels.hpp"

namespace petra {

tensor cuda_backend::relu_forward_impl(const tensor& x) {
  enter();
  tensor y = output(x.shape());
  cuda::kernels::relu_forward(x.data(), y.data(), x.numel(), stream());
  return y;
}

tensor cuda_backend::relu_backward_impl(const tensor& y, const tensor& dy) {
  enter();
  tensor dx = output(y.shape());
  cuda::kernels::relu_backward(y.data(), dy.data(), dx.data(), y.numel(), stream());
  return dx;
}

tensor cuda_backend::add_impl(const tensor& a, const tensor& b) {
  enter();
  tensor sum = output(a.shape());
  cuda::kernels::add(a.data(), b.data(), sum.data(), a.numel(), stream());
  return sum;
}

tensor cuda_backend::sub_impl(const tensor& a, const tensor& b) {
  enter();
  tensor difference = output(a.shape());
  cuda::kernels::sub(a.data(), b.data(), difference.data(), a.numel(), stream());
  return difference;
}

void cuda_backend::add_inplace_impl(tensor& a, const tensor& b) {
  enter();
  cuda::kernels::add(a.data(), b.data(), a.data(), a.numel(), stream());
}

}  // namespace petra
