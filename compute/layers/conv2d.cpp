// Conv2d layer.
#include "compute/layers/conv2d.hpp"

#include "compute/init.hpp"
#include "compute/layers/make_parameter.hpp"

namespace petra {

conv2d_layer::conv2d_layer(backend& be, const std::string& name, int in_channels, int out_channels,
                           int kernel, int stride, int padding, uint64_t seed)
    : be_(be), params_{stride, padding} {
  const int64_t fan_in = static_cast<int64_t>(in_channels) * kernel * kernel;
  weight_ = make_parameter(
      be, name + ".weight",
      uniform_fan_in({out_channels, in_channels, kernel, kernel}, fan_in, seed, name + ".weight"), true);
  bias_ =
      make_parameter(be, name + ".bias", uniform_fan_in({out_channels}, fan_in, seed, name + ".bias"), false);
}

tensor conv2d_layer::forward_on(backend& on, const tensor& x, tape* t) {
  if (t) t->push(x);
  return on.conv2d_forward(x, weight_.value, bias_.value, params_);
}

tensor conv2d_layer::backward(tape& t, const tensor& dy, bool need_dx) {
  const tensor x = t.pop();
  be_.conv2d_backward_filter(x, dy, params_, weight_.grad, bias_.grad);
  if (!need_dx) return {};
  return be_.conv2d_backward_data(dy, weight_.value, x.shape(), params_);
}

shape_t conv2d_layer::output_shape(const shape_t& x) const {
  const shape_t& w = weight_.value.shape();
  const int64_t p = (x[2] + 2 * params_.padding - w[2]) / params_.stride + 1;
  const int64_t q = (x[3] + 2 * params_.padding - w[3]) / params_.stride + 1;
  return {x[0], w[0], p, q};
}

}  // namespace petra
