// The sim backend's convolution, batch-norm and linear ops: check what the output's shape needs,
// allocate the output, queue the CPU kernel on the worker (which installs its result), return.
// The CPU op checks the rest when it runs; a failure there fails the stream.
#include "compute/cpu/checks.hpp"
#include "compute/cpu/cpu_backend.hpp"
#include "compute/op_checks.hpp"
#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_storage.hpp"

namespace petra {

namespace {

using cpu::fail;
using cpu::require_same_shape;
using sim::host_view;
using sim::install;

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
  require_same_shape(op, "dy", dy, "x", x);
  tensor dx = output(x.shape());
  enqueue([x, gamma, saved, dy, dgamma, dbeta, dx](cpu_backend& cpu) {
    tensor hdgamma = host_view(dgamma), hdbeta = host_view(dbeta);
    install(dx, cpu.batch_norm_backward(host_view(x), host_view(gamma),
                                        {host_view(saved.mean), host_view(saved.inv_std)}, host_view(dy),
                                        hdgamma, hdbeta));
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

}  // namespace petra
