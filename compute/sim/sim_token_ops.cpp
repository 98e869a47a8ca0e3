// The sim backend's token ops (layer norm, GELU, softmax, batched matmul, token mean, scale,
// transpose12), queued on the worker as in sim_ops.cpp: the CPU kernels, so a sim device gives the
// CPU's bits.
#include "compute/cpu/cpu_backend.hpp"
#include "compute/sim/sim_backend.hpp"
#include "compute/sim/sim_storage.hpp"

namespace petra {

namespace {

using sim::host_view;
using sim::install;

}  // namespace

tensor sim_backend::layer_norm_forward_impl(const tensor& x, const tensor& gamma, const tensor& beta,
                                            float eps, layer_norm_saved& saved) {
  tensor y = output(x.shape());
  layer_norm_saved out{output({x.dim(0), x.dim(1)}), output({x.dim(0), x.dim(1)})};
  enqueue([x, gamma, beta, eps, y, out](cpu_backend& cpu) {
    layer_norm_saved s;
    install(y, cpu.layer_norm_forward(host_view(x), host_view(gamma), host_view(beta), eps, s));
    install(out.mean, s.mean);
    install(out.inv_std, s.inv_std);
  });
  saved = out;
  return y;
}

tensor sim_backend::layer_norm_backward_impl(const tensor& x, const tensor& gamma,
                                             const layer_norm_saved& saved, const tensor& dy, tensor& dgamma,
                                             tensor& dbeta) {
  tensor dx = output(x.shape());
  enqueue([x, gamma, saved, dy, dgamma, dbeta, dx](cpu_backend& cpu) {
    tensor hdgamma = host_view(dgamma), hdbeta = host_view(dbeta);
    install(dx, cpu.layer_norm_backward(host_view(x), host_view(gamma),
                                        {host_view(saved.mean), host_view(saved.inv_std)}, host_view(dy),
                                        hdgamma, hdbeta));
  });
  return dx;
}

tensor sim_backend::layer_norm_jvp_impl(const tensor& x, const tensor& gamma, const layer_norm_saved& saved,
                                        const tensor& x_dot) {
  tensor y_dot = output(x.shape());
  enqueue([x, gamma, saved, x_dot, y_dot](cpu_backend& cpu) {
    install(y_dot, cpu.layer_norm_jvp(host_view(x), host_view(gamma),
                                      {host_view(saved.mean), host_view(saved.inv_std)}, host_view(x_dot)));
  });
  return y_dot;
}

tensor sim_backend::gelu_forward_impl(const tensor& x) {
  tensor y = output(x.shape());
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.gelu_forward(host_view(x))); });
  return y;
}

tensor sim_backend::gelu_backward_impl(const tensor& x, const tensor& dy) {
  tensor dx = output(x.shape());
  enqueue([x, dy, dx](cpu_backend& cpu) { install(dx, cpu.gelu_backward(host_view(x), host_view(dy))); });
  return dx;
}

tensor sim_backend::softmax_forward_impl(const tensor& x) {
  tensor y = output(x.shape());
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.softmax_forward(host_view(x))); });
  return y;
}

tensor sim_backend::softmax_backward_impl(const tensor& y, const tensor& dy) {
  tensor dx = output(y.shape());
  enqueue([y, dy, dx](cpu_backend& cpu) { install(dx, cpu.softmax_backward(host_view(y), host_view(dy))); });
  return dx;
}

tensor sim_backend::batched_matmul_impl(const tensor& a, const tensor& b, bool transpose_a,
                                        bool transpose_b) {
  tensor c = output({a.dim(0), transpose_a ? a.dim(2) : a.dim(1), transpose_b ? b.dim(1) : b.dim(2)});
  enqueue([a, b, transpose_a, transpose_b, c](cpu_backend& cpu) {
    install(c, cpu.batched_matmul(host_view(a), host_view(b), transpose_a, transpose_b));
  });
  return c;
}

std::pair<tensor, tensor> sim_backend::batched_matmul_backward_impl(const tensor& a, const tensor& b,
                                                                    const tensor& dc, bool transpose_a,
                                                                    bool transpose_b) {
  tensor da = output(a.shape()), db = output(b.shape());
  enqueue([a, b, dc, transpose_a, transpose_b, da, db](cpu_backend& cpu) {
    auto [ga, gb] =
        cpu.batched_matmul_backward(host_view(a), host_view(b), host_view(dc), transpose_a, transpose_b);
    install(da, ga);
    install(db, gb);
  });
  return {da, db};
}

tensor sim_backend::token_mean_forward_impl(const tensor& x) {
  tensor y = output({x.dim(0), x.dim(2)});
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.token_mean_forward(host_view(x))); });
  return y;
}

tensor sim_backend::token_mean_backward_impl(const tensor& dy, const shape_t& x_shape) {
  tensor dx = output(x_shape);
  enqueue(
      [dy, x_shape, dx](cpu_backend& cpu) { install(dx, cpu.token_mean_backward(host_view(dy), x_shape)); });
  return dx;
}

tensor sim_backend::scale_impl(const tensor& x, float alpha) {
  tensor y = output(x.shape());
  enqueue([x, alpha, y](cpu_backend& cpu) { install(y, cpu.scale(host_view(x), alpha)); });
  return y;
}

tensor sim_backend::transpose12_impl(const tensor& x) {
  tensor y = output({x.dim(0), x.dim(2), x.dim(1), x.dim(3)});
  enqueue([x, y](cpu_backend& cpu) { install(y, cpu.transpose12(host_view(x))); });
  return y;
}

}  // namespace petra
