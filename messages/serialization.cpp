// Tensor serialization: rank, extents, then the payload as one raw block.
#include "messages/serialization.hpp"

#include <sys/mman.h>

#include <caf/binary_deserializer.hpp>
#include <caf/sec.hpp>
#include <cstring>
#include <limits>
#include <new>

namespace petra {
namespace {

// A guard against hostile or corrupt input: no tensor petra sends comes near it.
constexpr uint64_t max_tensor_floats = uint64_t{1} << 32;  // 16 GiB

// A received tensor of this size or more gets pages of its own (mmap), returned when it goes.
// From malloc, a remote stage's activations (MBs each, made on the middleman's thread, freed by a
// stage after its backward) came from an arena whose freed space glibc's moving mmap threshold kept
// handing out in pieces: a `petra node` holding stage 6 of the default preset grew from 254 to 905 MB
// over 1,200 micro-batches; with malloc's threshold fixed at 128 KiB it stayed at 220–240 MB.
constexpr std::size_t own_pages_bytes = 128 * 1024;

tensor received(const shape_t& shape, uint64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  if (bytes < own_pages_bytes) return tensor::empty(shape);
  void* block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return tensor(shape,
                std::make_shared<storage>(block, bytes, device{}, [bytes](void* p) { ::munmap(p, bytes); }));
}

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
  tensor t = received(shape, count);
  if (count) {
    if (auto err = f.apply_raw(t.bytes(), t.data())) return err;
  }
  x = std::move(t);
  return {};
}

}  // namespace petra
