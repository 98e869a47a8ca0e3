// `petra model-info` and `petra memory-model` under training.method forward_gradient: the auxiliary
// heads' parameters per stage, and the method's bytes per stage beside PETRA's.
#include <doctest/doctest.h>

#include <string>

#include "tests/petra_command.hpp"

TEST_CASE("model-info counts the auxiliary heads per stage, memory-model puts the method beside PETRA") {
  const auto info = petra::testing::run_petra("model-info default --set training.method=forward_gradient");
  CHECK(info.code == 0);
  CHECK(info.output.find("aux params") != std::string::npos);
  // Stage 1 (the stem: two streams of 16): conv3×3 32→32 (+ bias) 9,248, BN 64, linear 32→10 330.
  CHECK_MESSAGE(info.output.find("9642\n") != std::string::npos, info.output);
  CHECK(info.output.find("auxiliary heads (forward_gradient, aux_width 32") != std::string::npos);
  const auto plain = petra::testing::run_petra("model-info default");
  CHECK(plain.output.find("aux params") == std::string::npos);

  const auto memory =
      petra::testing::run_petra("memory-model default --set training.method=forward_gradient");
  CHECK(memory.code == 0);
  CHECK(memory.output.find("PETRA beside forward_gradient") != std::string::npos);
  CHECK(memory.output.find("forward_gradient: weights + gradients") != std::string::npos);
}
