// ImageNet32 reader: unpickles each batch file, finds the numpy arrays in it and checks their
// dtype, shape and size and every label before appending them to the dataset.
#include "datasets/imagenet32.hpp"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "datasets/file_bytes.hpp"
#include "datasets/pickle_reader.hpp"

namespace petra::data {
namespace {

constexpr int side = 32;
constexpr int channels = 3;
constexpr int64_t image_bytes = channels * side * side;  // 3072
constexpr int classes = 1000;

using kind = pickle_value::kind;

// A numpy ndarray found in a pickle: dtype code without byte order ("u1", "f8"), shape, raw bytes.
struct numpy_array {
  std::string dtype;
  char byte_order = '|';
  std::vector<int64_t> shape;
  bool fortran_order = false;
  const uint8_t* data = nullptr;
  std::size_t size = 0;
};

bool is_global(const pickle_ptr& v, std::initializer_list<const char*> names) {
  if (!v || v->type != kind::global) return false;
  for (const char* name : names) {
    if (v->text == name) return true;
  }
  return false;
}

// numpy.dtype('u1', False, True) with BUILD state (3, '|', …): the code and byte order.
bool read_dtype(const pickle_ptr& v, numpy_array& out) {
  if (!v || v->type != kind::object || !is_global(v->callable, {"numpy.dtype"})) return false;
  const auto& args = v->arguments->items;
  if (args.empty() || !args[0]->is_string()) return false;  // text, or bytes from Python 2
  out.dtype = args[0]->as_string();
  if (!out.dtype.empty() && (out.dtype[0] == '<' || out.dtype[0] == '>' || out.dtype[0] == '|')) {
    out.byte_order = out.dtype[0];
    out.dtype.erase(0, 1);
  }
  if (v->state && v->state->type == kind::tuple && v->state->items.size() >= 2 &&
      v->state->items[1]->is_string() && v->state->items[1]->as_string().size() == 1) {
    out.byte_order = v->state->items[1]->as_string()[0];
  }
  return true;
}

bool read_shape(const pickle_ptr& v, numpy_array& out) {
  if (!v || v->type != kind::tuple) return false;
  for (const auto& dim : v->items) {
    if (dim->type != kind::integer || dim->integer < 0) return false;
    out.shape.push_back(dim->integer);
  }
  return true;
}

std::size_t item_size(const std::string& dtype) {
  if (dtype.size() < 2) return 0;
  const int n = std::atoi(dtype.c_str() + 1);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

// The array a pickled value holds, or a dataset_error naming what the value is instead.
numpy_array as_array(const pickle_ptr& v, const std::string& path, const std::string& key) {
  numpy_array a;
  auto fail = [&](const std::string& what) {
    throw dataset_error(path + ": '" + key + "' is " + what +
                        ", expected a numpy array as numpy pickles it; not the ImageNet32 pickle layout");
  };
  if (!v || v->type != kind::object) fail(v ? describe(*v) : "missing");
  bool ok = false;
  if (is_global(v->callable, {"numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"})) {
    // BUILD state: (version, shape, dtype, is_fortran, raw bytes); older numpy omits the version.
    const pickle_ptr& s = v->state;
    if (s && s->type == kind::tuple && (s->items.size() == 5 || s->items.size() == 4)) {
      const std::size_t o = s->items.size() == 5 ? 1 : 0;
      const pickle_ptr& raw = s->items[o + 3];
      ok = read_shape(s->items[o], a) && read_dtype(s->items[o + 1], a) &&
           (s->items[o + 2]->type == kind::boolean || s->items[o + 2]->type == kind::integer) &&
           raw->type == kind::bytes;
      if (ok) {
        a.fortran_order = s->items[o + 2]->integer != 0;
        a.data = raw->data;
        a.size = raw->size;
      }
    }
  } else if (is_global(v->callable, {"numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer"})) {
    // Protocol 5: _frombuffer(buffer, dtype, shape, order).
    const auto& args = v->arguments->items;
    ok = args.size() == 4 && args[0]->type == kind::bytes && read_dtype(args[1], a) &&
         read_shape(args[2], a) && args[3]->type == kind::text;
    if (ok) {
      a.fortran_order = args[3]->text == "F";
      a.data = args[0]->data;
      a.size = args[0]->size;
    }
  }
  if (!ok) fail(describe(*v) + " with arguments or state this reader does not know");
  std::size_t elements = 1;
  for (int64_t dim : a.shape) elements *= static_cast<std::size_t>(dim);
  const std::size_t item = item_size(a.dtype);
  if (item == 0 || elements * item != a.size) {
    throw dataset_error(path + ": '" + key + "' array of dtype " + a.dtype + " and " +
                        std::to_string(elements) + " elements carries " + std::to_string(a.size) +
                        " bytes; the file is corrupt");
  }
  return a;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Labels as a list of ints or a 1-D little-endian integer array.
std::vector<int64_t> read_labels(const pickle_ptr& v, const std::string& path) {
  std::vector<int64_t> labels;
  if (v && (v->type == kind::list || v->type == kind::tuple)) {
    for (std::size_t i = 0; i < v->items.size(); ++i) {
      if (v->items[i]->type != kind::integer) {
        throw dataset_error(path + ": 'labels' item " + std::to_string(i) + " is " + describe(*v->items[i]) +
                            ", expected an integer");
      }
      labels.push_back(v->items[i]->integer);
    }
    return labels;
  }
  const numpy_array a = as_array(v, path, "labels");
  const std::size_t item = item_size(a.dtype);
  if (a.shape.size() != 1 || (a.dtype[0] != 'i' && a.dtype[0] != 'u') || a.byte_order == '>' || item > 8) {
    throw dataset_error(path + ": 'labels' is an array of dtype " + a.dtype + " and shape " +
                        shape_text(a.shape) +
                        ", expected a list of ints or a 1-D little-endian integer array");
  }
  for (int64_t i = 0; i < a.shape[0]; ++i) {
    uint64_t value = 0;
    for (std::size_t b = 0; b < item; ++b) value |= uint64_t{a.data[i * item + b]} << (8 * b);
    if (a.dtype[0] == 'i' && item < 8 && (value >> (8 * item - 1)) & 1) value |= ~uint64_t{0} << (8 * item);
    labels.push_back(static_cast<int64_t>(value));
  }
  return labels;
}

// Appends one batch file's images and labels to `d`.
void append_batch(const std::string& path, dataset& d) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const pickle_ptr root = read_pickle(bytes, path);
  if (root->type != kind::dict) {
    throw dataset_error(path + ": the pickle holds " + describe(*root) +
                        ", expected a dict with keys data and labels (the ImageNet32 layout)");
  }
  const pickle_ptr data = root->find("data"), labels_value = root->find("labels");
  if (!data || !labels_value) {
    throw dataset_error(path + ": the pickle holds " + describe(*root) +
                        ", expected keys data and labels (the ImageNet32 layout)");
  }
  const numpy_array pixels = as_array(data, path, "data");
  if (pixels.dtype != "u1" || pixels.shape.size() != 2 || pixels.shape[1] != image_bytes ||
      pixels.fortran_order) {
    std::string hint;
    if (pixels.shape.size() == 2 && pixels.shape[1] == 3 * 64 * 64) hint = " (that is ImageNet64)";
    if (pixels.shape.size() == 2 && pixels.shape[1] == 3 * 16 * 16) hint = " (that is ImageNet16)";
    throw dataset_error(path + ": 'data' is an array of dtype " + pixels.dtype + " and shape " +
                        shape_text(pixels.shape) + (pixels.fortran_order ? " in Fortran order" : "") + hint +
                        ", expected uint8 (N, 3072) in C order: N images of 3×32×32");
  }
  const std::vector<int64_t> labels = read_labels(labels_value, path);
  const int64_t n = pixels.shape[0];
  if (static_cast<int64_t>(labels.size()) != n) {
    throw dataset_error(path + ": 'data' holds " + std::to_string(n) + " images but 'labels' holds " +
                        std::to_string(labels.size()) + " labels");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (labels[static_cast<std::size_t>(i)] < 1 || labels[static_cast<std::size_t>(i)] > classes) {
      throw dataset_error(path + ": label " + std::to_string(labels[static_cast<std::size_t>(i)]) +
                          " at index " + std::to_string(i) +
                          " is outside [1, 1000] (ImageNet32 labels are 1-based)");
    }
  }
  const std::size_t first = d.pixels.size();
  d.pixels.resize(first + pixels.size);
  std::memcpy(d.pixels.data() + first, pixels.data, pixels.size);
  for (int64_t label : labels) d.labels.push_back(static_cast<int32_t>(label - 1));
  d.count += n;
}

dataset empty_dataset(const std::string& name) {
  dataset d;
  d.name = name;
  d.channels = channels;
  d.height = d.width = side;
  d.num_classes = classes;
  return d;
}

}  // namespace

dataset read_imagenet32_batch(const std::string& path) {
  dataset d = empty_dataset(path);
  append_batch(path, d);
  return d;
}

dataset load_imagenet32(const std::string& dir, bool train) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  if (train) {
    for (int i = 1; i <= 10; ++i) names.push_back("train_data_batch_" + std::to_string(i));
  } else {
    names.push_back("val_data");
  }
  fs::path root = dir;
  const fs::path nested = fs::path(dir) / (train ? "Imagenet32_train" : "Imagenet32_val");
  if (!file_exists((root / names.front()).string()) && file_exists((nested / names.front()).string()))
    root = nested;
  std::vector<std::string> missing;
  for (const auto& name : names) {
    if (!file_exists((root / name).string())) missing.push_back((root / name).string());
  }
  if (!missing.empty()) {
    std::error_code ec;
    std::string message = std::string("imagenet32 ") + (train ? "train" : "val") + " split not found in '" +
                          dir + "'" +
                          (fs::is_directory(dir, ec) ? " (nor in its " + nested.filename().string() + "/)"
                                                     : " (the directory does not exist)") +
                          ": missing";
    for (const auto& path : missing) message += " " + path;
    throw dataset_error(
        message +
        "; download Imagenet32_train.zip and Imagenet32_val.zip (the pickle version, from "
        "https://image-net.org/download-images), unpack them and set data.path to the directory");
  }
  dataset d = empty_dataset(std::string("imagenet32/") + (train ? "train" : "val"));
  std::uintmax_t total = 0;  // the pickles are little more than their pixels: reserve once, not double
  for (const auto& name : names) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(root / name, ec);
    if (!ec) total += size;
  }
  d.pixels.reserve(static_cast<std::size_t>(total));
  for (const auto& name : names) append_batch((root / name).string(), d);
  return d;
}

}  // namespace petra::data
