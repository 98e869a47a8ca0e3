// IDX reader: synthetic files, plain and gzipped, load exactly; every corruption is reported by name.
#include <doctest/doctest.h>

#include "datasets/datasets.hpp"
#include "tests/datasets/dataset_files.hpp"

using namespace petra::data;
using namespace petra::data::testing;

namespace {

constexpr uint32_t images_magic = 0x00000803;
constexpr uint32_t labels_magic = 0x00000801;

// A 3-image 4×5 split written as MNIST-named files, gzipped or plain.
void write_split(const temp_dir& dir, const std::string& split, bool gz,
                 const std::vector<uint8_t>& labels = {3, 0, 9}) {
  auto images = idx_bytes(images_magic, {3, 4, 5}, pattern_pixels(3, 4, 5));
  auto label_file = idx_bytes(labels_magic, {static_cast<uint32_t>(labels.size())}, labels);
  const std::string suffix = gz ? ".gz" : "";
  write_file(dir.file(split + "-images-idx3-ubyte" + suffix), gz ? gzip(images) : images);
  write_file(dir.file(split + "-labels-idx1-ubyte" + suffix), gz ? gzip(label_file) : label_file);
}

}  // namespace

TEST_CASE("load_idx reads plain and gzipped files to the same bytes") {
  temp_dir dir;
  write_split(dir, "train", false);
  write_split(dir, "train", true);
  for (const char* suffix : {"", ".gz"}) {
    CAPTURE(suffix);
    const dataset d = load_idx(dir.file(std::string("train-images-idx3-ubyte") + suffix),
                               dir.file(std::string("train-labels-idx1-ubyte") + suffix), 10);
    CHECK(d.count == 3);
    CHECK(d.channels == 1);
    CHECK(d.height == 4);
    CHECK(d.width == 5);
    CHECK(d.num_classes == 10);
    CHECK(d.pixels == pattern_pixels(3, 4, 5));
    CHECK(d.labels == std::vector<int32_t>{3, 0, 9});
  }
}

TEST_CASE("gzip is detected by magic bytes, not by the file name") {
  temp_dir dir;
  write_file(dir.file("images"), gzip(idx_bytes(images_magic, {3, 4, 5}, pattern_pixels(3, 4, 5))));
  write_file(dir.file("labels"), idx_bytes(labels_magic, {3}, {1, 2, 3}));
  const dataset d = load_idx(dir.file("images"), dir.file("labels"), 10);
  CHECK(d.pixels == pattern_pixels(3, 4, 5));
}

TEST_CASE("load_mnist_like finds .gz or plain files and names the split") {
  temp_dir dir;
  write_split(dir, "train", true);
  write_split(dir, "t10k", false, {1, 1, 2});
  const dataset train = load_mnist_like(dir.str(), true, dataset_kind::fashion_mnist);
  CHECK(train.name == "fashion-mnist/train");
  CHECK(train.labels == std::vector<int32_t>{3, 0, 9});
  const dataset test = load_dataset("mnist", dir.str(), false);
  CHECK(test.name == "mnist/test");
  CHECK(test.labels == std::vector<int32_t>{1, 1, 2});
}

TEST_CASE("a missing split names the directory, the files and the fix") {
  temp_dir dir;
  const std::string missing = dir.file("nowhere");
  CHECK_THROWS_WITH_AS(load_dataset("fashion-mnist", missing, true),
                       contains(missing + "/train-images-idx3-ubyte.gz"), dataset_error);
  CHECK_THROWS_WITH_AS(load_dataset("fashion-mnist", missing, true), contains("dataset-fashion-mnist"),
                       dataset_error);
  CHECK_THROWS_WITH_AS(load_dataset("fashion-mnist", missing, true), contains("does not exist"),
                       dataset_error);
  write_split(dir, "train", true);
  std::filesystem::remove(dir.file("train-labels-idx1-ubyte.gz"));
  CHECK_THROWS_WITH_AS(load_mnist_like(dir.str(), true), contains("train-labels-idx1-ubyte"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(dir.file("absent"), dir.file("absent2"), 10),
                       contains(dir.file("absent") + ": file not found"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(dir.str(), dir.file("train-images-idx3-ubyte.gz"), 10),
                       contains("is a directory"), dataset_error);
  CHECK_THROWS_WITH_AS(load_dataset("imagenet21k", dir.str(), true),
                       contains("unknown dataset kind 'imagenet21k'"), std::invalid_argument);
}

TEST_CASE("IDX header errors: magic, rank, dimensions") {
  temp_dir dir;
  const std::string labels = dir.file("labels");
  write_file(labels, idx_bytes(labels_magic, {3}, {0, 1, 2}));
  const std::string images = dir.file("images");

  write_file(images, idx_bytes(0x12345678, {3, 4, 5}, pattern_pixels(3, 4, 5)));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("wrong magic number"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("expected 0x00000803"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("found 0x12345678"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains(images + ":"), dataset_error);

  // Image and label files swapped: the rank is what is wrong.
  CHECK_THROWS_WITH_AS(load_idx(labels, labels, 10), contains("wrong IDX rank: expected 3 dimensions"),
                       dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(labels, labels, 10), contains("found 1"), dataset_error);

  write_file(images, idx_bytes(images_magic, {3, 0, 5}, {}));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("bad IDX dimension 1 = 0"), dataset_error);

  write_file(images, {0x00, 0x00});
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("expected at least 4 bytes of header, found 2"),
                       dataset_error);
  write_file(images, idx_bytes(images_magic, {3}, {}));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10),
                       contains("truncated IDX header: expected 16 bytes, found 8"), dataset_error);
  CHECK_THROWS_AS(load_idx(images, labels, 0), std::invalid_argument);
}

TEST_CASE("IDX size errors: truncated and oversized data, with expected and found bytes") {
  temp_dir dir;
  const std::string labels = dir.file("labels");
  write_file(labels, idx_bytes(labels_magic, {3}, {0, 1, 2}));
  const std::string images = dir.file("images");

  auto pixels = pattern_pixels(3, 4, 5);  // 60 bytes after a 16-byte header
  pixels.pop_back();
  write_file(images, idx_bytes(images_magic, {3, 4, 5}, pixels));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("truncated IDX file"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("3×4×5"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("expected 76 bytes, found 75"), dataset_error);

  // A header claiming 2^31−1 images in a tiny file: no overflow, a lower bound in the message.
  write_file(images, idx_bytes(images_magic, {0x7FFFFFFF, 0x7FFFFFFF, 0x7FFFFFFF}, pixels));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("expected at least"), dataset_error);

  pixels.push_back(0);
  pixels.push_back(0);
  write_file(images, gzip(idx_bytes(images_magic, {3, 4, 5}, pixels)));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("oversized IDX file"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("expected exactly 76 bytes, found 77"),
                       dataset_error);
}

TEST_CASE("corrupt and truncated gzip streams are reported, not read as garbage") {
  temp_dir dir;
  const std::string labels = dir.file("labels");
  write_file(labels, idx_bytes(labels_magic, {3}, {0, 1, 2}));
  const std::string images = dir.file("images.gz");
  const auto good = gzip(idx_bytes(images_magic, {3, 4, 5}, pattern_pixels(3, 4, 5)));

  auto bad_crc = good;
  bad_crc[bad_crc.size() - 8] ^= 0xFF;  // the CRC-32 in the gzip trailer
  write_file(images, bad_crc);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains(images + ": corrupt gzip data"), dataset_error);

  auto bad_method = good;
  bad_method[2] = 0x07;  // compression method must be 8 (deflate)
  write_file(images, bad_method);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("corrupt gzip data"), dataset_error);

  const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  write_file(images, cut);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains(images + ": truncated gzip stream"),
                       dataset_error);
}

TEST_CASE("labels out of range and count mismatches name index, value and both counts") {
  temp_dir dir;
  const std::string images = dir.file("images");
  const std::string labels = dir.file("labels");
  write_file(images, idx_bytes(images_magic, {3, 4, 5}, pattern_pixels(3, 4, 5)));

  write_file(labels, idx_bytes(labels_magic, {3}, {0, 1, 11}));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains(labels + ": label 11 at index 2"),
                       dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("[0, 10)"), dataset_error);
  CHECK_NOTHROW(load_idx(images, labels, 12));

  write_file(labels, idx_bytes(labels_magic, {2}, {0, 1}));
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("holds 3 images"), dataset_error);
  CHECK_THROWS_WITH_AS(load_idx(images, labels, 10), contains("holds 2 labels"), dataset_error);
}
