// Forward gradients' per-stage arithmetic. The per-sample sums run on the host: B scalars and one
// scaling of an activation per micro-batch, small beside the stage's convolutions.
#include "compute/pipeline/fg_stage.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "compute/gaussian.hpp"

namespace petra {
namespace {

/// The streams of `a` as host tensors (undefined: a zero stream, as forward mode may leave one).
std::vector<tensor> host_streams(backend& be, const activation& a) {
  return {a.x1.defined() ? be.to_host(a.x1) : tensor{}, a.x2.defined() ? be.to_host(a.x2) : tensor{}};
}

}  // namespace

std::vector<double> per_sample_dot(backend& be, const activation& a, const activation& b) {
  const std::vector<tensor> ha = host_streams(be, a), hb = host_streams(be, b);
  const int64_t n = std::max(a.batch(), b.batch());
  std::vector<double> dot(static_cast<std::size_t>(n), 0.0);
  for (std::size_t s = 0; s < ha.size(); ++s) {
    if (!ha[s].defined() || !hb[s].defined()) continue;  // a zero stream adds nothing
    if (ha[s].shape() != hb[s].shape())
      throw std::invalid_argument("per_sample_dot: shapes " + ha[s].shape_str() + " and " +
                                  hb[s].shape_str());
    const int64_t per = ha[s].numel() / n;
    const float* x = ha[s].data();
    const float* y = hb[s].data();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t e = i * per; e < (i + 1) * per; ++e) dot[i] += static_cast<double>(x[e]) * y[e];
  }
  return dot;
}

activation project_on_guess(backend& be, const activation& guess, const std::vector<float>& d) {
  const int64_t n = guess.batch();
  if (static_cast<int64_t>(d.size()) != n)
    throw std::invalid_argument("project_on_guess: " + std::to_string(d.size()) +
                                " directional derivatives for a micro-batch of " + std::to_string(n));
  const std::vector<double> norm2 = per_sample_dot(be, guess, guess);
  std::vector<tensor> streams = host_streams(be, guess);
  for (tensor& t : streams) {
    if (!t.defined()) continue;
    const int64_t per = t.numel() / n;
    float* x = t.data();
    for (int64_t i = 0; i < n; ++i) {
      const float scale = norm2[i] > 0.0 ? static_cast<float>(d[i] / norm2[i]) : 0.f;
      for (int64_t e = i * per; e < (i + 1) * per; ++e) x[e] *= scale;
    }
  }
  return {be.from_host(streams[0]), streams[1].defined() ? be.from_host(streams[1]) : tensor{}};
}

std::vector<float> loss_derivatives(backend& be, const tensor& dlogits, const tensor& logits_dot) {
  if (dlogits.shape().size() != 2 || logits_dot.shape().size() != 2 || dlogits.dim(0) == 0 ||
      logits_dot.dim(1) != dlogits.dim(1) || logits_dot.dim(0) == 0 ||
      logits_dot.dim(0) % dlogits.dim(0) != 0)
    throw std::invalid_argument("loss_derivatives: logits tangent " + logits_dot.shape_str() +
                                " must have the shape (N, classes) of the loss gradient " +
                                dlogits.shape_str() + ", or stack m of them along the batch");
  const tensor g = be.to_host(dlogits), t = be.to_host(logits_dot);
  const int64_t n = g.dim(0), classes = g.dim(1), rows = t.dim(0);
  std::vector<float> out(static_cast<std::size_t>(rows));
  for (int64_t row = 0; row < rows; ++row) {  // row = g·N + i: sample i of the g-th tangent
    const float* gradient = g.data() + (row % n) * classes;
    const float* tangent = t.data() + row * classes;
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += static_cast<double>(gradient[k]) * tangent[k];
    out[static_cast<std::size_t>(row)] = static_cast<float>(sum);
  }
  return out;
}

std::vector<std::vector<float>> loss_derivatives_per_tangent(backend& be, const tensor& dlogits,
                                                             const tensor& logits_dot) {
  const std::vector<float> all = loss_derivatives(be, dlogits, logits_dot);
  const auto n = static_cast<std::size_t>(dlogits.dim(0));
  std::vector<std::vector<float>> out;
  for (std::size_t first = 0; first < all.size(); first += n)
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(first),
                     all.begin() + static_cast<std::ptrdiff_t>(first + n));
  return out;
}

activation gaussian_guess(backend& be, const activation& like, uint64_t seed, int stage, int64_t id) {
  uint64_t state = seed;
  state = splitmix64(state) ^ (static_cast<uint64_t>(stage) + 1) * 0xd1b54a32d192ed03ULL;
  state = splitmix64(state) ^ static_cast<uint64_t>(id) * 0x8cb92ba72f3d8dd7ULL;
  int stream = 0;
  auto draw = [&](const tensor& shape_of) {
    ++stream;
    if (!shape_of.defined()) return tensor{};
    // Counter-based (compute/gaussian.hpp), drawn where the stage computes: on a GPU by a kernel,
    // on the CPU by the stage's threads; a sequential double-precision draw on the host bounded a
    // random-guess run's images/s.
    return be.gaussian(shape_of.shape(), state ^ static_cast<uint64_t>(stream) * 0x9e3779b97f4a7c15ULL);
  };
  return {draw(like.x1), draw(like.x2)};
}

local_loss::local_loss(backend& be, const std::string& name, int stream_width, int aux_width, int num_classes,
                       const optimizer_settings& optimizer, uint64_t seed)
    : be_(be),
      head_(be, name, stream_width, aux_width, num_classes, seed),
      optimizer_(be, optimizer, head_.parameters()) {}

local_loss::result local_loss::step(const activation& z, const std::vector<int32_t>& labels) {
  tape t;
  const activation logits = head_.forward(z, pass::train, &t);
  tensor dlogits;
  result r;
  r.loss = be_.softmax_cross_entropy(logits.x1, labels, &dlogits, nullptr);
  r.grad = head_.backward(t, activation{dlogits, {}});
  if (++calls_ == optimizer_.settings().accumulation) {
    calls_ = 0;
    optimizer_.step();
  }
  return r;
}

}  // namespace petra
