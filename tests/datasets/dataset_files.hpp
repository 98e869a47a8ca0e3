// Test helpers: a self-removing temp directory and writers for small synthetic IDX / CIFAR files.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace petra::data::testing {

/// A fresh directory under the system temp dir, removed with everything in it on destruction.
class temp_dir {
 public:
  temp_dir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("petra-datasets-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  /// The path of `name` inside the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// doctest's substring matcher for a std::string (doctest::Contains takes only its own String).
inline doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("test helper: cannot write " + path);
}

/// `bytes` as one gzip member (zlib deflate with a gzip wrapper).
inline std::vector<uint8_t> gzip(const std::vector<uint8_t>& bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("test helper: deflateInit2 failed");
  }
  std::vector<uint8_t> out(deflateBound(&stream, static_cast<uLong>(bytes.size())) + 32);
  stream.next_in = const_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (rc != Z_STREAM_END) throw std::runtime_error("test helper: deflate did not finish");
  return out;
}

/// An IDX file: big-endian magic, big-endian dims, then `data`.
inline std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                                      const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes;
  auto put = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(v >> shift));
  };
  put(magic);
  for (uint32_t dim : dims) put(dim);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

/// `count` images of height×width whose pixel k of image i is (7·i + 3·k + 1) mod 256.
inline std::vector<uint8_t> pattern_pixels(int count, int height, int width) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < count; ++i) {
    for (int k = 0; k < height * width; ++k)
      pixels.push_back(static_cast<uint8_t>((7 * i + 3 * k + 1) % 256));
  }
  return pixels;
}

/// CIFAR-10 binary records: label, then 3072 pixel bytes (pixel k of record r is (r + k) mod 256 + first).
inline std::vector<uint8_t> cifar_records(const std::vector<uint8_t>& labels, int first = 0) {
  std::vector<uint8_t> bytes;
  for (std::size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(labels[r]);
    for (int k = 0; k < 3072; ++k) bytes.push_back(static_cast<uint8_t>((int(r) + k + first) % 256));
  }
  return bytes;
}

}  // namespace petra::data::testing
