// The progress line follows the data stream: the epoch it names is the one the micro-batches
// reaching the loss belong to, its step count never passes the epoch's size, a phase that starts
// inside an epoch counts from there, and a replay (totals going back) starts a fresh line.
#include "training/progress.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

using petra::progress;
using petra::run_totals;

namespace {

struct line {
  int epoch, epochs;
  long long done, total;
  double loss;
};

/// Feeds the phase's totals (every `every` micro-batches, 64 samples each, loss = its epoch) to a
/// plain-lines progress and reads back what it printed.
std::vector<line> printed(int epochs, int64_t per_epoch, int64_t phase_start,
                          const std::vector<int64_t>& counts, bool resumed = false) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    progress bar(true, f, 0);
    bar.begin_phase(epochs, per_epoch, phase_start, resumed);
    run_totals t;
    for (int64_t n : counts) {
      if (n < t.micro_batches) t = run_totals{};  // a replay starts its totals again
      for (; t.micro_batches < n; ++t.micro_batches) {
        t.samples += 64;
        t.loss_sum += static_cast<double>((phase_start + t.micro_batches) / per_epoch + 1);
      }
      bar.update(t);
    }
  }
  std::rewind(f);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) text += buf;
  std::fclose(f);
  std::vector<line> out;
  const std::regex re(
      R"(epoch (\d+)/(\d+)  micro-batch (\d+)/(\d+)  \d+ img/s  loss ([0-9.]+)  acc [0-9.]+%  ETA \S+)");
  for (std::sregex_iterator it(text.begin(), text.end(), re), e; it != e; ++it)
    out.push_back({std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4]),
                   std::stod((*it)[5])});
  return out;
}

std::vector<int64_t> every(int64_t step, int64_t last) {
  std::vector<int64_t> v;
  for (int64_t n = step; n <= last; n += step) v.push_back(n);
  return v;
}

}  // namespace

TEST_CASE(
    "progress: the line's epoch follows the stream across epoch ends, its step never passes the epoch") {
  const auto lines = printed(3, 100, 0, every(10, 300));
  REQUIRE(lines.size() == 30);  // deciles 1..10 of each epoch (decile 0 is not printed)
  for (std::size_t i = 0; i < lines.size(); ++i) {
    CAPTURE(i);
    CHECK(lines[i].epoch == static_cast<int>(i / 10) + 1);
    CHECK(lines[i].epochs == 3);
    CHECK(lines[i].total == 100);
    CHECK(lines[i].done == static_cast<long long>(i % 10 + 1) * 10);
    CHECK(lines[i].loss == doctest::Approx(lines[i].epoch));  // only that epoch's micro-batches
  }
}

TEST_CASE("progress: updates that straddle an epoch end name the new epoch, from where it stands") {
  const auto lines = printed(2, 100, 0, {45, 90, 135, 180, 200});
  std::vector<std::pair<int, long long>> seen;
  for (const line& l : lines) seen.push_back({l.epoch, l.done});
  CHECK(seen == std::vector<std::pair<int, long long>>{{1, 45}, {1, 90}, {2, 35}, {2, 80}, {2, 100}});
  for (const line& l : lines) CHECK(l.done <= l.total);
}

TEST_CASE("progress: a phase starting inside an epoch, and a replay, count from the stream's position") {
  const auto inside = printed(2, 100, 140, {10, 20, 30, 40, 50, 60});  // epoch 2, from 40
  REQUIRE(!inside.empty());
  CHECK(inside.front().epoch == 2);
  CHECK(inside.front().done == 50);
  CHECK(inside.back().done == 100);
  // Up to 60 of epoch 1, then the attempt replays from 0: the line starts again at 10.
  const auto replay = printed(1, 100, 0, {20, 40, 60, 10, 30});
  std::vector<long long> done;
  for (const line& l : replay) done.push_back(l.done);
  CHECK(done == std::vector<long long>{20, 40, 60, 30});
  // Resumed from a snapshot: the first totals (pre-resume) only set the base.
  const auto resumed = printed(1, 100, 0, {50, 70}, true);
  REQUIRE(resumed.size() == 1);
  CHECK(resumed.front().done == 70);
}
