// What validate.cpp and validate_training.cpp share (private to petra_config): the checker that
// names a failing YAML path and where its value came from, and the sections' checks.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "config/schema.hpp"

namespace petra::config::detail {

// Numbers as a person writes them: 0.1, 2, -1e-05 (std::to_string would give 0.100000).
template <class Number>
std::string show(Number value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

class checker {
 public:
  explicit checker(const source_map& sources) : sources_(sources) {}

  /// "at runs/x.yaml:5", "in --set ...", or "(default)" for a value nobody set.
  std::string where(const std::string& path) const {
    auto it = sources_.find(path);
    return it == sources_.end() ? "(default)" : it->second;
  }

  /// Whether a file or an override set `path` (it did not keep its default).
  bool set(const std::string& path) const { return sources_.count(path) != 0; }

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw config_error(path + " " + where(path) + ": " + message);
  }

  template <class Number>
  void at_least(const std::string& path, Number value, Number minimum, const std::string& meaning) const {
    if (value < minimum) fail(path, "got " + show(value) + "; " + meaning);
  }

  template <class Number>
  void entries_positive(const std::string& path, const std::vector<Number>& values) const {
    for (size_t i = 0; i < values.size(); ++i)
      if (!(values[i] > 0))
        fail(path,
             "entry " + std::to_string(i) + " is " + show(values[i]) + "; every entry must be positive");
  }

  void same_length(const std::string& path, size_t size, const std::string& other_path,
                   size_t other_size) const {
    if (size != 0 && other_size != 0 && size != other_size)
      fail(path, "has " + std::to_string(size) + " entries but " + other_path + " " + where(other_path) +
                     " has " + std::to_string(other_size) + "; they describe the same groups and must match");
  }

 private:
  const source_map& sources_;
};

/// training: (method switches, sizes, optimizer, schedule).
void validate_training(const training_config& training, const checker& check);
/// What a model.arch cannot train with (revvit: no BN to recalibrate, no local auxiliary heads).
void validate_model_method(const model_config& model, const training_config& training, const checker& check);

}  // namespace petra::config::detail
