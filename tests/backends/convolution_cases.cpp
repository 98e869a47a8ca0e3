// The table's convolution cases: forward (with and without bias), backward data, and backward
// filter accumulating into non-zero gradients, over the RevNet's kinds of convolution.
#include "tests/backends/op_table.hpp"
#include "tests/backends/parity_measures.hpp"

namespace petra::testing {

namespace {

struct conv_geometry {
  shape_t x, w;
  conv2d_params p;
  bool bias;
};

const std::vector<conv_geometry> geometries = {
    {{4, 3, 8, 8}, {6, 3, 3, 3}, {1, 1}, true},    // CIFAR stem-like
    {{2, 3, 16, 16}, {4, 3, 7, 7}, {2, 3}, true},  // ImageNet stem-like
    {{4, 8, 8, 8}, {8, 8, 3, 3}, {1, 1}, false},   // basic F
    {{4, 8, 8, 8}, {16, 8, 3, 3}, {2, 1}, true},   // downsampling
    {{4, 8, 8, 8}, {16, 8, 1, 1}, {2, 0}, true},   // projection
    {{3, 5, 7, 6}, {4, 5, 3, 2}, {2, 0}, true},    // odd, non-square
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {2, 1}, true},    // odd plane, strided and padded
    {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 0}, false}};  // no padding

std::string describe(const char* ops, const conv_geometry& g) {
  return std::string(ops) + ": x " + to_string(g.x) + " w " + to_string(g.w) + " stride " +
         std::to_string(g.p.stride) + " padding " + std::to_string(g.p.padding);
}

shape_t output_shape(const conv_geometry& g) {
  return {g.x[0], g.w[0], (g.x[2] + 2 * g.p.padding - g.w[2]) / g.p.stride + 1,
          (g.x[3] + 2 * g.p.padding - g.w[3]) / g.p.stride + 1};
}

}  // namespace

std::vector<op_case> convolution_cases() {
  std::vector<op_case> cases;
  std::mt19937 rng(1);
  for (const conv_geometry& g : geometries) {
    const tensor x = random_host(g.x, rng), w = random_host(g.w, rng, 0.3f);
    const tensor b = random_host({g.w[0]}, rng), dy = random_host(output_shape(g), rng);
    const conv2d_params p = g.p;
    cases.push_back({describe("conv2d_forward with and without bias", g),
                     {x, w, b},
                     [p](backend& be, std::vector<tensor>& in) {
                       return op_result{{be.conv2d_forward(in[0], in[1], in[2], p),
                                         be.conv2d_forward(in[0], in[1], tensor{}, p)}};
                     },
                     {parity::tf32},
                     {bf16_rule::products}});
    const shape_t x_shape = g.x;
    cases.push_back({describe("conv2d_backward_data", g),
                     {dy, w},
                     [p, x_shape](backend& be, std::vector<tensor>& in) {
                       return op_result{{be.conv2d_backward_data(in[0], in[1], x_shape, p)}};
                     },
                     {parity::rounding},
                     {bf16_rule::products}});
    // From non-zero gradients: every backend must add to them (+=), with and without a bias.
    const tensor dw = random_host(g.w, rng), db = g.bias ? random_host({g.w[0]}, rng) : tensor{};
    cases.push_back({describe("conv2d_backward_filter, twice", g),
                     {x, dy, dw, db},
                     [p](backend& be, std::vector<tensor>& in) {
                       be.conv2d_backward_filter(in[0], in[1], p, in[2], in[3]);
                       tensor no_bias;
                       be.conv2d_backward_filter(in[0], in[1], p, in[2], no_bias);
                       return op_result{{in[2], in[3]}};
                     },
                     // db too: the backends may sum it from the bf16 copy of dy they convolve.
                     {parity::rounding},
                     {bf16_rule::products}});
  }
  return cases;
}

}  // namespace petra::testing
