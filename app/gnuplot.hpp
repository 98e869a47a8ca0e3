// gnuplot as petra's plotter: the program on PATH, one script per plot kept beside its PNG (to
// redraw or restyle it), the PNG written to a temp name and renamed so that it is whole.
#pragma once

#include <string>

namespace petra::app {

/// The gnuplot found on PATH, or "" when there is none.
std::string find_gnuplot();

/// `text` as a gnuplot double-quoted string literal.
std::string gnuplot_string(const std::string& text);

/// Writes `<dir>/<name>.gp` (the `comment` lines, a pngcairo terminal of width × height pixels
/// writing `<name>.png`, then `body`) and runs gnuplot on it in `dir`; the PNG is drawn under a
/// temp name and renamed. `gnuplot <name>.gp` in `dir` redraws it. Returns "" when the PNG was
/// written, else why not ("gnuplot not found", "gnuplot failed ...").
std::string run_gnuplot(const std::string& dir, const std::string& name, int width, int height,
                        const std::string& comment, const std::string& body);

}  // namespace petra::app
