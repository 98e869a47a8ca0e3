// Run directory.
#include "training/run_dir.hpp"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "compute/serialize/atomic_file.hpp"

namespace petra {

run_dir run_dir::create(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  run_dir r;
  std::error_code ec;
  if (fs::exists(p) && !fs::is_empty(p))
    throw std::runtime_error("run directory '" + p.string() +
                             "' already exists and is not empty: choose another output.name or remove it");
  // The outermost folder this call makes: removed again if the rest cannot be made (no partial output).
  fs::path made;
  for (fs::path up = p; !up.empty() && !fs::exists(up, ec); up = up.parent_path()) {
    made = up;
    if (up == up.parent_path()) break;
  }
  fs::create_directories(p, ec);
  if (ec) {
    const std::string why = ec.message();
    if (!made.empty()) fs::remove_all(made, ec);
    throw run_dir_refused("cannot create run directory '" + p.string() + "': " + why);
  }
  r.path_ = p.string();
  r.metrics_.open(r.file("metrics.jsonl"), std::ios::app);
  if (!r.metrics_) throw std::runtime_error("cannot open '" + r.file("metrics.jsonl") + "' for writing");
  return r;
}

run_dir run_dir::reopen(const std::string& path) {
  run_dir r;
  r.path_ = path;
  // A process killed while writing leaves its temp file (never a torn target): clear them.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      std::filesystem::remove(entry.path(), ec);
  r.metrics_.open(r.file("metrics.jsonl"), std::ios::app);
  if (!r.metrics_) throw std::runtime_error("cannot open '" + r.file("metrics.jsonl") + "' for appending");
  return r;
}

void run_dir::log(const nlohmann::json& record) {
  metrics_ << record.dump() << '\n';
  metrics_.flush();
  if (!metrics_) throw std::runtime_error("writing '" + file("metrics.jsonl") + "' failed (disk full?)");
}

void run_dir::forget_epochs_from(int epoch) {
  const std::string path = file("metrics.jsonl");
  std::ifstream in(path);
  std::ostringstream kept;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;  // a line a killed process left half-written
    if (j.value("event", "") == "epoch" && j.contains("epoch") && j["epoch"].is_number_integer() &&
        j["epoch"].get<int64_t>() >= epoch)
      continue;
    kept << line << '\n';
  }
  in.close();
  metrics_.close();  // the file is replaced: append to the new one
  write_file_atomically(path, [&](std::ostream& out) { out << kept.str(); });
  metrics_.open(path, std::ios::app);
  if (!metrics_) throw std::runtime_error("cannot open '" + path + "' for appending");
}

std::string default_run_name(const std::string& stem, const std::string& method) {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  return stem + "-" + method + "-" + stamp;
}

std::vector<nlohmann::json> logged_events(const std::string& path, const std::string& event) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == event) out.push_back(std::move(j));
  }
  return out;
}

namespace {

/// The highest integer `key` of the `event` lines of metrics.jsonl (0 for none).
int64_t last_logged(const std::string& path, const std::string& event, const std::string& key) {
  int64_t last = 0;
  for (const nlohmann::json& j : logged_events(path, event))
    if (j.contains(key) && j[key].is_number_integer()) last = std::max(last, j[key].get<int64_t>());
  return last;
}

}  // namespace

int run_dir::last_logged_epoch() const {
  return static_cast<int>(last_logged(file("metrics.jsonl"), "epoch", "epoch"));
}

run_dir::logged_step run_dir::last_logged_step() const {
  logged_step last;
  for (const nlohmann::json& j : logged_events(file("metrics.jsonl"), "step")) {
    if (!j.contains("step") || !j["step"].is_number_integer()) continue;
    if (j["step"].get<int64_t>() > last.step)
      last = {j["step"].get<int64_t>(),
              j.contains("seconds") && j["seconds"].is_number() ? j["seconds"].get<double>() : 0.0};
  }
  return last;
}

}  // namespace petra
