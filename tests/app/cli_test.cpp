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

TEST_CASE("model-info on the RevViT presets: stages and parameter counts, a bad combination refused") {
  // revvit_tiny_fmnist: stem 1·128·4·4 + 128 + 49·128, six blocks of 198272, head 2·256 + 256·10 + 10.
  auto tiny = run("model-info revvit_tiny_fmnist");
  CHECK(tiny.code == 0);
  CHECK(tiny.output.find("model revvit: input 1×28×28, 10 classes, 8 stages") != std::string::npos);
  CHECK(tiny.output.find("total trainable parameters: 1201162") != std::string::npos);
  CHECK(tiny.output.find("8      head") != std::string::npos);
  // ViT-B/16's shape: 85.1M in the blocks, the patch and position embeddings, a head on 2·768.
  auto base = run("model-info revvit_base_imagenet");
  CHECK(base.output.find("total trainable parameters: 87335656") != std::string::npos);
  auto bad = run("model-info revvit_tiny_fmnist --set model.heads=5");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("model.heads: 5 heads do not divide model.width 128") != std::string::npos);
  // memory-model: the same table as for RevNets (one stream of each stage's input in the paper's column).
  auto memory = run("memory-model revvit_base_imagenet");
  CHECK(memory.code == 0);
  CHECK(memory.output.find("memory model: revvit, input 3×224×224, micro-batch 64, k = 4, J = 14") !=
        std::string::npos);
  CHECK(memory.output.find("PETRA                           0.9") != std::string::npos);
  auto stem = run("model-info --arch revvit --stem cifar");
  CHECK(stem.code == 2);
  CHECK(stem.output.find("--stem cifar: the model is revvit") != std::string::npos);
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
