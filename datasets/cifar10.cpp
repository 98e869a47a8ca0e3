// CIFAR-10 reader: every file's size and every label is checked; pixel planes are already C×H×W.
#include "datasets/cifar10.hpp"

#include <cstring>
#include <filesystem>

#include "datasets/file_bytes.hpp"

namespace petra::data {
namespace {

constexpr int cifar_side = 32;
constexpr int cifar_channels = 3;
constexpr int cifar_classes = 10;
constexpr std::size_t cifar_image_bytes = cifar_channels * cifar_side * cifar_side;  // 3072
constexpr std::size_t cifar_record_bytes = 1 + cifar_image_bytes;                    // 3073

std::vector<std::string> split_files(bool train) {
  if (!train) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  return names;
}

// `dir` itself when it holds the first file, else the archive's own sub-directory when that does.
std::filesystem::path batches_dir(const std::string& dir, const std::string& first_file) {
  const std::filesystem::path nested = std::filesystem::path(dir) / "cifar-10-batches-bin";
  if (!file_exists((std::filesystem::path(dir) / first_file).string()) &&
      file_exists((nested / first_file).string())) {
    return nested;
  }
  return dir;
}

}  // namespace

dataset load_cifar10(const std::string& dir, bool train) {
  const std::vector<std::string> names = split_files(train);
  const std::filesystem::path root = batches_dir(dir, names.front());
  std::vector<std::string> missing;
  for (const auto& name : names) {
    if (!file_exists((root / name).string())) missing.push_back((root / name).string());
  }
  if (!missing.empty()) {
    std::error_code ec;
    std::string message = std::string("cifar10 ") + (train ? "train" : "test") +
                          " split not found in directory '" + dir + "'" +
                          (std::filesystem::is_directory(dir, ec) ? " (nor in its cifar-10-batches-bin/)"
                                                                  : " (the directory does not exist)") +
                          ": missing";
    for (const auto& path : missing) message += " " + path;
    throw dataset_error(
        message +
        "; download the binary version (cifar-10-binary.tar.gz from "
        "https://www.cs.toronto.edu/~kriz/cifar.html), unpack it and set data.path to the directory");
  }

  dataset d;
  d.name = std::string("cifar10/") + (train ? "train" : "test");
  d.channels = cifar_channels;
  d.height = d.width = cifar_side;
  d.num_classes = cifar_classes;
  for (const auto& name : names) {
    const std::string path = (root / name).string();
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    if (bytes.empty() || bytes.size() % cifar_record_bytes != 0) {
      throw dataset_error(path + ": file size " + std::to_string(bytes.size()) +
                          " bytes is not a positive multiple of the 3073-byte CIFAR-10 record (1 label + "
                          "3×32×32 pixels); the file is truncated or not the binary version");
    }
    const std::size_t records = bytes.size() / cifar_record_bytes;
    const std::size_t first_pixel = d.pixels.size();
    d.pixels.resize(first_pixel + records * cifar_image_bytes);
    for (std::size_t r = 0; r < records; ++r) {
      const uint8_t* record = bytes.data() + r * cifar_record_bytes;
      if (record[0] >= cifar_classes) {
        throw dataset_error(
            path + ": label " + std::to_string(record[0]) + " at record " + std::to_string(r) +
            " is outside [0, 10); the file is corrupt or not CIFAR-10 (CIFAR-100 has 2 label bytes)");
      }
      d.labels.push_back(record[0]);
      std::memcpy(d.pixels.data() + first_pixel + r * cifar_image_bytes, record + 1, cifar_image_bytes);
    }
  }
  d.count = static_cast<int64_t>(d.labels.size());
  return d;
}

}  // namespace petra::data
