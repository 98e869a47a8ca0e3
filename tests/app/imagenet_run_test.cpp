// `petra train` on ImageNet folders end to end, on a learnable 10-class JPEG tree the test writes:
// the run learns and writes classes.txt and the loader's metrics; the weights do not depend on
// data.workers; a bad JPEG is logged and counted (skip) or stops the run naming it (fail), in the
// simulator and the actor runtime alike; a missing class folder is bad input (exit 2, nothing written).
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/commands.hpp"
#include "compute/serialize/safetensors.hpp"
#include "tests/datasets/image_files.hpp"
#include "tests/files.hpp"

namespace fs = std::filesystem;
using petra::train_options;
using petra::app::train_command;
using imagenet_dir = petra::data::testing::temp_dir;
using petra::data::testing::write_learnable_jpeg_tree;

namespace {

/// The tiny model on 3×32×32 crops of the tree (resize 36 for evaluation), 10 classes, one epoch.
std::vector<std::string> imagenet_sets(const imagenet_dir& dir, const std::string& name) {
  return {"data.dataset=imagenet",
          "data.path=" + dir.file("data"),
          "data.mean=[0.5,0.5,0.5]",
          "data.std=[0.25,0.25,0.25]",
          "data.crop_size=32",
          "data.resize_size=36",
          "data.train_limit=0",
          "data.test_limit=0",
          "model.input=[3,32,32]",
          "model.num_classes=10",
          "training.micro_batch=16",
          "training.accumulation=1",
          "output.dir=" + dir.file("runs"),
          "output.name=" + name};
}

std::vector<nlohmann::json> events(const std::vector<nlohmann::json>& metrics, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& m : metrics)
    if (m["event"] == kind) out.push_back(m);
  return out;
}

/// `petra train` with stderr captured.
int train(const std::vector<std::string>& sets, std::string* errors = nullptr) {
  train_options o;
  o.config = "tiny";
  o.sets = sets;
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = train_command(o);
  std::cerr.rdbuf(old);
  if (errors) *errors = captured.str();
  return code;
}

/// A file cut to a third of a real JPEG, at train/<first wnid>/img_1.JPEG.
std::string truncate_one(const imagenet_dir& dir, const std::string& wnid) {
  const std::string path = dir.file("data/train/" + wnid + "/img_1.JPEG");
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  bytes.resize(bytes.size() / 3);
  petra::data::testing::write_file(path, bytes);
  return path;
}

}  // namespace

TEST_CASE("imagenet end to end: the tiny model learns a 10-class JPEG tree, classes.txt and loader metrics") {
  imagenet_dir dir;
  const std::vector<std::string> wnids = write_learnable_jpeg_tree(dir.file("data"), 10, 48, {"train"});
  write_learnable_jpeg_tree(dir.file("data"), 10, 10, {"val"});
  std::vector<std::string> sets = imagenet_sets(dir, "learn");
  sets.insert(sets.end(), {"training.epochs=3", "data.workers=2", "training.optimizer.base_lr=0.4"});
  REQUIRE(train(sets) == 0);
  const fs::path run = dir.file("runs/learn");
  std::ifstream classes(run / "classes.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(classes, line);) lines.push_back(line);
  CHECK(lines == wnids);
  const auto metrics = petra::testing::json_lines(run / "metrics.jsonl");
  const auto epochs = events(metrics, "epoch");
  REQUIRE(epochs.size() == 3);
  for (const auto& e : epochs) {
    CHECK(e["loader_wait_seconds"].is_number());
    CHECK(e["bad_images"] == 0);
  }
  CHECK(events(metrics, "bad_image").empty());
  const double accuracy = epochs.back()["test_accuracy"].get<double>();
  MESSAGE("test accuracy after 3 epochs on 480 images: " << accuracy);
  CHECK(accuracy > 0.5);  // chance is 0.1
}

TEST_CASE("imagenet: same seed, same weights with data.workers 1, 2 and 4") {
  imagenet_dir dir;
  write_learnable_jpeg_tree(dir.file("data"), 10, 8);
  std::vector<std::vector<std::pair<std::string, petra::tensor>>> weights;
  for (int workers : {1, 2, 4}) {
    const std::string name = "w" + std::to_string(workers);
    std::vector<std::string> sets = imagenet_sets(dir, name);
    sets.push_back("data.workers=" + std::to_string(workers));
    REQUIRE(train(sets) == 0);
    weights.push_back(petra::load_safetensors(dir.file("runs/" + name + "/checkpoint.safetensors")).tensors);
  }
  for (std::size_t r = 1; r < weights.size(); ++r) {
    REQUIRE(weights[r].size() == weights[0].size());
    int differing = 0;
    for (std::size_t i = 0; i < weights[0].size(); ++i) {
      const petra::tensor& a = weights[0][i].second;
      const petra::tensor& b = weights[r][i].second;
      if (a.shape() != b.shape() || std::memcmp(a.data(), b.data(), a.bytes()) != 0) ++differing;
    }
    CHECK(differing == 0);
  }
}

TEST_CASE("imagenet: a bad JPEG is logged once and counted (skip), or stops the run naming it (fail)") {
  imagenet_dir dir;
  const std::vector<std::string> wnids = write_learnable_jpeg_tree(dir.file("data"), 10, 4);
  const std::string bad = truncate_one(dir, wnids[0]);  // 40 images in 5 micro-batches of 8: all served
  for (const char* mode : {"simulate", "lockstep"}) {
    INFO("runtime.mode = " << mode);
    const std::string skip_name = std::string("skip-") + mode;
    std::vector<std::string> sets = imagenet_sets(dir, skip_name);
    sets.insert(sets.end(),
                {std::string("runtime.mode=") + mode, "training.epochs=2", "training.micro_batch=8"});
    REQUIRE(train(sets) == 0);
    const auto metrics = petra::testing::json_lines(dir.file("runs/" + skip_name + "/metrics.jsonl"));
    const auto logged = events(metrics, "bad_image");
    REQUIRE(logged.size() == 1);  // met in both epochs, logged once
    CHECK(logged[0]["path"] == bad);
    CHECK(logged[0]["reason"].get<std::string>().find("Premature end") != std::string::npos);
    for (const auto& e : events(metrics, "epoch")) CHECK(e["bad_images"] == 1);

    const std::string fail_name = std::string("fail-") + mode;
    sets = imagenet_sets(dir, fail_name);
    sets.insert(sets.end(),
                {std::string("runtime.mode=") + mode, "data.on_bad_image=fail", "training.micro_batch=8"});
    std::string errors;
    CHECK(train(sets, &errors) == 1);  // found while running: the config was valid
    CHECK(errors.find(bad + ": bad image") != std::string::npos);
    CHECK(errors.find("on_bad_image: skip") != std::string::npos);
  }
}

TEST_CASE("imagenet: a class folder missing from val is bad input: exit 2 naming it, nothing written") {
  imagenet_dir dir;
  const std::vector<std::string> wnids = write_learnable_jpeg_tree(dir.file("data"), 3, 2);
  fs::remove_all(dir.file("data/val/" + wnids[1]));
  std::string errors;
  CHECK(train(imagenet_sets(dir, "missing"), &errors) == 2);
  CHECK(errors.find(wnids[1]) != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("runs")));
}
