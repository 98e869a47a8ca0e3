// cudnn_algorithms.json: the convolution algorithms a run's GPU stages chose (written to the run
// directory at the end of the run), read back through runtime.cudnn_algorithms so that another run
// takes the same ones first (compute/conv_algorithms.hpp).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compute/backend_factory.hpp"
#include "compute/conv_algorithms.hpp"
#include "config/config.hpp"

namespace petra {

/// The file's name in a run directory.
inline constexpr const char* conv_algorithms_file_name = "cudnn_algorithms.json";

/// The file's contents for `choices`: {"format": "petra-cudnn-algorithms", "version": 1,
/// "algorithms": [one object per record, its fields as named in conv_algorithm_record]}.
nlohmann::json conv_algorithms_json(const std::vector<conv_algorithm_record>& choices);

/// The choices a file's contents hold; `path` names the file in messages. Throws
/// config::config_error "runtime.cudnn_algorithms: '<path>': <what is wrong and where>" for
/// anything that is not such a file: another format or version, a missing, unknown or ill-typed
/// field, a direction, data type, math mode or math type that does not exist, an extent below 1,
/// an algorithm outside its direction's range, two entries for one key.
conv_algorithm_table parse_conv_algorithms(const nlohmann::json& file, const std::string& path);

/// The file at `path` read and parsed (parse_conv_algorithms), once per path, size and
/// modification time in a process (every stage's backend shares the table); throws
/// config::config_error as parse_conv_algorithms, and when the file cannot be read or is no JSON.
std::shared_ptr<const conv_algorithm_table> read_conv_algorithms(const std::string& path);

/// The CUDA part of a stage backend's options from the config: runtime.cudnn_search, and the
/// table runtime.cudnn_algorithms names (read_conv_algorithms; none when it is empty).
void set_conv_algorithm_options(const config::run_config& c, backend_options& options);

/// Writes `dir`/cudnn_algorithms.json with what this process's GPU stages of a run of `c` chose
/// (conv_algorithm_choices), atomically; nothing when they chose none (no GPU stage here).
void write_conv_algorithms(const config::run_config& c, const std::string& dir);

}  // namespace petra
