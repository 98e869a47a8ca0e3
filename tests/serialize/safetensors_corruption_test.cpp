// load_safetensors on damaged files: every defect is refused with a message that names the
// file and the defect; nothing is half-loaded.
#include <doctest/doctest.h>

#include <cstring>

#include "compute/serialize/safetensors.hpp"
#include "tests/serialize/scratch_directory.hpp"

using namespace petra;
using petra::testing::read_bytes;
using petra::testing::scratch_directory;
using petra::testing::write_bytes;

namespace {

std::string length_field(std::uint64_t length) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
  return bytes;
}

// A file with this header text (padded as a writer would) and `data_bytes` zero bytes.
std::string file_with_header(std::string header, std::size_t data_bytes) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return length_field(header.size()) + header + std::string(data_bytes, '\0');
}

// Loads `path` and returns the safetensors_error message ("" when loading succeeded).
std::string load_error(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const safetensors_error& e) {
    return e.what();
  }
  return "";
}

void check_refused(const std::string& path, const std::string& problem) {
  const std::string message = load_error(path);
  CAPTURE(message);
  CHECK(message.find("'" + path + "'") != std::string::npos);
  CHECK(message.find(problem) != std::string::npos);
}

const char* const entry_a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

}  // namespace

TEST_CASE("a missing file or a directory is refused") {
  scratch_directory dir;
  check_refused(dir.file("absent.safetensors"), "no such file");
  check_refused(dir.file(""), "not a regular file");
}

TEST_CASE("every truncation of a valid file is refused") {
  scratch_directory dir;
  const std::string good = dir.file("good.safetensors");
  save_safetensors(good, {{"w", tensor::zeros({3, 4})}, {"b", tensor::zeros({5})}}, {{"step", "3"}});
  const std::string bytes = read_bytes(good);
  const std::string cut = dir.file("cut.safetensors");
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    CAPTURE(size);
    write_bytes(cut, bytes.substr(0, size));
    CHECK(load_error(cut) != "");
  }
  const std::size_t header_end = 8 + (bytes[0] & 0xff);
  write_bytes(cut, bytes.substr(0, 5));
  check_refused(cut, "only 5 bytes, shorter than the 8-byte header length");
  write_bytes(cut, bytes.substr(0, 40));
  check_refused(cut, "exceeds the 32 bytes that follow it");
  write_bytes(cut, bytes.substr(0, header_end));
  check_refused(cut, "lie outside the data section of 0 bytes");
  write_bytes(cut, bytes.substr(0, bytes.size() - 1));
  check_refused(cut, "lie outside the data section");
  // One byte too many is a defect too.
  write_bytes(cut, bytes + "x");
  check_refused(cut, "1 data bytes after the last tensor belong to no tensor");
}

TEST_CASE("header length fields that cannot be right are refused") {
  scratch_directory dir;
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, length_field(std::uint64_t{1} << 40) + "{}");
  check_refused(path, "is absurd");
  write_bytes(path, length_field(max_safetensors_header_bytes + 1) + "{}");
  check_refused(path, "is absurd");
  write_bytes(path, length_field(0));
  check_refused(path, "not valid JSON");
}

TEST_CASE("a header that is not a JSON object is refused") {
  scratch_directory dir;
  const std::string path = dir.file("bad.safetensors");
  write_bytes(path, file_with_header("{\"a\": {\"dtype\": \"F3", 0));
  check_refused(path, "not valid JSON");
  write_bytes(path, file_with_header("\x89PNG garbage", 0));
  check_refused(path, "not valid JSON");
  write_bytes(path, file_with_header("[1, 2, 3]", 0));
  check_refused(path, "not a JSON object");
}

TEST_CASE("a flipped dtype is refused, naming the tensor and the dtype") {
  scratch_directory dir;
  const std::string path = dir.file("flipped.safetensors");
  save_safetensors(path, {{"w", tensor::zeros({2, 2})}});
  std::string bytes = read_bytes(path);
  bytes.replace(bytes.find("F32"), 3, "F16");  // same length: offsets stay valid
  write_bytes(path, bytes);
  check_refused(path, "tensor 'w' has dtype F16; petra reads only F32");
  write_bytes(path, file_with_header(R"({"x":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", 4));
  check_refused(path, "tensor 'x' has dtype BF16");
  write_bytes(path, file_with_header(R"({"x":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", 8));
  check_refused(path, "\"dtype\" is not a string");
}

TEST_CASE("tensor entries with missing or malformed fields are refused") {
  scratch_directory dir;
  const std::string path = dir.file("bad.safetensors");
  const auto refuse = [&](const std::string& header, std::size_t data_bytes, const std::string& problem) {
    write_bytes(path, file_with_header(header, data_bytes));
    check_refused(path, problem);
  };
  refuse(R"({"x":{"shape":[2],"data_offsets":[0,8]}})", 8, "tensor 'x': entry has no \"dtype\"");
  refuse(R"({"x":{"dtype":"F32","data_offsets":[0,8]}})", 8, "tensor 'x': entry has no \"shape\"");
  refuse(R"({"x":{"dtype":"F32","shape":[2]}})", 8, "tensor 'x': entry has no \"data_offsets\"");
  refuse(R"({"x":[1,2]})", 8, "tensor 'x': entry is not a JSON object");
  refuse(R"({"x":{"dtype":"F32","shape":[-1,2],"data_offsets":[0,8]}})", 8, "negative or absurd dimension");
  refuse(R"({"x":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8, "holds a non-integer");
  refuse(R"({"x":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", 8, "\"shape\" is not an array");
  refuse(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8,
         "is not a pair of non-negative integers");
  refuse(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8,
         "is not a pair of non-negative integers");
  refuse(R"({"__metadata__":{"step":3}})", 0, "metadata 'step' is not a string");
  refuse(R"({"__metadata__":"step 3"})", 0, "\"__metadata__\" is not an object");
}

TEST_CASE("broken data offsets are refused") {
  scratch_directory dir;
  const std::string path = dir.file("bad.safetensors");
  const auto refuse = [&](const std::string& header, std::size_t data_bytes, const std::string& problem) {
    write_bytes(path, file_with_header(header, data_bytes));
    check_refused(path, problem);
  };
  refuse(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,100]}})", 8,
         "data_offsets [0, 100) lie outside the data section of 8 bytes");
  refuse(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "lie outside the data section");
  refuse(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
         "shape (3) needs 12 bytes but data_offsets [0, 8) hold 8");
  refuse(R"({"x":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", 8,
         "needs too many bytes");
  refuse(std::string("{") + entry_a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
         "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  refuse(std::string("{") + entry_a + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", 20,
         "data bytes [8, 12) belong to no tensor");
  refuse(std::string("{") + entry_a + R"(,"b":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})", 8,
         "overlap");
  refuse(std::string("{") + entry_a + "}", 12, "4 data bytes after the last tensor");
}

TEST_CASE("a file written by another writer, with its own key order, loads in data order") {
  scratch_directory dir;
  const std::string path = dir.file("foreign.safetensors");
  // Header keys in another order than the data, metadata last, no spaces trimmed by us.
  std::string data(12, '\0');
  const float values[3] = {1.0f, 2.0f, 3.0f};
  std::memcpy(data.data(), values, 12);
  std::string bytes = file_with_header(
      R"({ "second": {"data_offsets": [8, 12], "shape": [1], "dtype": "F32"},)"
      R"( "first": {"shape": [1, 2], "dtype": "F32", "data_offsets": [0, 8]}, "__metadata__": {"format": "pt"} })",
      0);
  write_bytes(path, bytes + data);
  const safetensors_file loaded = load_safetensors(path);
  REQUIRE(loaded.tensors.size() == 2);
  CHECK(loaded.tensors[0].first == "first");
  CHECK(loaded.tensors[0].second.to_vector() == std::vector<float>{1.0f, 2.0f});
  CHECK(loaded.tensors[1].first == "second");
  CHECK(loaded.tensors[1].second.to_vector() == std::vector<float>{3.0f});
  CHECK(loaded.metadata.at("format") == "pt");
}
