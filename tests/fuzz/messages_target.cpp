// Fuzz target: the wire decoder of every message type a node accepts. The first byte picks the
// type (or a whole caf::message, as BASP carries it: type names, then each element); the rest is
// what the binary deserializer reads.
#include <caf/binary_deserializer.hpp>
#include <caf/message.hpp>
#include <tuple>

#include "tests/fuzz/fuzz_target.hpp"
#include "tests/fuzz/wire_types.hpp"

namespace {

template <class T>
void decode(const uint8_t* data, std::size_t size) {
  caf::binary_deserializer source{petra::fuzz::wire_system(), reinterpret_cast<const char*>(data), size};
  T value;
  static_cast<void>(source(value));  // an error rejects the input: a node drops that connection
}

template <std::size_t... I>
void decode_type(std::size_t index, const uint8_t* data, std::size_t size, std::index_sequence<I...>) {
  ((index == I ? decode<std::tuple_element_t<I, petra::fuzz::wire_types>>(data, size) : void()), ...);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  constexpr std::size_t type_count = petra::fuzz::wire_type_count;
  const std::size_t index = data[0] % (type_count + 1);
  if (index == type_count)
    decode<caf::message>(data + 1, size - 1);
  else
    decode_type(index, data + 1, size - 1, std::make_index_sequence<type_count>{});
  return 0;
}
