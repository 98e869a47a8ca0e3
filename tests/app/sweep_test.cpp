// `petra sweep`: grid values split outside brackets; a small lockstep sweep writes its table and
// plot and measures what it swept (injected delay, accumulation's staleness); a bad grid key is
// refused before anything is written.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>

#include "app/commands.hpp"
#include "app/sweep_report.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;
using petra::app::grid_axis;
using petra::app::grid_points;
using petra::app::parse_grid_axis;
using petra::app::split_grid_values;
using petra::app::sweep_command;
using petra::app::sweep_options;

using petra::testing::scratch_dir;

namespace {

/// RFC 4180 rows: fields split on commas outside double quotes, "" inside quotes is one ".
std::vector<std::vector<std::string>> read_csv(const fs::path& file) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
        row.back() += '"', ++i;
      else if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        row.emplace_back();
      else
        row.back() += c;
    }
    rows.push_back(row);
  }
  return rows;
}

/// The rows of a CSV as maps from its header's column names.
std::vector<std::map<std::string, std::string>> read_csv_records(const fs::path& file) {
  const auto rows = read_csv(file);
  std::vector<std::map<std::string, std::string>> records;
  for (size_t r = 1; r < rows.size(); ++r) {
    std::map<std::string, std::string> record;
    for (size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) record[rows[0][c]] = rows[r][c];
    records.push_back(record);
  }
  return records;
}

}  // namespace

TEST_CASE("sweep grid: values split on commas outside brackets, braces and quotes") {
  CHECK(split_grid_values("1,2,4") == std::vector<std::string>{"1", "2", "4"});
  CHECK(split_grid_values("[0,0,0,0,0],[0,0,2,0,0]") ==
        std::vector<std::string>{"[0,0,0,0,0]", "[0,0,2,0,0]"});
  CHECK(split_grid_values("[[1,2],[3]], {a: 1, b: 2}, 'x,y', \"p,q\"") ==
        std::vector<std::string>{"[[1,2],[3]]", "{a: 1, b: 2}", "'x,y'", "\"p,q\""});
  CHECK(split_grid_values(" cosine , constant ") == std::vector<std::string>{"cosine", "constant"});
  CHECK(split_grid_values("[]") == std::vector<std::string>{"[]"});
  CHECK_THROWS_AS(split_grid_values("1,,2"), std::invalid_argument);
  CHECK_THROWS_AS(split_grid_values("1,2,"), std::invalid_argument);
  CHECK_THROWS_AS(split_grid_values("[0,1"), std::invalid_argument);
  CHECK_THROWS_AS(split_grid_values("0,1]"), std::invalid_argument);
  CHECK_THROWS_AS(split_grid_values("[0,1}"), std::invalid_argument);
  CHECK_THROWS_AS(split_grid_values("'a,b"), std::invalid_argument);

  const grid_axis axis = parse_grid_axis("faults.backward_delay=[0,0],[0,4]");
  CHECK(axis.key == "faults.backward_delay");
  CHECK(axis.values == std::vector<std::string>{"[0,0]", "[0,4]"});
  CHECK_THROWS_AS(parse_grid_axis("training.accumulation"), std::invalid_argument);
  CHECK_THROWS_AS(parse_grid_axis("=1,2"), std::invalid_argument);
}

TEST_CASE("sweep grid: the points are the cartesian product, the last axis fastest") {
  const auto points = grid_points({{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}});
  REQUIRE(points.size() == 6);
  CHECK(points[0] == std::vector<std::string>{"1", "x"});
  CHECK(points[2] == std::vector<std::string>{"1", "z"});
  CHECK(points[3] == std::vector<std::string>{"2", "x"});
  CHECK(points[5] == std::vector<std::string>{"2", "z"});
}

TEST_CASE("sweep: a bad grid key or value is refused with exit code 2 before anything is created") {
  scratch_dir out;
  for (const std::string& grid : std::vector<std::string>{
           "training.acumulation=1,2", "training.accumulation=1,two", "faults.backward_delay=[0,-1]"}) {
    sweep_options o;
    o.config = "ci_smoke";
    o.grid = {grid};
    o.output = (out.path / "sweeps").string();
    o.name = "bad";
    std::stringstream captured;
    auto* old = std::cerr.rdbuf(captured.rdbuf());
    const int code = sweep_command(o);
    std::cerr.rdbuf(old);
    CHECK(code == 2);
    INFO(captured.str());
    CHECK(captured.str().find(grid.substr(0, grid.find('='))) != std::string::npos);  // names the key
    CHECK_FALSE(fs::exists(out.path / "sweeps"));
  }
}

TEST_CASE(
    "sweep: a lockstep sweep over injected delay and accumulation writes its table and plot and measures "
    "both") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  // ci_smoke's tiny model has J = 5 stages; the grid delays the backward into stage 3 by 2 ticks.
  scratch_dir out;
  sweep_options o;
  o.config = "ci_smoke";
  o.sets = {"runtime.mode=lockstep", "data.train_limit=256", "data.test_limit=128", "training.micro_batch=16",
            "runtime.inversion_sample_every=2"};
  o.grid = {"faults.backward_delay=[0,0,0,0,0],[0,0,2,0,0]", "training.accumulation=1,2"};
  o.output = (out.path / "sweeps").string();
  o.name = "small";
  REQUIRE(sweep_command(o) == 0);

  const fs::path dir = out.path / "sweeps" / "small";
  CHECK(fs::exists(dir / "results.md"));
  for (const auto& entry : fs::directory_iterator(dir))  // atomic writes leave no temp files
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
  const auto records = read_csv_records(dir / "results.csv");
  REQUIRE(records.size() == 4);
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>> by_point;
  for (const auto& r : records) {
    CHECK(r.at("status") == "ok");
    CHECK(fs::exists(dir / "runs" / r.at("run") / "metrics.jsonl"));
    const double accuracy = std::stod(r.at("test_accuracy"));
    CHECK(accuracy >= 0.0);
    CHECK(accuracy <= 1.0);
    CHECK(std::stod(r.at("images_per_s")) > 0);
    CHECK_FALSE(r.at("inversion_error_mean").empty());  // the tiny model has reversible stages
    by_point[{r.at("faults.backward_delay"), r.at("training.accumulation")}] = r;
  }
  const auto& plain = by_point.at({"[0,0,0,0,0]", "1"});
  const auto& delayed = by_point.at({"[0,0,2,0,0]", "1"});
  const auto& accumulated = by_point.at({"[0,0,0,0,0]", "2"});
  // Without faults the measured delay is the schedule's, 2(J − j): stage 1 of 5 waits 8 ticks.
  CHECK(std::stod(plain.at("delay_ticks_1")) == doctest::Approx(8.0));
  CHECK(std::stod(plain.at("delay_ticks_5")) == doctest::Approx(0.0));
  // k = 2 halves the optimizer steps between a forward and its backward at stage 1.
  CHECK(std::stod(accumulated.at("staleness_steps_1")) < std::stod(plain.at("staleness_steps_1")));
  // 2 extra ticks on the backward into stage 3 delay stage 3 (and the stages before it) by 2
  // ticks, and leave the stages after it as they were.
  CHECK(std::stod(delayed.at("delay_ticks_3")) == doctest::Approx(std::stod(plain.at("delay_ticks_3")) + 2));
  CHECK(std::stod(delayed.at("delay_ticks_1")) == doctest::Approx(std::stod(plain.at("delay_ticks_1")) + 2));
  CHECK(std::stod(delayed.at("delay_ticks_4")) == doctest::Approx(std::stod(plain.at("delay_ticks_4"))));

  const fs::path plot = dir / "accuracy.png";
  if (fs::exists("/usr/bin/gnuplot")) {
    REQUIRE(fs::exists(plot));
    std::ifstream png(plot, std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    CHECK(std::string(magic + 1, 3) == "PNG");
  } else {
    FAIL("gnuplot is not installed (deploy/install-deps.sh installs gnuplot-nox)");
  }
}

TEST_CASE("sweep: a failing run is marked failed in the table, the sweep goes on and exits 1") {
  if (!petra::testing::have_fashion_mnist())
    PETRA_SKIP("/usr/share/datasets/fashion-mnist is missing (apt-get install dataset-fashion-mnist)");
  scratch_dir out;
  sweep_options o;
  o.config = "ci_smoke";
  o.sets = {"data.train_limit=128", "data.test_limit=64"};
  // The config of both points is valid; the second point's data is missing, which only its run finds.
  o.grid = {"data.path=" + (out.path / "missing").string() + ",/usr/share/datasets/fashion-mnist"};
  o.output = out.path.string();
  o.name = "partial";
  std::stringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  const int code = sweep_command(o);
  std::cerr.rdbuf(old);
  CHECK(code == 1);
  const auto records = read_csv_records(out.path / "partial" / "results.csv");
  REQUIRE(records.size() == 2);
  CHECK(records[0].at("status") == "failed (exit 2)");
  CHECK(records[0].at("test_accuracy").empty());
  CHECK(records[1].at("status") == "ok");
  CHECK_FALSE(records[1].at("test_accuracy").empty());
  std::ifstream markdown(out.path / "partial" / "results.md");
  const std::string table((std::istreambuf_iterator<char>(markdown)), std::istreambuf_iterator<char>());
  CHECK(table.find("failed (exit 2)") != std::string::npos);

  // The same sweep directory again is refused before anything runs.
  std::stringstream again;
  old = std::cerr.rdbuf(again.rdbuf());
  CHECK(sweep_command(o) == 2);
  std::cerr.rdbuf(old);
  CHECK(again.str().find("already exists") != std::string::npos);
}
