// The sim backend's compute ops: check what the output's shape needs, allocate the output, queue
// the CPU kernel on the worker (which installs its result), return. The CPU op checks the rest
// when it runs; a failure there fails the stream.
#include <memory>

#include "compute/cpu/cpu_backend.hpp"
#include "compute/op_checks.hpp"
#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_storage.hpp"

namespace petra {

namespace {

using sim::host_view;

[[noreturn]] void fail(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

void same_shape(const char* op, const char* name_a, const tensor& a, const char* name_b, const tensor& b) {
  if (a.shape() != b.shape())
    fail(op, std::string(name_a) + " " + a.shape_str() + " and " + name_b + " " + b.shape_str() +
                 " must have the same shape");
}

void install(const tensor& into, const tensor& result) { sim::storage_of(into).install(result); }

}  // namespace

// --- convolution ------------------------------------------------------------------------------

tensor sim_backend::conv2d_forward(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  const char* op = "conv2d_forward";
  require(op, "x", x, 4);
  require(op, "w", w, 4);
  require_optional(op, "b", b, 1);
  check_conv2d_shapes(op, x.shape(), w.shape(), p);
  const int64_t padded_h = x.dim(2) + 2 * p.padding, padded_w = x.dim(3) + 2 * p.padding;
  if (padded_h < w.dim(2) || padded_w < w.dim(3))
    fail(op, "x " + x.shape_str() + " padded by " + std::to_string(p.padding) +
                 " is smaller than the kernel of w " + w.shape_str() +
                 ": use more padding or a smaller kernel");
  tensor y = output(
      {x.dim(0), w.dim(0), (padded_h - w.dim(2)) / p.stride + 1, (padded_w - w.dim(3)) / p.stride + 1});
  enqueue([x, w, b, p, y](cpu_backend& cpu) {
    install(y, cpu.conv2d_forward(host_view(x), host_view(w), host_view(b), p));
  });
  return y;
}

tensor sim_backend::conv2d_backward_data(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                         conv2d_params p) {
  const char* op = "conv2d_backward_data";
  require(op, "dy", dy, 4);
  require(op, "w", w, 4);
  check_conv2d_shapes(op, x_shape, w.shape(), p);
  tensor dx = output(x_shape);
  enqueue([dy, w, x_shape, p, dx](cpu_backend& cpu) {
    install(dx, cpu.conv2d_backward_data(host_view(dy), host_view(w), x_shape, p));
  });
  return dx;
}

void sim_backend::conv2d_backward_filter(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                         tensor& db) {
  const char* op = "conv2d_backward_filter";
  require(op, "x", x, 4);
  require(op, "dy", dy, 4);
  require(op, "dw", dw, 4);
  require_optional(op, "db", db, 1);
  enqueue([x, dy, p, dw, db](cpu_backend& cpu) {
    tensor hdw = host_view(dw), hdb = host_view(db);
    cpu.conv2d_backward_filter(host_view(x), host_view(dy), p, hdw, hdb);
  });
}

// --- batch norm -------------------------------------------------------------------------------

tensor sim_backend::batch_norm_forward_train(const tensor& x, const tensor& gamma, const tensor& beta,
                                             float eps, batch_norm_saved& saved) {
  const char* op = "batch_norm_forward_train";
  require(op, "x", x, 4);
  require(op, "gamma", gamma, 1);
  require(op, "beta", beta, 1);
  tensor y = output(x.shape());
  batch_norm_saved out{output({x.dim(1)}), output({x.dim(1)})};
  enqueue([x, gamma, beta, eps, y, out](cpu_backend& cpu) {
    batch_norm_saved s;
    install(y, cpu.batch_norm_forward_train(host_view(x), host_view(gamma), host_view(beta), eps, s));
    install(out.mean, s.mean);
    install(out.inv_std, s.inv_std);
  });
  saved = out;
  return y;
}

void sim_backend::batch_norm_update_running(const batch_norm_saved& saved, int64_t count_per_channel,
                                            float eps, float momentum, tensor& running_mean,
                                            tensor& running_var) {
  const char* op = "batch_norm_update_running";
  require(op, "saved.mean", saved.mean, 1);
  require(op, "saved.inv_std", saved.inv_std, 1);
  require(op, "running_mean", running_mean, 1);
  require(op, "running_var", running_var, 1);
  enqueue([saved, count_per_channel, eps, momentum, running_mean, running_var](cpu_backend& cpu) {
    tensor mean = host_view(running_mean), var = host_view(running_var);
    cpu.batch_norm_update_running({host_view(saved.mean), host_view(saved.inv_std)}, count_per_channel, eps,
                                  momentum, mean, var);
  });
}

tensor sim_backend::batch_norm_forward_eval(const tensor& x, const tensor& gamma, const tensor& beta,
                                            const tensor& running_mean, const tensor& running_var,
                                            float eps) {
  const char* op = "batch_norm_forward_eval";
  require(op, "x", x, 4);
  require(op, "gamma", gamma, 1);
  require(op, "beta", beta, 1);
  require(op, "running_mean", running_mean, 1);
  require(op, "running_var", running_var, 1);
  tensor y = output(x.shape());
  enqueue([x, gamma, beta, running_mean, running_var, eps, y](cpu_backend& cpu) {
    install(y, cpu.batch_norm_forward_eval(host_view(x), host_view(gamma), host_view(beta),
                                           host_view(running_mean), host_view(running_var), eps));
  });
  return y;
}

tensor sim_backend::batch_norm_backward(const tensor& x, const tensor& gamma, const batch_norm_saved& saved,
                                        const tensor& dy, tensor& dgamma, tensor& dbeta) {
  const char* op = "batch_norm_backward";
  require(op, "x", x, 4);
  require(op, "gamma", gamma, 1);
  require(op, "saved.mean", saved.mean, 1);
  require(op, "saved.inv_std", saved.inv_std, 1);
  require(op, "dy", dy, 4);
  require(op, "dgamma", dgamma, 1);
  require(op, "dbeta", dbeta, 1);
  same_shape(op, "dy", dy, "x", x);
  tensor dx = output(x.shape());
  enqueue([x, gamma, saved, dy, dgamma, dbeta, dx](cpu_backend& cpu) {
    tensor hdgamma = host_view(dgamma), hdbeta = host_view(dbeta);
    install(dx, cpu.batch_norm_backward(host_view(x), host_view(gamma),
                                        {host_view(saved.mean), host_view(saved.inv_std)}, host_view(dy),
                                        hdgamma, hdbeta));
  });
  return dx;
}

// --- pointwise --------------------------------------------------------------------------------

tensor sim_backend::relu_forward(const tensor& x) {
  require("relu_forward", "x", x);
  tensor y = output(x.shape());
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.relu_forward(host_view(x))); });
  return y;
}

tensor sim_backend::relu_backward(const tensor& y, const tensor& dy) {
  const char* op = "relu_backward";
  require(op, "y", y);
  require(op, "dy", dy);
  same_shape(op, "y", y, "dy", dy);
  tensor dx = output(y.shape());
  enqueue([y, dy, dx](cpu_backend& cpu) { install(dx, cpu.relu_backward(host_view(y), host_view(dy))); });
  return dx;
}

tensor sim_backend::add(const tensor& a, const tensor& b) {
  require("add", "a", a);
  require("add", "b", b);
  same_shape("add", "a", a, "b", b);
  tensor sum = output(a.shape());
  enqueue([a, b, sum](cpu_backend& cpu) { install(sum, cpu.add(host_view(a), host_view(b))); });
  return sum;
}

tensor sim_backend::sub(const tensor& a, const tensor& b) {
  require("sub", "a", a);
  require("sub", "b", b);
  same_shape("sub", "a", a, "b", b);
  tensor difference = output(a.shape());
  enqueue([a, b, difference](cpu_backend& cpu) { install(difference, cpu.sub(host_view(a), host_view(b))); });
  return difference;
}

void sim_backend::add_inplace(tensor& a, const tensor& b) {
  require("add_inplace", "a", a);
  require("add_inplace", "b", b);
  same_shape("add_inplace", "a", a, "b", b);
  enqueue([a, b](cpu_backend& cpu) {
    tensor ha = host_view(a);
    cpu.add_inplace(ha, host_view(b));
  });
}

// --- pooling ----------------------------------------------------------------------------------

tensor sim_backend::max_pool2x2_forward(const tensor& x) {
  require("max_pool2x2_forward", "x", x, 4);
  if (x.dim(2) % 2 != 0 || x.dim(3) % 2 != 0)
    fail("max_pool2x2_forward",
         "x " + x.shape_str() + " has an odd height or width: a 2×2 stride-2 pool needs both even");
  tensor y = output({x.dim(0), x.dim(1), x.dim(2) / 2, x.dim(3) / 2});
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.max_pool2x2_forward(host_view(x))); });
  return y;
}

tensor sim_backend::max_pool2x2_backward(const tensor& x, const tensor& dy) {
  require("max_pool2x2_backward", "x", x, 4);
  require("max_pool2x2_backward", "dy", dy, 4);
  tensor dx = output(x.shape());
  enqueue(
      [x, dy, dx](cpu_backend& cpu) { install(dx, cpu.max_pool2x2_backward(host_view(x), host_view(dy))); });
  return dx;
}

tensor sim_backend::global_avg_pool_forward(const tensor& x) {
  require("global_avg_pool_forward", "x", x, 4);
  tensor y = output({x.dim(0), x.dim(1)});
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.global_avg_pool_forward(host_view(x))); });
  return y;
}

tensor sim_backend::global_avg_pool_backward(const tensor& dy, const shape_t& x_shape) {
  require("global_avg_pool_backward", "dy", dy, 2);
  if (x_shape.size() != 4 || dy.shape() != shape_t{x_shape[0], x_shape[1]})
    fail("global_avg_pool_backward", "dy " + dy.shape_str() + " does not match x_shape " +
                                         to_string(x_shape) + ": expected (N, C) of (N, C, H, W)");
  tensor dx = output(x_shape);
  enqueue([dy, x_shape, dx](cpu_backend& cpu) {
    install(dx, cpu.global_avg_pool_backward(host_view(dy), x_shape));
  });
  return dx;
}

// --- linear -----------------------------------------------------------------------------------

tensor sim_backend::linear_forward(const tensor& x, const tensor& w, const tensor& b) {
  const char* op = "linear_forward";
  require(op, "x", x, 2);
  require(op, "w", w, 2);
  require_optional(op, "b", b, 1);
  tensor y = output({x.dim(0), w.dim(0)});
  enqueue([x, w, b, y](cpu_backend& cpu) {
    install(y, cpu.linear_forward(host_view(x), host_view(w), host_view(b)));
  });
  return y;
}

tensor sim_backend::linear_backward_data(const tensor& dy, const tensor& w) {
  const char* op = "linear_backward_data";
  require(op, "dy", dy, 2);
  require(op, "w", w, 2);
  tensor dx = output({dy.dim(0), w.dim(1)});
  enqueue(
      [dy, w, dx](cpu_backend& cpu) { install(dx, cpu.linear_backward_data(host_view(dy), host_view(w))); });
  return dx;
}

void sim_backend::linear_backward_weight(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  const char* op = "linear_backward_weight";
  require(op, "x", x, 2);
  require(op, "dy", dy, 2);
  require(op, "dw", dw, 2);
  require_optional(op, "db", db, 1);
  check_linear_weight_grad_shapes(op, x, dy, dw);
  enqueue([x, dy, dw, db](cpu_backend& cpu) {
    tensor hdw = host_view(dw), hdb = host_view(db);
    cpu.linear_backward_weight(host_view(x), host_view(dy), hdw, hdb);
  });
}

// --- channels ---------------------------------------------------------------------------------

std::pair<tensor, tensor> sim_backend::split_channels(const tensor& x) {
  const char* op = "split_channels";
  require(op, "x", x, 4);
  if (x.dim(1) % 2 != 0)
    fail(op, "x " + x.shape_str() + " has " + std::to_string(x.dim(1)) +
                 " channels: a split into two halves needs an even number");
  const shape_t half{x.dim(0), x.dim(1) / 2, x.dim(2), x.dim(3)};
  tensor first = output(half), second = output(half);
  enqueue([x, first, second](cpu_backend& cpu) {
    auto [a, b] = cpu.split_channels(host_view(x));
    install(first, a);
    install(second, b);
  });
  return {first, second};
}

tensor sim_backend::concat_channels(const tensor& a, const tensor& b) {
  const char* op = "concat_channels";
  require(op, "a", a, 4);
  require(op, "b", b, 4);
  same_shape(op, "a", a, "b", b);
  tensor y = output({a.dim(0), 2 * a.dim(1), a.dim(2), a.dim(3)});
  enqueue([a, b, y](cpu_backend& cpu) { install(y, cpu.concat_channels(host_view(a), host_view(b))); });
  return y;
}

// --- loss: its scalars wait for the stream ----------------------------------------------------

float sim_backend::softmax_cross_entropy(const tensor& logits, const std::vector<int32_t>& labels,
                                         tensor* dlogits, int64_t* correct) {
  const char* op = "softmax_cross_entropy";
  require(op, "logits", logits, 2);
  check_cross_entropy_labels(op, logits, labels);
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

void sim_backend::sgd_update(tensor& w, const tensor& grad, tensor& momentum_buffer,
                             const sgd_update_params& p) {
  const char* op = "sgd_update";
  require(op, "w", w);
  require(op, "grad", grad);
  require_optional(op, "momentum_buffer", momentum_buffer);
  same_shape(op, "grad", grad, "w", w);
  enqueue([w, grad, momentum_buffer, p](cpu_backend& cpu) {
    tensor hw = host_view(w), hm = host_view(momentum_buffer);
    cpu.sgd_update(hw, host_view(grad), hm, p);
  });
}

}  // namespace petra
