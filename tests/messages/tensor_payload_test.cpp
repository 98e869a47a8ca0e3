// Tensors read from the wire: small ones come from the heap, large ones (128 KiB and up) get pages
// of their own, reused by the next tensor of their size; either way the payload is what was sent,
// bit for bit, 64-byte aligned.
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

TEST_CASE("tensors from the wire: a large one's pages go to the next of its size once it is gone") {
  const petra::shape_t large{64, 32, 14, 14};  // 1.6 MB
  const tensor sent = filled(large);
  const uint64_t before = petra::received_blocks_mapped();
  {
    const tensor first = round_trip(sent);
    const tensor second = round_trip(sent);  // while the first is held: pages of its own
    CHECK(second.data() != first.data());
    CHECK(petra::received_blocks_mapped() == before + 2);
  }
  // Both gone: the next two take their blocks, map nothing, and hold exactly what was sent.
  for (int i = 0; i < 10; ++i) {
    const tensor again = round_trip(sent);
    CHECK(std::memcmp(again.data(), sent.data(), sent.bytes()) == 0);
  }
  CHECK(petra::received_blocks_mapped() == before + 2);
  // Another size maps its own.
  const tensor other = round_trip(filled({64, 32, 7, 7}));
  CHECK(petra::received_blocks_mapped() == before + 3);
  // Small ones come from the heap: nothing mapped.
  const tensor small = round_trip(filled({3, 5}));
  CHECK(petra::received_blocks_mapped() == before + 3);
}
