// Whole-file reads with transparent gunzip, so every reader accepts plain or .gz files.
#include "datasets/file_bytes.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "datasets/dataset.hpp"

namespace petra::data {
namespace {

struct file_closer {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

struct inflate_end {
  void operator()(z_stream* stream) const { inflateEnd(stream); }
};

// zlib counts in uInt (32 bits): feed it at most this much at a time.
constexpr std::size_t max_zlib_chunk = std::size_t{1} << 30;
// Deflate cannot compress better than about 1032:1, which bounds a believable size hint.
constexpr std::size_t max_deflate_ratio = 1032;

std::vector<uint8_t> read_raw(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    throw dataset_error(path + ": file not found");
  }
  if (std::filesystem::is_directory(status)) {
    throw dataset_error(path + ": is a directory, expected a data file");
  }
  std::unique_ptr<std::FILE, file_closer> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    throw dataset_error(path + ": cannot open: " + std::strerror(errno));
  }
  std::vector<uint8_t> bytes;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec) bytes.reserve(size);  // only a hint: the loop below reads to the end whatever the size
  uint8_t chunk[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(chunk, 1, sizeof chunk, file.get());
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (got < sizeof chunk) break;
  }
  if (std::ferror(file.get())) {
    throw dataset_error(path + ": read error: " + std::strerror(errno));
  }
  return bytes;
}

bool is_gzip(const std::vector<uint8_t>& bytes, std::size_t at = 0) {
  return bytes.size() >= at + 2 && bytes[at] == 0x1f && bytes[at + 1] == 0x8b;
}

std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& path) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    throw dataset_error(path + ": cannot start zlib inflate (out of memory?)");
  }
  std::unique_ptr<z_stream, inflate_end> guard(&stream);

  // The gzip trailer's last 4 bytes hold the uncompressed size mod 2^32: a good first guess.
  std::size_t hint = 0;
  if (in.size() >= 18) {
    const uint8_t* t = in.data() + in.size() - 4;
    hint = uint32_t(t[0]) | uint32_t(t[1]) << 8 | uint32_t(t[2]) << 16 | uint32_t(t[3]) << 24;
  }
  hint = std::min(hint, in.size() * max_deflate_ratio);
  std::vector<uint8_t> out(std::max<std::size_t>(hint, 1 << 16));

  std::size_t in_pos = 0, out_pos = 0;
  for (;;) {
    if (out_pos == out.size()) out.resize(out.size() * 2);
    const auto in_chunk = static_cast<uInt>(std::min(in.size() - in_pos, max_zlib_chunk));
    const auto out_chunk = static_cast<uInt>(std::min(out.size() - out_pos, max_zlib_chunk));
    stream.next_in = const_cast<Bytef*>(in.data() + in_pos);
    stream.avail_in = in_chunk;
    stream.next_out = out.data() + out_pos;
    stream.avail_out = out_chunk;
    const int rc = inflate(&stream, Z_NO_FLUSH);
    in_pos += in_chunk - stream.avail_in;
    out_pos += out_chunk - stream.avail_out;
    if (rc == Z_STREAM_END) {
      if (is_gzip(in, in_pos)) {  // a multi-member gzip file: inflate the next member too
        inflateReset(&stream);
        continue;
      }
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && in_pos < in.size()) continue;  // only the output was full
    if (rc == Z_BUF_ERROR) {
      throw dataset_error(path + ": truncated gzip stream: the compressed data ends after " +
                          std::to_string(in.size()) + " bytes (" + std::to_string(out_pos) +
                          " bytes inflated); re-download or re-install the file");
    }
    if (rc == Z_MEM_ERROR) throw dataset_error(path + ": out of memory while inflating");
    throw dataset_error(
        path + ": corrupt gzip data after " + std::to_string(in_pos) + " compressed bytes (zlib: " +
        (stream.msg ? stream.msg : "error " + std::to_string(rc)) + "); re-download or re-install the file");
  }
  out.resize(out_pos);
  return out;
}

}  // namespace

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::vector<uint8_t> bytes = read_raw(path);
  return is_gzip(bytes) ? gunzip(bytes, path) : bytes;
}

}  // namespace petra::data
