// Tensor serialization: rank, extents, then the payload as one raw block.
#include "messages/serialization.hpp"

#include <caf/binary_deserializer.hpp>
#include <caf/sec.hpp>
#include <cstring>
#include <limits>

namespace petra {
namespace {

// A guard against hostile or corrupt input: no tensor petra sends comes near it.
constexpr uint64_t max_tensor_floats = uint64_t{1} << 32;  // 16 GiB

}  // namespace

caf::error inspect(caf::serializer& f, tensor& x) {
  if (x.defined() && x.where().type != device_type::cpu)
    return caf::make_error(caf::sec::runtime_error, "tensor on " + x.where().str() +
                                                        " cannot be serialized: copy it to the host first");
  uint8_t defined = x.defined() ? 1 : 0;
  std::vector<int64_t> shape = x.defined() ? x.shape() : std::vector<int64_t>{};
  if (auto err = f(caf::meta::type_name("tensor"), defined, shape)) return err;
  if (!defined || x.numel() == 0) return {};
  return f.apply_raw(x.bytes(), x.data());
}

caf::error inspect(caf::deserializer& f, tensor& x) {
  uint8_t defined = 0;
  std::vector<int64_t> shape;
  if (auto err = f(caf::meta::type_name("tensor"), defined, shape)) return err;
  if (!defined) {
    x = tensor{};
    return {};
  }
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > max_tensor_floats / static_cast<uint64_t>(d)))
      return caf::make_error(
          caf::sec::invalid_argument,
          "tensor shape " + to_string(shape) + " is negative or larger than 16 GiB: message rejected");
    count *= static_cast<uint64_t>(d);
  }
  // A few bytes claiming a large shape must not make a node allocate gigabytes: where the source
  // knows its size (the binary deserializer of every remote message), the payload must be there.
  if (const auto* binary = dynamic_cast<const caf::binary_deserializer*>(&f);
      binary && count > binary->remaining() / sizeof(float))
    return caf::make_error(caf::sec::end_of_stream,
                           "tensor shape " + to_string(shape) + " needs " +
                               std::to_string(count * sizeof(float)) + " bytes, only " +
                               std::to_string(binary->remaining()) + " remain: message rejected");
  tensor t = tensor::empty(shape);
  if (count) {
    if (auto err = f.apply_raw(t.bytes(), t.data())) return err;
  }
  x = std::move(t);
  return {};
}

}  // namespace petra
