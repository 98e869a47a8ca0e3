// The control messages that cross processes (a stage on a `petra node` returns credits to the
// loader and marks cuts to the loss actor): serialized and read back, each is what was sent.
#include <doctest/doctest.h>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <string>
#include <vector>

#include "messages/type_ids.hpp"

using namespace petra::messages;

namespace {

template <class T>
T round_trip(T sent) {
  std::vector<char> bytes;
  caf::binary_serializer sink{nullptr, bytes};
  REQUIRE(!sink(sent));
  T received;
  caf::binary_deserializer source{nullptr, bytes};
  REQUIRE(!source(received));
  CHECK(source.remaining() == 0);
  return received;
}

}  // namespace

TEST_CASE("a credit crosses a process with its count and its phase") {
  const credit_return back = round_trip(credit_return{3, 7});
  CHECK(back.count == 3);
  CHECK(back.phase == 7);
}

TEST_CASE("a cut marker crosses a process with its tick and its sender") {
  CHECK(round_trip(cut_marker{42}).tick == 42);
  CHECK_FALSE(round_trip(cut_marker{42}).from_loader);
  CHECK(round_trip(cut_marker{7, true}).from_loader);
}

TEST_CASE("a node's orders cross a process whole") {
  const spawn_stage spawn = round_trip(spawn_stage{"model: {}", 2, 120});
  CHECK(spawn.config_yaml == "model: {}");
  CHECK(spawn.stage == 2);
  CHECK(spawn.steps_per_epoch == 120);
  CHECK(round_trip(kill_node{1.5}).seconds == 1.5);
}

TEST_CASE("each control message is its own type, registered by name") {
  // The struct type is the message tag: two messages with the same fields never match each
  // other's handler.
  CHECK(caf::type_id<credit_return>::value != caf::type_id<cut_marker>::value);
  CHECK(std::string(caf::type_name<credit_return>::value) == "petra::messages::credit_return");
  CHECK(std::string(caf::type_name<cut_marker>::value) == "petra::messages::cut_marker");
}
