// `petra sweep`: one training run per point of a grid of config values, each a normal run under
// <output>/<name>/runs/, then a table (results.md, results.csv) and a plot (accuracy.png) of them.
// Every point's config is checked before anything runs or is written.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>

#include "app/commands.hpp"
#include "app/sweep_report.hpp"
#include "config/config.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  return stamp;
}

std::string key_of(const std::string& assignment) { return assignment.substr(0, assignment.find('=')); }

/// "a=1, b=[0,2]": how a point is named in messages and progress lines.
std::string describe(const std::vector<grid_axis>& axes, const std::vector<std::string>& values) {
  std::string text;
  for (size_t a = 0; a < axes.size(); ++a) text += (a == 0 ? "" : ", ") + axes[a].key + "=" + values[a];
  return text;
}

/// One planned run: its overrides, in the order load_config applies them (later wins).
struct planned_run {
  std::vector<std::string> values;
  std::string name;
  std::vector<std::string> overrides;
};

}  // namespace

int sweep_command(const sweep_options& options) {
  // 1. The grid and every point's config, before any directory is created.
  std::vector<grid_axis> axes;
  std::vector<planned_run> plan;
  fs::path sweep_dir;
  try {
    if (options.grid.empty())
      throw std::invalid_argument(
          "no --grid given: name at least one, e.g. --grid training.accumulation=1,2");
    std::set<std::string> keys;
    for (const std::string& text : options.grid) {
      axes.push_back(parse_grid_axis(text));
      if (!keys.insert(axes.back().key).second)
        throw std::invalid_argument("--grid " + axes.back().key +
                                    " is given twice: put all its values in one --grid");
    }
    auto check_not_output = [](const std::string& key, const std::string& flag) {
      if (key == "output.dir" || key == "output.name" || key == "output")
        throw std::invalid_argument(flag + " " + key +
                                    ": the sweep places its runs itself; use --output and --name");
    };
    for (const auto& axis : axes) check_not_output(axis.key, "--grid");
    for (const std::string& set : options.sets) check_not_output(key_of(set), "--set");

    const std::string name = options.name.empty() ? "sweep-" + utc_stamp() : options.name;
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      throw std::invalid_argument("--name '" + name + "': a directory name, without '/'");
    sweep_dir = fs::path(options.output) / name;
    if (fs::exists(sweep_dir) && (!fs::is_directory(sweep_dir) || !fs::is_empty(sweep_dir)))
      throw std::invalid_argument("'" + sweep_dir.string() +
                                  "' already exists and is not empty: choose another --name or remove it");

    // The fixed overrides first, so that their errors are reported once, not once per point.
    config::load_config(options.config, options.sets);
    const auto points = grid_points(axes);
    for (size_t i = 0; i < points.size(); ++i) {
      planned_run run{points[i], point_name(static_cast<int>(i + 1), axes, points[i]), options.sets};
      for (size_t a = 0; a < axes.size(); ++a) run.overrides.push_back(axes[a].key + "=" + points[i][a]);
      run.overrides.push_back("output.dir=" + (sweep_dir / "runs").string());
      run.overrides.push_back("output.name=" + run.name);
      run.overrides.push_back("output.progress=false");
      try {
        config::load_config(options.config, run.overrides);
      } catch (const std::exception& e) {
        // load_config names every override "--set key=value"; say --grid where the value came from there.
        std::string what = e.what();
        for (size_t a = 0; a < axes.size(); ++a) {
          const std::string from = "--set " + run.overrides[options.sets.size() + a];
          if (const size_t at = what.find(from); at != std::string::npos) what.replace(at, 5, "--grid");
        }
        throw std::invalid_argument("point " + std::to_string(i + 1) + " (" + describe(axes, points[i]) +
                                    "): " + what);
      }
      plan.push_back(std::move(run));
    }
  } catch (const std::exception& e) {
    std::cerr << "petra sweep: " << e.what() << "\n";
    return 2;
  }

  // 2. The runs, one after another; the tables are rewritten after each, so a stopped sweep keeps its rows.
  try {
    fs::create_directories(sweep_dir / "runs");
    const std::string title = "petra sweep " + sweep_dir.filename().string() + ": " + options.config;
    std::vector<point_result> results;
    for (const auto& run : plan) {
      point_result r;
      r.values = run.values;
      r.run_name = run.name;
      results.push_back(r);
    }
    auto write_tables = [&] {
      write_results_markdown((sweep_dir / "results.md").string(), title, axes, results);
      write_results_csv((sweep_dir / "results.csv").string(), axes, results);
    };
    write_tables();
    std::printf("petra sweep: %zu points of %s -> %s\n", plan.size(), options.config.c_str(),
                sweep_dir.c_str());
    std::fflush(stdout);

    int failed = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
      train_options train;
      train.config = options.config;
      train.sets = plan[i].overrides;
      int code = 1;
      try {
        code = train_command(train);
      } catch (const std::exception& e) {
        std::cerr << "petra sweep: point " << i + 1 << " failed: " << e.what() << "\n";
      }
      point_result& r = results[i];
      r.exit_code = code;
      read_run_metrics((sweep_dir / "runs" / plan[i].name).string(), r);
      if (!r.succeeded()) ++failed;
      std::fflush(stdout);
      if (r.succeeded())
        std::printf("point %zu/%zu: %s → %.1f%%\n", i + 1, plan.size(), describe(axes, r.values).c_str(),
                    100 * r.test_accuracy);
      else
        std::printf("point %zu/%zu: %s → failed (exit %d)\n", i + 1, plan.size(),
                    describe(axes, r.values).c_str(), code);
      std::fflush(stdout);
      write_tables();
      // A signal that came once the point's run was complete: the point counts, the sweep stops here.
      if (const int signal = signal_after_completed_run(); signal != 0) {
        std::fprintf(stderr,
                     "petra sweep: interrupted after point %zu/%zu (recorded); the points after it were not "
                     "run -> %s\n",
                     i + 1, plan.size(), sweep_dir.c_str());
        return 128 + signal;
      }
    }

    const std::string skipped = write_accuracy_plot(sweep_dir.string(), axes, results);
    if (!skipped.empty()) std::cerr << "petra sweep: plot skipped: " << skipped << "\n";
    std::printf("done: %zu of %zu runs finished -> %s (results.md, results.csv%s)\n", plan.size() - failed,
                plan.size(), sweep_dir.c_str(), skipped.empty() ? ", accuracy.png" : "");
    if (failed > 0)
      std::fprintf(stderr, "petra sweep: %d run(s) failed; see the table and their messages above\n", failed);
    return failed > 0 ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "petra sweep: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace petra::app
