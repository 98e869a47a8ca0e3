// `petra report <run-dir>...`: reads every run first (bad input: exit 2, nothing written), draws
// the plots and report.html into a temp directory beside the output, then swaps it into place.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "app/commands.hpp"
#include "app/report_data.hpp"
#include "app/report_html.hpp"
#include "app/report_plots.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;

/// Two runs named alike (a/x, b/x) are told apart by the path they were given as.
void make_names_unique(std::vector<run_data>& runs) {
  std::map<std::string, int> uses;
  for (const auto& run : runs) ++uses[run.name];
  for (auto& run : runs)
    if (uses[run.name] > 1) run.name = fs::path(run.dir).lexically_normal().string();
  std::map<std::string, int> seen;  // the same directory given twice: "x", "x #2"
  for (auto& run : runs)
    if (++seen[run.name] > 1) run.name += " #" + std::to_string(seen[run.name]);
}

/// Refuses an output that is not a directory, or a non-empty directory that is not a report (so
/// that `--output runs/x` never replaces a run directory).
void check_output(const fs::path& output) {
  if (!fs::exists(output)) return;
  if (!fs::is_directory(output))
    throw report_input_error("--output " + output.string() + ": exists and is not a directory");
  const bool empty = fs::directory_iterator(output) == fs::directory_iterator();
  if (!empty && !fs::exists(output / "report.html"))
    throw report_input_error(
        "--output " + output.string() +
        ": exists and holds no report.html; it is not replaced: choose another directory");
}

}  // namespace

int report_command(const report_options& options) {
  fs::path temp, created;  // created: the first directory made for the output, removed on failure
  try {
    if (options.runs.empty()) throw report_input_error("give at least one run directory");
    std::vector<run_data> runs;
    for (const auto& dir : options.runs) runs.push_back(read_run(dir));
    make_names_unique(runs);
    const fs::path output =
        fs::path(options.output.empty() ? (fs::path(options.runs[0]) / "report").string() : options.output)
            .lexically_normal();
    check_output(output);

    const fs::path parent = fs::absolute(output).parent_path();
    const std::string stem = fs::absolute(output).filename().string();
    for (fs::path p = parent; !p.empty() && !fs::exists(p); p = p.parent_path()) created = p;
    fs::create_directories(parent);
    temp = parent / ("." + stem + ".tmp-" + std::to_string(::getpid()));
    fs::remove_all(temp);
    fs::create_directories(temp);
    const auto plots = draw_report_plots(temp.string(), runs);
    write_report_html(temp.string(), runs, plots);

    if (fs::exists(output)) {
      const fs::path old = parent / ("." + stem + ".old-" + std::to_string(::getpid()));
      fs::remove_all(old);
      fs::rename(output, old);
      fs::rename(temp, output);
      fs::remove_all(old);
    } else {
      fs::rename(temp, output);
    }
    temp.clear();
    created.clear();

    int drawn = 0;
    for (const auto& p : plots) drawn += p.missing.empty() ? 1 : 0;
    std::cout << "report: " << (output / "report.html").string() << " (" << drawn << " of " << plots.size()
              << " plots)\n";
    for (const auto& p : plots)
      if (!p.missing.empty()) std::cout << "  not drawn: " << p.title << ": " << p.missing << "\n";
    return 0;
  } catch (const report_input_error& e) {
    std::cerr << "petra report: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::error_code ignored;
    if (!temp.empty()) fs::remove_all(temp, ignored);
    if (!created.empty()) fs::remove_all(created, ignored);
    std::cerr << "petra report: failed: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace petra::app
