// cudnn_algorithms.json (training/conv_algorithm_file.hpp): what a run writes reads back the same,
// and every way a file can be wrong is refused with the file and the place named.
#include "training/conv_algorithm_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/choices.hpp"

using namespace petra;
using nlohmann::json;

namespace {

conv_algorithm_record forward_entry() {
  conv_algorithm_record r;
  r.device = 0;
  r.direction = "forward";
  r.x = {128, 64, 32, 32};
  r.w = {64, 64, 3, 3};
  r.stride = 1;
  r.padding = 1;
  r.data = "fp32";
  r.math_mode = "tf32";
  r.deterministic = false;
  r.algorithm = 1;
  r.math = "tensor_op";
  r.workspace_bytes = 123456;
  r.source = "timed";
  r.time_ms = 0.25;
  return r;
}

std::vector<conv_algorithm_record> two_entries() {
  conv_algorithm_record filter = forward_entry();
  filter.direction = "backward_filter";
  filter.device = 1;
  filter.data = "bf16";
  filter.math_mode = "bf16";
  filter.deterministic = true;
  filter.algorithm = 6;
  filter.math = "default";
  filter.source = "heuristic";
  filter.time_ms = -1;
  return {forward_entry(), filter};
}

/// The error parse_conv_algorithms gives for `file`, "" when it accepts it.
std::string error_of(const json& file) {
  try {
    parse_conv_algorithms(file, "runs/r/cudnn_algorithms.json");
  } catch (const config::config_error& e) {
    return e.what();
  }
  return "";
}

/// A valid file with entry 0's field `key` set to `value` (or removed when `value` is null).
json with_entry_field(const std::string& key, const json& value) {
  json file = conv_algorithms_json(two_entries());
  if (value.is_null())
    file["algorithms"][0].erase(key);
  else
    file["algorithms"][0][key] = value;
  return file;
}

}  // namespace

TEST_CASE("cudnn_algorithms.json: a run's choices read back as they were written, keys intact") {
  const std::vector<conv_algorithm_record> written = two_entries();
  const json file = json::parse(conv_algorithms_json(written).dump(1));
  CHECK(file["format"] == "petra-cudnn-algorithms");
  CHECK(file["version"] == 1);
  const conv_algorithm_table table = parse_conv_algorithms(file, "a.json");
  CHECK(table.path == "a.json");
  REQUIRE(table.entries.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const conv_algorithm_record &a = table.entries[i], &b = written[i];
    CHECK(a.same_key(b));
    CHECK(a.algorithm == b.algorithm);
    CHECK(a.math == b.math);
    CHECK(a.workspace_bytes == b.workspace_bytes);
    CHECK(a.source == b.source);
    CHECK(a.time_ms == b.time_ms);
  }
  // Looked up by key: device, direction, shape, data type, math mode and determinism all count.
  CHECK(table.find(written[1]) == &table.entries[1]);
  conv_algorithm_record other = written[0];
  other.deterministic = true;
  CHECK(table.find(other) == nullptr);
  other = written[0];
  other.math_mode = "fp32";
  CHECK(table.find(other) == nullptr);
  other = written[0];
  other.device = 1;
  CHECK(table.find(other) == nullptr);
  // An empty list is a valid file (a run whose GPU stages had no convolution).
  CHECK(parse_conv_algorithms(conv_algorithms_json({}), "b.json").entries.empty());
}

TEST_CASE("cudnn_algorithms.json: every kind of bad file is refused, naming the file and the place") {
  const json good = conv_algorithms_json(two_entries());
  const std::vector<std::pair<json, std::string>> cases = {
      {json::array(), "the file holds array, expected an object"},
      {json{{"format", "other"}, {"version", 1}, {"algorithms", json::array()}}, "\"format\" is \"other\""},
      {json{{"format", "petra-cudnn-algorithms"}, {"version", 2}, {"algorithms", json::array()}},
       "\"version\" is 2, outside 1-1"},
      {json{{"format", "petra-cudnn-algorithms"}, {"version", 1}}, "the file has no \"algorithms\""},
      {json{{"format", "petra-cudnn-algorithms"}, {"version", 1}, {"algorithms", 3}},
       "\"algorithms\" is number, expected a list"},
      {json{
           {"format", "petra-cudnn-algorithms"}, {"version", 1}, {"algorithms", json::array()}, {"gpu", "x"}},
       "unknown field \"gpu\""},
      {with_entry_field("direction", "sideways"),
       "algorithms[0].direction is \"sideways\", not one of forward"},
      {with_entry_field("algorithm", 8), "algorithms[0].algorithm is 8, outside 0-7"},
      {with_entry_field("algorithm", -1), "algorithms[0].algorithm is -1, outside 0-7"},
      {with_entry_field("algorithm", "1"), "algorithms[0].algorithm is string \"1\", expected an integer"},
      {with_entry_field("math", "tensor_op_allow_conversion"),
       "algorithms[0].math is \"tensor_op_allow_conversion\""},
      {with_entry_field("x", json::array({128, 64, 32})),
       "algorithms[0].x is [128,64,32], expected 4 extents"},
      {with_entry_field("w", json::array({64, 64, 0, 3})), "algorithms[0].w[2] is 0, outside 1-"},
      {with_entry_field("w", json::array({64, 32, 3, 3})), "x has 64 channels and w 32"},
      {with_entry_field("stride", 0), "algorithms[0].stride is 0"},
      {with_entry_field("padding", -1), "algorithms[0].padding is -1"},
      {with_entry_field("data", "fp16"), "algorithms[0].data is \"fp16\", not one of fp32, bf16"},
      {with_entry_field("data", 32), "algorithms[0].data is 32, expected one of fp32, bf16"},
      {with_entry_field("math_mode", "fp16"),
       "algorithms[0].math_mode is \"fp16\", not one of fp32, tf32, bf16"},
      {with_entry_field("math_mode", "bf16"), "data \"fp32\" with math_mode \"bf16\""},
      {with_entry_field("deterministic", 1), "algorithms[0].deterministic is 1, expected true or false"},
      {with_entry_field("workspace_bytes", -5), "algorithms[0].workspace_bytes is -5"},
      {with_entry_field("device", nullptr), "algorithms[0] has no \"device\""},
      {with_entry_field("colour", "red"), "algorithms[0] has an unknown field \"colour\""},
      {with_entry_field("time_ms", "fast"), "algorithms[0].time_ms is \"fast\", expected a number"},
  };
  for (const auto& [file, message] : cases) {
    CAPTURE(message);
    const std::string error = error_of(file);
    CHECK_MESSAGE(error.find(message) != std::string::npos, error);
    CHECK(error.find("runtime.cudnn_algorithms: 'runs/r/cudnn_algorithms.json': ") == 0);
  }
  // The same key twice: which entries.
  json twice = good;
  twice["algorithms"].push_back(good["algorithms"][0]);
  CHECK(error_of(twice).find("algorithms[2] and algorithms[0] are both for cuda:0 forward") !=
        std::string::npos);
  CHECK(error_of(good).empty());
}

TEST_CASE("cudnn_algorithms.json on disk: a missing file or one that is no JSON is refused by name") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "petra-conv-algorithms-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string missing = (dir / "missing.json").string();
  CHECK_THROWS_WITH_AS(read_conv_algorithms(missing),
                       doctest::Contains(("'" + missing + "': cannot be read").c_str()),
                       config::config_error);
  const std::string broken = (dir / "broken.json").string();
  std::ofstream(broken) << "{\"format\": ";
  CHECK_THROWS_WITH_AS(read_conv_algorithms(broken),
                       doctest::Contains(("'" + broken + "': is not JSON").c_str()), config::config_error);
  const std::string good = (dir / "good.json").string();
  std::ofstream(good) << conv_algorithms_json(two_entries()).dump(1);
  const auto table = read_conv_algorithms(good);
  CHECK(table->entries.size() == 2);
  CHECK(read_conv_algorithms(good) == table);  // read once: every stage shares the table
  std::filesystem::remove_all(dir);
}

TEST_CASE("runtime.cudnn_search and runtime.cudnn_algorithms become the stage backends' options") {
  config::run_config c;
  backend_options options;
  set_conv_algorithm_options(c, options);
  CHECK(options.cudnn_search == conv_search::automatic);
  CHECK(options.cudnn_recorded == nullptr);
  c.runtime.cudnn_search = config::cudnn_search_mode::heuristic;
  set_conv_algorithm_options(c, options);
  CHECK(options.cudnn_search == conv_search::heuristic);
  c.runtime.cudnn_search = config::cudnn_search_mode::timed;
  set_conv_algorithm_options(c, options);
  CHECK(options.cudnn_search == conv_search::timed);
  // auto: timed, but heuristic (a function of shape, GPU and cuDNN only) under deterministic.
  CHECK(resolved(conv_search::automatic, false) == conv_search::timed);
  CHECK(resolved(conv_search::automatic, true) == conv_search::heuristic);
  CHECK(resolved(conv_search::timed, true) == conv_search::timed);
  CHECK(resolved(conv_search::heuristic, false) == conv_search::heuristic);
  // No GPU stage in this process chose anything: nothing to write.
  CHECK(conv_algorithm_choices(options).empty());
}
