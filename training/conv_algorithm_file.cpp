// Reading and writing cudnn_algorithms.json.
#include "training/conv_algorithm_file.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

#include "compute/serialize/atomic_file.hpp"

namespace petra {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* file_format_name = "petra-cudnn-algorithms";
constexpr int format_version = 1;

const std::set<std::string> entry_fields = {
    "device",    "direction",     "x",         "w",    "stride",          "padding", "data",
    "math_mode", "deterministic", "algorithm", "math", "workspace_bytes", "source",  "time_ms"};

/// A field's values: each an enum value and the file's name for it, one table for parsing and for
/// the record (whose fields are the names, as compute/conv_algorithms.hpp keeps them).
template <class E>
using name_table = std::vector<std::pair<E, const char*>>;

/// The element type cuDNN reads and writes ("data").
enum class element_type { fp32, bf16 };
const name_table<element_type> element_types = {{element_type::fp32, "fp32"}, {element_type::bf16, "bf16"}};

/// The backend's math mode ("math_mode"; bf16_emulated computes as fp32).
enum class math_mode { fp32, tf32, bf16 };
const name_table<math_mode> math_modes = {
    {math_mode::fp32, "fp32"}, {math_mode::tf32, "tf32"}, {math_mode::bf16, "bf16"}};

/// The cudnnMathType_t a choice was found with ("math"). No choice runs with
/// tensor_op_allow_conversion (it would round to fp16): not taken here either.
enum class math_type { fma, standard, tensor_op };
const name_table<math_type> math_types = {
    {math_type::fma, "fma"}, {math_type::standard, "default"}, {math_type::tensor_op, "tensor_op"}};

/// The three directions (compute/conv_algorithms.hpp names them).
const name_table<std::size_t>& directions() {
  static const name_table<std::size_t> table = [] {
    name_table<std::size_t> out;
    for (std::size_t i = 0; i < conv_direction_names().size(); ++i)
      out.push_back({i, conv_direction_names()[i]});
    return out;
  }();
  return table;
}

template <class E>
const char* name_of(E value, const name_table<E>& names) {
  for (const auto& n : names)
    if (n.first == value) return n.second;
  throw std::logic_error("conv_algorithm_file: a value without a name");
}

/// The reader of one file: every problem named with the file and where in it.
class reader {
 public:
  explicit reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw config::config_error("runtime.cudnn_algorithms: '" + path_ + "': " + what +
                               " (a run writes this file as " + conv_algorithms_file_name +
                               " in its directory)");
  }

  const json& field(const json& object, const std::string& where, const std::string& name) const {
    auto it = object.find(name);
    if (it == object.end()) fail(where + " has no \"" + name + "\"");
    return *it;
  }

  int64_t integer(const json& v, const std::string& where, int64_t min, int64_t max) const {
    if (!v.is_number_integer())
      fail(where + " is " + std::string(v.type_name()) + " " + v.dump() + ", expected an integer");
    // Unsigned values above int64's range read as negative here: refused by `min` either way.
    const int64_t i = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                          ? -1
                          : v.get<int64_t>();
    if (i < min || i > max)
      fail(where + " is " + v.dump() + ", outside " + std::to_string(min) + "-" + std::to_string(max));
    return i;
  }

  /// The enum value of a field's name in `names`, or a failure that lists the names.
  template <class E>
  E one_of(const json& v, const std::string& where, const name_table<E>& names) const {
    std::string listed;
    for (const auto& n : names) listed += std::string(listed.empty() ? "" : ", ") + n.second;
    if (!v.is_string()) fail(where + " is " + v.dump() + ", expected one of " + listed);
    const std::string s = v.get<std::string>();
    for (const auto& n : names)
      if (s == n.second) return n.first;
    fail(where + " is \"" + s + "\", not one of " + listed);
  }

  std::array<int64_t, 4> extents(const json& v, const std::string& where) const {
    if (!v.is_array() || v.size() != 4) fail(where + " is " + v.dump() + ", expected 4 extents [N, C, H, W]");
    std::array<int64_t, 4> out{};
    for (std::size_t i = 0; i < 4; ++i)
      out[i] = integer(v[i], where + "[" + std::to_string(i) + "]", 1, INT32_MAX);
    return out;
  }

  conv_algorithm_record entry(const json& e, const std::string& where) const {
    if (!e.is_object()) fail(where + " is " + std::string(e.type_name()) + ", expected an object");
    for (const auto& item : e.items())
      if (!entry_fields.count(item.key())) fail(where + " has an unknown field \"" + item.key() + "\"");
    conv_algorithm_record r;
    r.device = static_cast<int>(integer(field(e, where, "device"), where + ".device", 0, 1023));
    r.direction =
        conv_direction_names()[one_of(field(e, where, "direction"), where + ".direction", directions())];
    r.x = extents(field(e, where, "x"), where + ".x");
    r.w = extents(field(e, where, "w"), where + ".w");
    if (r.x[1] != r.w[1])
      fail(where + ": x has " + std::to_string(r.x[1]) + " channels and w " + std::to_string(r.w[1]) +
           ": they must agree");
    r.stride = static_cast<int>(integer(field(e, where, "stride"), where + ".stride", 1, 1 << 20));
    r.padding = static_cast<int>(integer(field(e, where, "padding"), where + ".padding", 0, 1 << 20));
    const element_type data = one_of(field(e, where, "data"), where + ".data", element_types);
    const math_mode mode = one_of(field(e, where, "math_mode"), where + ".math_mode", math_modes);
    r.data = name_of(data, element_types);
    r.math_mode = name_of(mode, math_modes);
    if ((data == element_type::bf16) != (mode == math_mode::bf16))
      fail(where + ": data \"" + r.data + "\" with math_mode \"" + r.math_mode +
           "\": bf16 data goes with bf16 math, fp32 data with fp32 or tf32");
    const json& det = field(e, where, "deterministic");
    if (!det.is_boolean()) fail(where + ".deterministic is " + det.dump() + ", expected true or false");
    r.deterministic = det.get<bool>();
    const int count = conv_algorithm_count(r.direction);
    r.algorithm = static_cast<int>(integer(field(e, where, "algorithm"), where + ".algorithm", 0, count - 1));
    r.math = name_of(one_of(field(e, where, "math"), where + ".math", math_types), math_types);
    r.workspace_bytes = static_cast<uint64_t>(
        integer(field(e, where, "workspace_bytes"), where + ".workspace_bytes", 0, INT64_MAX));
    if (auto s = e.find("source"); s != e.end()) {
      if (!s->is_string()) fail(where + ".source is " + s->dump() + ", expected a string");
      r.source = s->get<std::string>();
    }
    if (auto t = e.find("time_ms"); t != e.end()) {
      if (!t->is_number()) fail(where + ".time_ms is " + t->dump() + ", expected a number");
      r.time_ms = t->get<double>();
    }
    return r;
  }

  conv_algorithm_table table(const json& file) const {
    if (!file.is_object()) fail("the file holds " + std::string(file.type_name()) + ", expected an object");
    const json& format = field(file, "the file", "format");
    if (!format.is_string() || format.get<std::string>() != file_format_name)
      fail("\"format\" is " + format.dump() + ", expected \"" + file_format_name + "\"");
    integer(field(file, "the file", "version"), "\"version\"", format_version, format_version);
    for (const auto& item : file.items())
      if (item.key() != "format" && item.key() != "version" && item.key() != "algorithms")
        fail("the file has an unknown field \"" + item.key() + "\"");
    const json& list = field(file, "the file", "algorithms");
    if (!list.is_array()) fail("\"algorithms\" is " + std::string(list.type_name()) + ", expected a list");
    conv_algorithm_table t;
    t.path = path_;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = "algorithms[" + std::to_string(i) + "]";
      conv_algorithm_record r = entry(list[i], where);
      for (std::size_t j = 0; j < t.entries.size(); ++j)
        if (t.entries[j].same_key(r))
          fail(where + " and algorithms[" + std::to_string(j) + "] are both for " + r.key_str() +
               ": keep one");
      t.entries.push_back(std::move(r));
    }
    return t;
  }

 private:
  std::string path_;
};

}  // namespace

json conv_algorithms_json(const std::vector<conv_algorithm_record>& choices) {
  json list = json::array();
  for (const conv_algorithm_record& r : choices)
    list.push_back({{"device", r.device},
                    {"direction", r.direction},
                    {"x", r.x},
                    {"w", r.w},
                    {"stride", r.stride},
                    {"padding", r.padding},
                    {"data", r.data},
                    {"math_mode", r.math_mode},
                    {"deterministic", r.deterministic},
                    {"algorithm", r.algorithm},
                    {"math", r.math},
                    {"workspace_bytes", r.workspace_bytes},
                    {"source", r.source},
                    {"time_ms", r.time_ms}});
  return {{"format", file_format_name}, {"version", format_version}, {"algorithms", list}};
}

conv_algorithm_table parse_conv_algorithms(const json& file, const std::string& path) {
  return reader(path).table(file);
}

std::shared_ptr<const conv_algorithm_table> read_conv_algorithms(const std::string& path) {
  const reader r(path);
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error) r.fail("cannot be read: " + error.message());
  const auto stamp = fs::last_write_time(path, error).time_since_epoch().count();
  const std::string key = path + "|" + std::to_string(size) + "|" + std::to_string(stamp);
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const conv_algorithm_table>> read;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = read.find(key); it != read.end()) return it->second;
  std::ifstream in(path);
  if (!in) r.fail("cannot be opened for reading");
  json file;
  try {
    file = json::parse(in);
  } catch (const json::exception& e) {
    r.fail(std::string("is not JSON: ") + e.what());
  }
  auto table = std::make_shared<const conv_algorithm_table>(parse_conv_algorithms(file, path));
  read.emplace(key, table);
  return table;
}

void set_conv_algorithm_options(const config::run_config& c, backend_options& options) {
  switch (c.runtime.cudnn_search) {
    case config::cudnn_search_mode::automatic:
      options.cudnn_search = conv_search::automatic;
      break;
    case config::cudnn_search_mode::heuristic:
      options.cudnn_search = conv_search::heuristic;
      break;
    case config::cudnn_search_mode::timed:
      options.cudnn_search = conv_search::timed;
      break;
  }
  options.cudnn_recorded =
      c.runtime.cudnn_algorithms.empty() ? nullptr : read_conv_algorithms(c.runtime.cudnn_algorithms);
}

void write_conv_algorithms(const config::run_config& c, const std::string& dir) {
  backend_options options;
  options.deterministic = c.runtime.deterministic;
  set_conv_algorithm_options(c, options);
  const std::vector<conv_algorithm_record> choices = conv_algorithm_choices(options);
  if (choices.empty()) return;
  write_file_atomically((fs::path(dir) / conv_algorithms_file_name).string(),
                        [&](std::ostream& out) { out << conv_algorithms_json(choices).dump(1) << "\n"; });
}

}  // namespace petra
