// The sim backend's pointwise, pooling, channel, loss and optimizer ops, queued on the worker as
// in sim_ops.cpp; the loss's scalars wait for the stream.
#include <memory>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_device.hpp"
#include "compute/sim/sim_storage.hpp"

namespace petra {

namespace {

using sim::host_view;
using sim::install;

}  // namespace

// --- pointwise --------------------------------------------------------------------------------

tensor sim_backend::relu_forward_impl(const tensor& x) {
  tensor y = output(x.shape());
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.relu_forward(host_view(x))); });
  return y;
}

tensor sim_backend::relu_backward_impl(const tensor& y, const tensor& dy) {
  tensor dx = output(y.shape());
  enqueue([y, dy, dx](cpu_backend& cpu) { install(dx, cpu.relu_backward(host_view(y), host_view(dy))); });
  return dx;
}

tensor sim_backend::add_impl(const tensor& a, const tensor& b) {
  tensor sum = output(a.shape());
  enqueue([a, b, sum](cpu_backend& cpu) { install(sum, cpu.add(host_view(a), host_view(b))); });
  return sum;
}

tensor sim_backend::sub_impl(const tensor& a, const tensor& b) {
  tensor difference = output(a.shape());
  enqueue([a, b, difference](cpu_backend& cpu) { install(difference, cpu.sub(host_view(a), host_view(b))); });
  return difference;
}

void sim_backend::add_inplace_impl(tensor& a, const tensor& b) {
  enqueue([a, b](cpu_backend& cpu) {
    tensor ha = host_view(a);
    cpu.add_inplace(ha, host_view(b));
  });
}

// --- pooling ----------------------------------------------------------------------------------

tensor sim_backend::max_pool2x2_forward_impl(const tensor& x) {
  tensor y = output({x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2});
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.max_pool2x2_forward(host_view(x))); });
  return y;
}

tensor sim_backend::max_pool2x2_backward_impl(const tensor& x, const tensor& dy) {
  tensor dx = output(x.shape());
  enqueue(
      [x, dy, dx](cpu_backend& cpu) { install(dx, cpu.max_pool2x2_backward(host_view(x), host_view(dy))); });
  return dx;
}

tensor sim_backend::max_pool2x2_jvp_impl(const tensor& x, const tensor& x_dot) {
  tensor y_dot = output({x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2});
  enqueue([x, x_dot, y_dot](cpu_backend& cpu) {
    install(y_dot, cpu.max_pool2x2_jvp(host_view(x), host_view(x_dot)));
  });
  return y_dot;
}

tensor sim_backend::global_avg_pool_forward_impl(const tensor& x) {
  tensor y = output({x.dim(0), x.dim(1)});
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.global_avg_pool_forward(host_view(x))); });
  return y;
}

tensor sim_backend::global_avg_pool_backward_impl(const tensor& dy, const shape_t& x_shape) {
  tensor dx = output(x_shape);
  enqueue([dy, x_shape, dx](cpu_backend& cpu) {
    install(dx, cpu.global_avg_pool_backward(host_view(dy), x_shape));
  });
  return dx;
}

// --- channels ---------------------------------------------------------------------------------

std::pair<tensor, tensor> sim_backend::split_channels_impl(const tensor& x) {
  const shape_t half{x.dim(0), x.dim(1) / 2, x.dim(2), x.dim(3)};
  tensor first = output(half), second = output(half);
  enqueue([x, first, second](cpu_backend& cpu) {
    auto [a, b] = cpu.split_channels(host_view(x));
    install(first, a);
    install(second, b);
  });
  return {first, second};
}

tensor sim_backend::concat_channels_impl(const tensor& a, const tensor& b) {
  tensor y = output({a.dim(0), 2 * a.dim(1), a.dim(2), a.dim(3)});
  enqueue([a, b, y](cpu_backend& cpu) { install(y, cpu.concat_channels(host_view(a), host_view(b))); });
  return y;
}

// --- loss: its scalars wait for the stream ----------------------------------------------------

float sim_backend::softmax_cross_entropy_impl(const tensor& logits, const std::vector<int32_t>& labels,
                                              tensor* dlogits, int64_t* correct) {
  const tensor gradient = dlogits ? output(logits.shape()) : tensor{};
  struct scalars {
    float loss = 0;
    int64_t correct = 0;
  };
  auto result = std::make_shared<scalars>();
  const uint64_t done = enqueue([logits, labels, gradient, result](cpu_backend& cpu) {
    tensor host_gradient;
    result->loss = cpu.softmax_cross_entropy(host_view(logits), labels,
                                             gradient.defined() ? &host_gradient : nullptr, &result->correct);
    if (gradient.defined()) install(gradient, host_gradient);
  });
  device_->wait(*stream_, done);
  if (dlogits) *dlogits = gradient;
  if (correct) *correct = result->correct;
  return result->loss;
}

// --- optimizer --------------------------------------------------------------------------------

void sim_backend::sgd_update_impl(tensor& w, const tensor& grad, tensor& momentum_buffer,
                                  const sgd_update_params& p) {
  enqueue([w, grad, momentum_buffer, p](cpu_backend& cpu) {
    tensor hw = host_view(w), hm = host_view(momentum_buffer);
    cpu.sgd_update(hw, host_view(grad), hm, p);
  });
}

void sim_backend::adamw_update_impl(tensor& w, const tensor& grad, tensor& m, tensor& v,
                                    const adamw_update_params& p) {
  enqueue([w, grad, m, v, p](cpu_backend& cpu) {
    tensor hw = host_view(w), hm = host_view(m), hv = host_view(v);
    cpu.adamw_update(hw, host_view(grad), hm, hv, p);
  });
}

}  // namespace petra
