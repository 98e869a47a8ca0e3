// BatchNorm2d layer and the taped ReLU.
#include "compute/layers/batch_norm.hpp"

#include "compute/init.hpp"
#include "compute/layers/make_parameter.hpp"

namespace petra {

batch_norm_layer::batch_norm_layer(backend& be, const std::string& name, int channels)
    : be_(be), name_(name) {
  gamma_ = make_parameter(be, name + ".weight", filled({channels}, 1.f), false);
  beta_ = make_parameter(be, name + ".bias", filled({channels}, 0.f), false);
  running_mean_ = be.from_host(filled({channels}, 0.f));
  running_var_ = be.from_host(filled({channels}, 1.f));
}

tensor batch_norm_layer::forward_on(backend& on, const tensor& x, pass mode, tape* t) {
  if (mode != pass::calibrate) calibrated_ = 0;
  if (mode == pass::eval)
    return on.batch_norm_forward_eval(x, gamma_.value, beta_.value, running_mean_, running_var_, eps);
  batch_norm_saved saved;
  tensor y = on.batch_norm_forward_train(x, gamma_.value, beta_.value, eps, saved);
  const int64_t count = x.dim(0) * x.dim(2) * x.dim(3);
  if (mode == pass::train)
    on.batch_norm_update_running(saved, count, eps, momentum, running_mean_, running_var_);
  if (mode == pass::calibrate) {  // a running mean over the calibrate passes: weight 1/(n + 1)
    ++calibrated_;
    on.batch_norm_update_running(saved, count, eps, 1.f / static_cast<float>(calibrated_), running_mean_,
                                 running_var_);
  }
  if (t) {
    t->push(x);
    t->push(saved.mean);
    t->push(saved.inv_std);
  }
  return y;
}

tensor batch_norm_layer::backward(tape& t, const tensor& dy) {
  batch_norm_saved saved;
  saved.inv_std = t.pop();
  saved.mean = t.pop();
  const tensor x = t.pop();
  return be_.batch_norm_backward(x, gamma_.value, saved, dy, gamma_.grad, beta_.grad);
}

void batch_norm_layer::collect_buffers(std::vector<buffer_ref>& out) {
  out.push_back({name_ + ".running_mean", &running_mean_});
  out.push_back({name_ + ".running_var", &running_var_});
}

tensor relu_forward(backend& be, const tensor& x, tape* t) {
  tensor y = be.relu_forward(x);
  if (t) t->push(y);
  return y;
}

tensor relu_backward(backend& be, tape& t, const tensor& dy) { return be.relu_backward(t.pop(), dy); }

}  // namespace petra
