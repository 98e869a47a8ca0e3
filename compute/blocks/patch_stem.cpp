// Patch stem. The position embedding is added to every sample: the forward tiles it over the batch;
// its gradient, Σ_n dy[n], is the bias gradient of linear_backward_weight on the (N, T·d) view (a
// column sum, in fp32 in every precision), with a zero input so the weight part adds nothing.
#include "compute/blocks/patch_stem.hpp"

#include <stdexcept>

#include "compute/forward/op_jvps.hpp"
#include "compute/forward/stacked.hpp"
#include "compute/init.hpp"
#include "compute/layers/make_parameter.hpp"

namespace petra {

patch_stem_block::patch_stem_block(backend& be, const std::string& name, int in_channels, int height,
                                   int width, int patch, int features, uint64_t seed)
    : block(name),
      be_(be),
      in_channels_(in_channels),
      height_(height),
      width_(width),
      grid_h_(patch > 0 ? height / patch : 0),
      grid_w_(patch > 0 ? width / patch : 0),
      features_(features),
      patch_(be, name + ".patch", in_channels, features, patch, patch, 0, seed) {
  if (patch <= 0 || height % patch || width % patch)
    throw std::invalid_argument(name + ": image " + std::to_string(height) + "×" + std::to_string(width) +
                                " is not divisible into patches of " + std::to_string(patch) + "×" +
                                std::to_string(patch));
  const int64_t tokens = static_cast<int64_t>(grid_h_) * grid_w_;
  position_ = make_parameter(be, name + ".position",
                             truncated_normal({tokens, features}, 0.02f, seed, name + ".position"), false);
}

void patch_stem_block::expect_images(const activation& x) const {
  expect_streams(*this, x, false, "input");
  const shape_t& s = x.x1.shape();
  if (s.size() != 4 || s[1] != in_channels_ || s[2] != height_ || s[3] != width_)
    throw std::invalid_argument(name() + " (stem): input " + x.x1.shape_str() + " must be images (N, " +
                                std::to_string(in_channels_) + ", " + std::to_string(height_) + ", " +
                                std::to_string(width_) + ")");
}

tensor patch_stem_block::to_tokens(const tensor& map) const {
  const int64_t n = map.dim(0), tokens = static_cast<int64_t>(grid_h_) * grid_w_;
  return be_.transpose12(map.reshaped({n, features_, tokens, 1})).reshaped({n, tokens, features_});
}

tensor patch_stem_block::to_map(const tensor& tokens) const {
  const int64_t n = tokens.dim(0), count = tokens.dim(1);
  return be_.transpose12(tokens.reshaped({n, count, features_, 1}))
      .reshaped({n, features_, grid_h_, grid_w_});
}

activation patch_stem_block::duplicated(const tensor& tokens) {
  tensor second = be_.empty(tokens.shape());
  be_.copy(tokens, second);
  return {tokens, second};
}

activation patch_stem_block::forward(const activation& x, pass, tape* t) {
  expect_images(x);
  const tensor tokens = to_tokens(patch_.forward(x.x1, t));
  const int64_t n = tokens.dim(0);
  const tensor position = position_.value.reshaped({1, tokens.dim(1), features_});
  return duplicated(be_.add(tokens, tile_batch(be_, position, n)));
}

activation patch_stem_block::backward(tape& t, const activation& dy) {
  const tensor d = be_.add(dy.x1, dy.x2);  // both streams are the same tokens
  const int64_t n = d.dim(0), flat = d.dim(1) * d.dim(2);
  tensor unused_dw = be_.zeros({flat, 1}), dposition = position_.grad.reshaped({flat});
  be_.linear_backward_weight(be_.zeros({n, 1}), d.reshaped({n, flat}), unused_dw, dposition);
  return {patch_.backward(t, to_map(d), input_grad_), tensor{}};
}

activation_shape patch_stem_block::output_shape(const activation_shape& x) const {
  const shape_t s{x.x1.at(0), static_cast<int64_t>(grid_h_) * grid_w_, features_};
  return {s, s};
}

std::vector<parameter*> patch_stem_block::parameters() {
  std::vector<parameter*> out;
  patch_.collect(out);
  out.push_back(&position_);
  return out;
}

std::pair<activation, activation> patch_stem_block::jvp_impl(const activation& x, const activation& x_dot,
                                                             pass, tape* t,
                                                             const parameter_tangents& theta_dot) {
  expect_images(x);
  const auto [map, map_dot] = patch_.jvp(x.x1, x_dot.x1, t, theta_dot);
  const tensor tokens = to_tokens(map);
  const int64_t n = tokens.dim(0), count = tokens.dim(1);
  const tensor position = position_.value.reshaped({1, count, features_});
  tensor tokens_dot = map_dot.defined() ? to_tokens(map_dot) : tensor{};
  const tensor position_dot = theta_dot.of(position_);
  if (position_dot.defined())  // the same for every sample (add_tangents repeats it over stacked groups)
    tokens_dot =
        add_tangents(be_, tokens_dot, tile_batch(be_, position_dot.reshaped({1, count, features_}), n));
  const activation y = duplicated(be_.add(tokens, tile_batch(be_, position, n)));
  return {y, tokens_dot.defined() ? duplicated(tokens_dot) : activation{}};
}

}  // namespace petra
