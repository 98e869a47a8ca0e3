// The sim backend's convolution, batch-norm and linear ops (their arguments checked by backend):
// allocate the output, queue the CPU kernel on the worker (which installs its result), return.
// What only the kernel sees (a value) fails the stream when it runs.
#include "compute/cpu/cpu_backend.hpp"
#include "compute/op_checks.hpp"
#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_storage.hpp"

namespace petra {

namespace {

using sim::host_view;
using sim::install;

}  // namespace

// --- convolution ------------------------------------------------------------------------------

tensor sim_backend::conv2d_forward_impl(const tensor& x, const tensor& w, const tensor& b, conv2d_params p) {
  tensor y = output(conv2d_output_shape(x.shape(), w.shape(), p));
  enqueue([x, w, b, p, y](cpu_backend& cpu) {
    install(y, cpu.conv2d_forward(host_view(x), host_view(w), host_view(b), p));
  });
  return y;
}

tensor sim_backend::conv2d_backward_data_impl(const tensor& dy, const tensor& w, const shape_t& x_shape,
                                              conv2d_params p) {
  tensor dx = output(x_shape);
  enqueue([dy, w, x_shape, p, dx](cpu_backend& cpu) {
    install(dx, cpu.conv2d_backward_data(host_view(dy), host_view(w), x_shape, p));
  });
  return dx;
}

void sim_backend::conv2d_backward_filter_impl(const tensor& x, const tensor& dy, conv2d_params p, tensor& dw,
                                              tensor& db) {
  enqueue([x, dy, p, dw, db](cpu_backend& cpu) {
    tensor hdw = host_view(dw), hdb = host_view(db);
    cpu.conv2d_backward_filter(host_view(x), host_view(dy), p, hdw, hdb);
  });
}

// --- batch norm -------------------------------------------------------------------------------

tensor sim_backend::batch_norm_forward_train_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                                  float eps, batch_norm_saved& saved) {
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

void sim_backend::batch_norm_update_running_impl(const batch_norm_saved& saved, int64_t count_per_channel,
                                                 float eps, float momentum, tensor& running_mean,
                                                 tensor& running_var) {
  enqueue([saved, count_per_channel, eps, momentum, running_mean, running_var](cpu_backend& cpu) {
    tensor mean = host_view(running_mean), var = host_view(running_var);
    cpu.batch_norm_update_running({host_view(saved.mean), host_view(saved.inv_std)}, count_per_channel, eps,
                                  momentum, mean, var);
  });
}

tensor sim_backend::batch_norm_forward_eval_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                                 const tensor& running_mean, const tensor& running_var,
                                                 float eps) {
  tensor y = output(x.shape());
  enqueue([x, gamma, beta, running_mean, running_var, eps, y](cpu_backend& cpu) {
    install(y, cpu.batch_norm_forward_eval(host_view(x), host_view(gamma), host_view(beta),
                                           host_view(running_mean), host_view(running_var), eps));
  });
  return y;
}

tensor sim_backend::batch_norm_backward_impl(const tensor& x, const tensor& gamma,
                                             const batch_norm_saved& saved, const tensor& dy, tensor& dgamma,
                                             tensor& dbeta) {
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

tensor sim_backend::linear_forward_impl(const tensor& x, const tensor& w, const tensor& b) {
  tensor y = output({x.dim(0), w.dim(0)});
  enqueue([x, w, b, y](cpu_backend& cpu) {
    install(y, cpu.linear_forward(host_view(x), host_view(w), host_view(b)));
  });
  return y;
}

tensor sim_backend::linear_backward_data_impl(const tensor& dy, const tensor& w) {
  tensor dx = output({dy.dim(0), w.dim(1)});
  enqueue(
      [dy, w, dx](cpu_backend& cpu) { install(dx, cpu.linear_backward_data(host_view(dy), host_view(w))); });
  return dx;
}

void sim_backend::linear_backward_weight_impl(const tensor& x, const tensor& dy, tensor& dw, tensor& db) {
  enqueue([x, dy, dw, db](cpu_backend& cpu) {
    tensor hdw = host_view(dw), hdb = host_view(db);
    cpu.linear_backward_weight(host_view(x), host_view(dy), hdw, hdb);
  });
}

}  // namespace petra
