// IDX reader: validates magic, rank, sizes and labels before trusting a byte of data.
#include "datasets/idx.hpp"

#include <cstdio>
#include <filesystem>

#include "datasets/file_bytes.hpp"

namespace petra::data {
namespace {

constexpr uint32_t idx_uint8_magic = 0x00000800;  // 0, 0, type 0x08 = unsigned byte, then the rank

std::string hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", value);
  return text;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// An IDX uint8 file's bytes, its dimensions and where its data starts.
struct idx_file {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> dims;
  std::size_t data_offset = 0;
};

// Reads and checks an IDX uint8 file of `rank` dimensions; `what` says what it should hold, for messages.
idx_file read_idx(const std::string& path, std::size_t rank, const std::string& what) {
  idx_file file{read_file_bytes(path), {}, 4 + 4 * rank};
  const auto& bytes = file.bytes;
  if (bytes.size() < 4) {
    throw dataset_error(path + ": truncated IDX file: expected at least 4 bytes of header, found " +
                        std::to_string(bytes.size()));
  }
  const uint32_t magic = big_endian_u32(bytes.data());
  const uint32_t expected = idx_uint8_magic | uint32_t(rank);
  if (magic != expected) {
    if ((magic & 0xFFFFFF00u) == idx_uint8_magic) {
      throw dataset_error(path + ": wrong IDX rank: expected " + std::to_string(rank) + " dimensions (" +
                          what + "), found " + std::to_string(magic & 0xFF) + " (magic " + hex32(magic) +
                          "); are the image and label files swapped?");
    }
    throw dataset_error(path + ": wrong magic number: expected " + hex32(expected) + " (IDX uint8, " + what +
                        "), found " + hex32(magic) + "; this is not an IDX uint8 file of " + what);
  }
  if (bytes.size() < file.data_offset) {
    throw dataset_error(path + ": truncated IDX header: expected " + std::to_string(file.data_offset) +
                        " bytes, found " + std::to_string(bytes.size()));
  }
  // Multiply only while the product fits in the file, so it cannot overflow; a product cut short
  // already proves the file too small and is reported as a lower bound.
  const uint64_t available = bytes.size() - file.data_offset;
  uint64_t data_bytes = 1;
  bool exact = true;
  for (std::size_t i = 0; i < rank; ++i) {
    const uint32_t dim = big_endian_u32(bytes.data() + 4 + 4 * i);
    if (dim == 0 || dim > 0x7FFFFFFF) {
      throw dataset_error(path + ": bad IDX dimension " + std::to_string(i) + " = " + std::to_string(dim) +
                          " (" + what + ")");
    }
    file.dims.push_back(dim);
    if (data_bytes <= available) {
      data_bytes *= dim;
    } else {
      exact = false;
    }
  }
  if (data_bytes != available) {
    std::string shape;
    for (int64_t dim : file.dims) shape += (shape.empty() ? "" : "×") + std::to_string(dim);
    const bool truncated = data_bytes > available;
    const char* bound = !exact ? "at least " : truncated ? "" : "exactly ";
    throw dataset_error(path + ": " + (truncated ? "truncated" : "oversized") + " IDX file: header says " +
                        shape + " (" + what + "), so expected " + bound +
                        std::to_string(file.data_offset + data_bytes) + " bytes, found " +
                        std::to_string(bytes.size()) + "; re-download or re-install the file");
  }
  return file;
}

// The `.gz` file if there is one, else the plain one, else "" with both candidates added to `missing`.
std::string gz_or_plain(const std::string& dir, const std::string& stem, std::vector<std::string>& missing) {
  const std::string plain = (std::filesystem::path(dir) / stem).string();
  for (const std::string& path : {plain + ".gz", plain}) {
    if (file_exists(path)) return path;
  }
  missing.push_back(plain + ".gz");
  missing.push_back(plain);
  return {};
}

}  // namespace

dataset load_idx(const std::string& images_path, const std::string& labels_path, int num_classes) {
  if (num_classes < 1 || num_classes > 256) {
    throw std::invalid_argument("load_idx: num_classes = " + std::to_string(num_classes) +
                                ", expected 1..256 (labels are one byte)");
  }
  idx_file images = read_idx(images_path, 3, "images N×H×W");
  const idx_file labels = read_idx(labels_path, 1, "labels N");
  if (images.dims[0] != labels.dims[0]) {
    throw dataset_error(images_path + " holds " + std::to_string(images.dims[0]) + " images but " +
                        labels_path + " holds " + std::to_string(labels.dims[0]) +
                        " labels; the two files must be of one split");
  }
  dataset d;
  d.name = images_path;
  d.count = images.dims[0];
  d.channels = 1;
  d.height = static_cast<int>(images.dims[1]);
  d.width = static_cast<int>(images.dims[2]);
  d.num_classes = num_classes;
  d.labels.resize(static_cast<std::size_t>(d.count));
  for (int64_t i = 0; i < d.count; ++i) {
    const uint8_t label = labels.bytes[labels.data_offset + static_cast<std::size_t>(i)];
    if (label >= num_classes) {
      throw dataset_error(labels_path + ": label " + std::to_string(label) + " at index " +
                          std::to_string(i) + " is outside [0, " + std::to_string(num_classes) +
                          "); the file is corrupt");
    }
    d.labels[static_cast<std::size_t>(i)] = label;
  }
  // The pixels are the tail of the file: shift them down in place rather than allocate a second 47 MB.
  images.bytes.erase(images.bytes.begin(),
                     images.bytes.begin() + static_cast<std::ptrdiff_t>(images.data_offset));
  d.pixels = std::move(images.bytes);
  return d;
}

dataset load_mnist_like(const std::string& dir, bool train, dataset_kind kind) {
  const std::string name = name_of(kind);
  const std::string split = train ? "train" : "t10k";
  std::vector<std::string> missing;
  const std::string images_path = gz_or_plain(dir, split + "-images-idx3-ubyte", missing);
  const std::string labels_path = gz_or_plain(dir, split + "-labels-idx1-ubyte", missing);
  if (images_path.empty() || labels_path.empty()) {
    std::error_code ec;
    std::string message =
        name + " " + (train ? "train" : "test") + " split not found in directory '" + dir + "'" +
        (std::filesystem::is_directory(dir, ec) ? "" : " (the directory does not exist)") + ": looked for";
    for (const auto& path : missing) message += " " + path;
    message +=
        kind == dataset_kind::fashion_mnist
            ? "; install the Debian package dataset-fashion-mnist (apt install dataset-fashion-mnist, "
              "files in /usr/share/datasets/fashion-mnist) or set data.path to a directory holding them"
            : "; download the four MNIST idx files (.gz or plain) into that directory or set data.path";
    throw dataset_error(message);
  }
  dataset d = load_idx(images_path, labels_path, 10);
  d.name = name + (train ? "/train" : "/test");
  return d;
}

}  // namespace petra::data
