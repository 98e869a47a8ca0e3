// Runs gnuplot scripts for `petra sweep` and `petra report`: find the program, write the script,
// draw into a temp file and rename it, so a plot is either whole or absent.
#include "app/gnuplot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "compute/serialize/atomic_file.hpp"

namespace petra::app {
namespace {
namespace fs = std::filesystem;

/// A POSIX shell single-quoted word.
std::string shell_word(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "gnuplot";
    if (fs::is_regular_file(candidate) && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

std::string gnuplot_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string run_gnuplot(const std::string& dir, const std::string& name, int width, int height,
                        const std::string& comment, const std::string& body) {
  const std::string gnuplot = find_gnuplot();
  if (gnuplot.empty()) return "gnuplot not found on PATH (apt-get install gnuplot-nox)";
  const std::string script = (fs::path(dir) / (name + ".gp")).string();
  const std::string png = name + ".png";
  write_file_atomically(script, [&](std::ostream& out) {
    std::istringstream lines(comment);
    for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
    out << "# Redraw: gnuplot " << name << ".gp\n"
        << "set terminal pngcairo size " << width << "," << height << " noenhanced font \",11\"\n"
        << "if (!exists(\"output_file\")) output_file = '" << png << "'\n"
        << "set output output_file\n"
        << body;
  });

  const fs::path temp = fs::path(dir) / (png + ".tmp");
  const std::string command = "cd " + shell_word(dir) + " && " + shell_word(gnuplot) + " -e " +
                              shell_word("output_file='" + png + ".tmp'") + " " + shell_word(name + ".gp");
  const int status = std::system(command.c_str());
  if (status != 0 || !fs::is_regular_file(temp)) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    return "gnuplot failed (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : status) +
           ") on " + script;
  }
  fs::rename(temp, fs::path(dir) / png);
  return "";
}

}  // namespace petra::app
