// Tensors read from the wire: small ones come from the heap, large ones (128 KiB and up) get pages
// of their own; either way the payload is what was sent, bit for bit, 64-byte aligned.
#include <doctest/doctest.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <cstring>
#include <vector>

#include "messages/serialization.hpp"

using petra::tensor;

namespace {

tensor filled(const petra::shape_t& shape) {
  tensor t = tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(i % 977) * 0.25f - 3.0f;
  return t;
}

tensor round_trip(tensor sent) {
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  REQUIRE(!petra::inspect(sink, sent));
  tensor received;
  caf::binary_deserializer source{nullptr, bytes};
  REQUIRE(!petra::inspect(source, received));
  CHECK(source.remaining() == 0);
  return received;
}

}  // namespace

TEST_CASE("tensors from the wire: small, at the 128 KiB line and large, each bit for bit") {
  for (const petra::shape_t& shape : {petra::shape_t{3, 5}, petra::shape_t{32, 1024},
                                      petra::shape_t{32, 1023}, petra::shape_t{64, 32, 14, 14}}) {
    CAPTURE(shape.size());
    const tensor sent = filled(shape);
    const tensor got = round_trip(sent);
    REQUIRE(got.shape() == sent.shape());
    CHECK(std::memcmp(got.data(), sent.data(), sent.bytes()) == 0);
    CHECK(reinterpret_cast<uintptr_t>(got.data()) % 64 == 0);
  }
}
