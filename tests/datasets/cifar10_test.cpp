// CIFAR-10 reader: synthetic batch files load in order; size, label and missing-file errors are named.
#include <doctest/doctest.h>

#include <cstring>

#include "datasets/datasets.hpp"
#include "tests/datasets/dataset_files.hpp"

using namespace petra::data;
using namespace petra::data::testing;

namespace {

// Five train batches of two records (labels 2b, 2b+1 for batch b = 0..4) and a 3-record test batch.
void write_cifar(const std::string& dir, bool gz_test = false) {
  for (int b = 0; b < 5; ++b) {
    const auto labels = std::vector<uint8_t>{static_cast<uint8_t>(2 * b), static_cast<uint8_t>(2 * b + 1)};
    write_file(dir + "/data_batch_" + std::to_string(b + 1) + ".bin", cifar_records(labels, 10 * b));
  }
  const auto test = cifar_records({9, 0, 4}, 100);
  write_file(dir + "/test_batch.bin", gz_test ? gzip(test) : test);
}

}  // namespace

TEST_CASE("load_cifar10 reads all batches in order, records as C×H×W planes") {
  temp_dir dir;
  write_cifar(dir.str(), true);
  const dataset train = load_dataset("cifar10", dir.str(), true);
  CHECK(train.name == "cifar10/train");
  CHECK(train.count == 10);
  CHECK(train.channels == 3);
  CHECK(train.height == 32);
  CHECK(train.width == 32);
  CHECK(train.num_classes == 10);
  CHECK(train.labels == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  REQUIRE(train.pixels.size() == 10 * 3072);
  // Image 2·b + r is record r of batch b, whose pixel k is (r + k + 10·b) mod 256.
  for (int b = 0; b < 5; ++b) {
    for (int r = 0; r < 2; ++r) {
      const uint8_t* image = train.pixels.data() + (2 * b + r) * 3072;
      CHECK(image[0] == (r + 10 * b) % 256);
      CHECK(image[3071] == (r + 3071 + 10 * b) % 256);
    }
  }
  const dataset test = load_cifar10(dir.str(), false);  // gzipped content under a .bin name
  CHECK(test.name == "cifar10/test");
  CHECK(test.labels == std::vector<int32_t>{9, 0, 4});
  REQUIRE(test.pixels.size() == 3 * 3072);
  const auto records = cifar_records({9, 0, 4}, 100);
  for (int r = 0; r < 3; ++r) {
    CHECK(std::memcmp(test.pixels.data() + r * 3072, records.data() + r * 3073 + 1, 3072) == 0);
  }
}

TEST_CASE("load_cifar10 also looks inside the archive's cifar-10-batches-bin directory") {
  temp_dir dir;
  write_cifar(dir.file("cifar-10-batches-bin"));
  CHECK(load_cifar10(dir.str(), false).count == 3);
}

TEST_CASE("cifar10 errors: missing files, bad sizes, bad labels") {
  temp_dir dir;
  CHECK_THROWS_WITH_AS(load_cifar10(dir.file("absent"), true), contains("does not exist"), dataset_error);
  write_cifar(dir.str());
  std::filesystem::remove(dir.file("data_batch_4.bin"));
  CHECK_THROWS_WITH_AS(load_cifar10(dir.str(), true), contains(dir.file("data_batch_4.bin")), dataset_error);
  CHECK_THROWS_WITH_AS(load_cifar10(dir.str(), true), contains("cifar-10-binary.tar.gz"), dataset_error);
  CHECK_NOTHROW(load_cifar10(dir.str(), false));

  auto records = cifar_records({1, 2});
  records.push_back(0);
  write_file(dir.file("test_batch.bin"), records);
  CHECK_THROWS_WITH_AS(load_cifar10(dir.str(), false),
                       contains(dir.file("test_batch.bin") + ": file size 6147"), dataset_error);
  CHECK_THROWS_WITH_AS(load_cifar10(dir.str(), false), contains("multiple of the 3073-byte"), dataset_error);
  write_file(dir.file("test_batch.bin"), {});
  CHECK_THROWS_WITH_AS(load_cifar10(dir.str(), false), contains("file size 0"), dataset_error);

  write_file(dir.file("test_batch.bin"), cifar_records({1, 10, 2}));
  CHECK_THROWS_WITH_AS(load_cifar10(dir.str(), false), contains("label 10 at record 1"), dataset_error);
}
