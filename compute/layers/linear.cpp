// Linear layer.
#include "compute/layers/linear.hpp"

#include "compute/init.hpp"
#include "compute/layers/make_parameter.hpp"

namespace petra {

linear_layer::linear_layer(backend& be, const std::string& name, int in_features, int out_features,
                           uint64_t seed)
    : be_(be) {
  weight_ =
      make_parameter(be, name + ".weight",
                     uniform_fan_in({out_features, in_features}, in_features, seed, name + ".weight"), true);
  bias_ = make_parameter(be, name + ".bias",
                         uniform_fan_in({out_features}, in_features, seed, name + ".bias"), false);
}

tensor linear_layer::forward(const tensor& x, tape* t) {
  if (t) t->push(x);
  return be_.linear_forward(x, weight_.value, bias_.value);
}

tensor linear_layer::backward(tape& t, const tensor& dy) {
  const tensor x = t.pop();
  be_.linear_backward_weight(x, dy, weight_.grad, bias_.grad);
  return be_.linear_backward_data(dy, weight_.value);
}

}  // namespace petra
