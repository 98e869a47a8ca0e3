// The `petra` binary: sub-commands, the parameter counts of docs/design.md §2, the paper's memory table.
#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <string>

#include "tests/petra_command.hpp"

namespace {

petra::testing::command_result run(const std::string& args) { return petra::testing::run_petra(args); }

}  // namespace

TEST_CASE("model-info reports the paper's parameter counts") {
  auto r18 = run("model-info --arch revnet18 --classes 10 --input 3,32,32");
  CHECK(r18.code == 0);
  CHECK(r18.output.find("total trainable parameters: 11185802") != std::string::npos);
  auto r50 = run("model-info --arch revnet50 --classes 10 --input 3,32,32");
  CHECK(r50.output.find("total trainable parameters: 26350218") != std::string::npos);
  auto r50i = run("model-info --arch revnet50 --classes 1000 --input 3,224,224 --stem imagenet");
  CHECK(r50i.output.find("total trainable parameters: 30421608") != std::string::npos);
  auto small = run("model-info default");
  CHECK(small.output.find("8      head") != std::string::npos);  // J = 8
}

TEST_CASE("memory-model reproduces the paper's table for RevNet-50 on ImageNet") {
  auto r = run(
      "memory-model --arch revnet50 --classes 1000 --input 3,224,224 --stem imagenet --micro-batch 64 --k 1");
  CHECK(r.code == 0);
  CHECK(r.output.find("PipeDream-like                 44.5") != std::string::npos);
  CHECK(r.output.find("DSP-like                       43.6") != std::string::npos);
  CHECK(r.output.find("reversible+stash               21.2") != std::string::npos);
  CHECK(r.output.find("PETRA                          20.3") != std::string::npos);
}

TEST_CASE("bad flags and bad input exit with code 2 and say why") {
  auto unknown = run("train");
  CHECK(unknown.code == 2);
  auto missing = run("train /nonexistent/config.yaml");
  CHECK(missing.code == 2);
  CHECK(missing.output.find("/nonexistent/config.yaml") != std::string::npos);
  auto bad_arch = run("model-info --arch revnet19");
  CHECK(bad_arch.code == 2);
  CHECK(bad_arch.output.find("revnet19") != std::string::npos);
  auto no_checkpoint = run("eval /nonexistent/run");
  CHECK(no_checkpoint.code == 2);
}

TEST_CASE("train --help lists the names of every named choice of the config, from its table") {
  const auto help = run("train --help");
  CHECK(help.code == 0);
  for (const char* line : {"runtime.mode: simulate, lockstep, async", "runtime.pacing: stages, loader",
                           "training.tick_order: forward_first, backward_first",
                           "training.schedule.kind: cosine, step, constant",
                           "data.dataset: fashion-mnist, mnist, cifar10, imagenet32, imagenet",
                           "data.on_bad_image: skip, fail", "runtime.precision: fp32, tf32",
                           "faults.recovery: local, global", "model.stem: \"\", cifar, imagenet"})
    CHECK_MESSAGE(help.output.find(line) != std::string::npos, "no line " << line);
}
