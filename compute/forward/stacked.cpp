// Batch-axis helpers of stacked tangents.
#include "compute/forward/stacked.hpp"

#include <stdexcept>
#include <string>

namespace petra {

namespace {

int64_t per_sample(const tensor& t) { return t.dim(0) == 0 ? 0 : t.numel() / t.dim(0); }

shape_t with_batch(shape_t shape, int64_t batch) {
  shape.at(0) = batch;
  return shape;
}

}  // namespace

tensor batch_slice(const tensor& t, int64_t first, int64_t count) {
  if (!t.defined() || t.rank() == 0 || first < 0 || count < 0 || first + count > t.dim(0))
    throw std::invalid_argument("batch_slice: samples [" + std::to_string(first) + ", " +
                                std::to_string(first + count) + ") of a tensor " +
                                (t.defined() ? t.shape_str() : std::string("that is undefined")));
  if (first == 0 && count == t.dim(0)) return t;
  return tensor(with_batch(t.shape(), count), t.buffer(),
                t.offset() + static_cast<std::size_t>(first * per_sample(t)));
}

int64_t stacked_groups(const tensor& tangent, int64_t n, const char* op, const char* what) {
  if (n <= 0 || tangent.rank() == 0 || tangent.dim(0) % n != 0 || tangent.dim(0) == 0)
    throw std::invalid_argument(std::string(op) + ": the tangent " + what + " " + tangent.shape_str() +
                                " must stack m >= 1 tangents of the primal's batch " + std::to_string(n) +
                                " (a batch of m·" + std::to_string(n) + ")");
  return tangent.dim(0) / n;
}

tensor stack_batches(backend& be, const std::vector<tensor>& parts) {
  if (parts.empty()) throw std::invalid_argument("stack_batches: nothing to stack");
  if (parts.size() == 1) return parts.front();
  const int64_t each = per_sample(parts.front());
  int64_t batch = 0;
  bool back_to_back = true;
  for (const tensor& p : parts) {
    if (!p.defined() || p.rank() != parts.front().rank() || per_sample(p) != each ||
        with_batch(p.shape(), 0) != with_batch(parts.front().shape(), 0))
      throw std::invalid_argument("stack_batches: part " + (p.defined() ? p.shape_str() : "undefined") +
                                  " does not have the per-sample shape of " + parts.front().shape_str());
    back_to_back = back_to_back && p.shares_storage_with(parts.front()) &&
                   p.offset() == parts.front().offset() + static_cast<std::size_t>(batch * each);
    batch += p.dim(0);
  }
  const shape_t shape = with_batch(parts.front().shape(), batch);
  if (back_to_back) return tensor(shape, parts.front().buffer(), parts.front().offset());
  tensor out = be.empty(shape);
  int64_t first = 0;
  for (const tensor& p : parts) {
    tensor into = batch_slice(out, first, p.dim(0));
    be.copy(p, into);
    first += p.dim(0);
  }
  return out;
}

tensor tile_batch(backend& be, const tensor& t, int64_t m) {
  if (m == 1) return t;
  return stack_batches(be, std::vector<tensor>(static_cast<std::size_t>(m), t));
}

tensor per_group(backend& be, const tensor& stacked, int64_t n,
                 const std::function<tensor(const tensor&)>& f) {
  const int64_t m = stacked.dim(0) / n;
  if (m == 1) return f(stacked);
  std::vector<tensor> results;
  for (int64_t g = 0; g < m; ++g) results.push_back(f(batch_slice(stacked, g * n, n)));
  return stack_batches(be, results);
}

activation stack_tangents(backend& be, const std::vector<activation>& tangents) {
  if (tangents.size() == 1) return tangents.front();
  auto stream = [&](tensor activation::*which) {
    const tensor* like = nullptr;
    for (const activation& t : tangents)
      if ((t.*which).defined()) like = &(t.*which);
    if (!like) return tensor{};
    std::vector<tensor> parts;
    for (const activation& t : tangents)
      parts.push_back((t.*which).defined() ? t.*which : be.zeros(like->shape()));
    return stack_batches(be, parts);
  };
  return {stream(&activation::x1), stream(&activation::x2)};
}

activation tangent_group(const activation& stacked, int64_t g, int64_t m) {
  auto group = [&](const tensor& t) {
    if (!t.defined()) return tensor{};
    const int64_t n = t.dim(0) / m;
    return batch_slice(t, g * n, n);
  };
  return {group(stacked.x1), group(stacked.x2)};
}

}  // namespace petra
