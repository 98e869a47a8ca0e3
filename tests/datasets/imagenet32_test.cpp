// ImageNet32: batch pickles written here byte for byte as Python's pickler and numpy write them
// load exactly, in every pickle style; a pickle of any other layout is an error saying what it holds.
#include <doctest/doctest.h>

#include "datasets/datasets.hpp"
#include "datasets/pickle_reader.hpp"
#include "tests/datasets/dataset_files.hpp"
#include "tests/datasets/pickle_files.hpp"

using namespace petra::data;
using namespace petra::data::testing;

namespace {

// train_data_batch_1..10 with 1 + (b mod 3) images each, val_data with 4; returns the train contents.
std::vector<imagenet32_contents> write_imagenet32(const std::string& dir,
                                                  pickle_style style = pickle_style::protocol3) {
  std::vector<imagenet32_contents> batches;
  for (int b = 1; b <= 10; ++b) {
    batches.push_back(imagenet32_batch_contents(1 + b % 3, 100 * b));
    write_file(dir + "/train_data_batch_" + std::to_string(b), imagenet32_pickle(batches.back(), style));
  }
  imagenet32_contents val = imagenet32_batch_contents(4, 7);
  val.with_mean = false;
  write_file(dir + "/val_data", imagenet32_pickle(val, style));
  return batches;
}

}  // namespace

TEST_CASE("a two-batch pickle pair reads back exactly: pixels as stored, labels made 0-based") {
  temp_dir dir;
  for (pickle_style style : {pickle_style::protocol3, pickle_style::protocol4,
                             pickle_style::python3_protocol2, pickle_style::python2_protocol2}) {
    CAPTURE(static_cast<int>(style));
    const imagenet32_contents first = imagenet32_batch_contents(2, 0),
                              second = imagenet32_batch_contents(3, 55);
    write_file(dir.file("train_data_batch_1"), imagenet32_pickle(first, style));
    write_file(dir.file("train_data_batch_2"), gzip(imagenet32_pickle(second, style)));
    for (const auto& [name, contents] :
         {std::pair{"train_data_batch_1", &first}, {"train_data_batch_2", &second}}) {
      const dataset d = read_imagenet32_batch(dir.file(name));
      CHECK(d.count == contents->count);
      CHECK(d.channels == 3);
      CHECK(d.height == 32);
      CHECK(d.width == 32);
      CHECK(d.num_classes == 1000);
      CHECK(d.pixels == contents->pixels);
      std::vector<int32_t> expected;
      for (int64_t label : contents->labels) expected.push_back(static_cast<int32_t>(label - 1));
      CHECK(d.labels == expected);
    }
  }
}

TEST_CASE("load_imagenet32 concatenates train_data_batch_1..10 in order and reads val_data") {
  temp_dir dir;
  const auto batches = write_imagenet32(dir.str());
  const dataset train = load_dataset("imagenet32", dir.str(), true);
  CHECK(train.name == "imagenet32/train");
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  for (const auto& b : batches) {
    pixels.insert(pixels.end(), b.pixels.begin(), b.pixels.end());
    for (int64_t label : b.labels) labels.push_back(static_cast<int32_t>(label - 1));
  }
  CHECK(train.count == static_cast<int64_t>(labels.size()));
  CHECK(train.pixels == pixels);
  CHECK(train.labels == labels);
  CHECK(load_imagenet32(dir.str(), false).count == 4);

  // Where the zips unpack, and through open_dataset with the CIFAR-style augmentation.
  temp_dir nested;
  write_imagenet32(nested.file("Imagenet32_train"), pickle_style::protocol4);
  write_imagenet32(nested.file("Imagenet32_val"));
  CHECK(load_imagenet32(nested.str(), true).count == train.count);
  dataset_spec spec;
  spec.kind = dataset_kind::imagenet32;
  spec.path = nested.str();
  spec.mean = {0.485f, 0.456f, 0.406f};
  spec.std = {0.229f, 0.224f, 0.225f};
  spec.crop_padding = 4;
  spec.flip = true;
  const auto source = open_dataset(spec, false);
  CHECK(source->name() == "imagenet32/val");
  CHECK(source->count() == 4);
  CHECK(source->shape().size() == 3072);
  std::vector<float> images(2 * 3072);
  std::vector<int32_t> got(2);
  const int64_t indices[2] = {3, 1};
  source->fill_batch(indices, 2, true, 1, 0, 0, images.data(), got.data());
  CHECK(got == std::vector<int32_t>{source->label(3), source->label(1)});
}

TEST_CASE("missing files name every path and the download") {
  temp_dir dir;
  write_imagenet32(dir.str());
  std::filesystem::remove(dir.file("train_data_batch_7"));
  CHECK_THROWS_WITH_AS(load_imagenet32(dir.str(), true), contains(dir.file("train_data_batch_7")),
                       dataset_error);
  CHECK_THROWS_WITH_AS(load_imagenet32(dir.str(), true), contains("Imagenet32_train.zip"), dataset_error);
  CHECK_NOTHROW(load_imagenet32(dir.str(), false));
  CHECK_THROWS_WITH_AS(load_imagenet32(dir.file("absent"), false), contains("does not exist"), dataset_error);
}

TEST_CASE("a pickle of another layout is an error naming the file and what it holds") {
  temp_dir dir;
  const std::string path = dir.file("train_data_batch_1");
  auto error_of = [&](const std::vector<uint8_t>& bytes) -> std::string {
    write_file(path, bytes);
    try {
      read_imagenet32_batch(path);
    } catch (const dataset_error& e) {
      return e.what();
    }
    return "(no error)";
  };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const imagenet32_contents good = imagenet32_batch_contents(2, 0);

  pickle_writer list(pickle_style::protocol3);
  list.int_list({1, 2, 3});
  list.op('.');
  const std::string top = error_of(list.bytes());
  CHECK(has(top, path + ": the pickle holds a list of 3 items"));

  imagenet32_contents no_labels = good;
  no_labels.labels_key = "targets";
  CHECK(has(error_of(imagenet32_pickle(no_labels)),
            "a dict with keys data, targets, mean, expected keys data and labels"));

  imagenet32_contents floats = good;
  floats.dtype = "f8";
  floats.pixels.resize(floats.pixels.size() * 8);
  CHECK(has(error_of(imagenet32_pickle(floats)), "'data' is an array of dtype f8 and shape (2, 3072)"));

  imagenet32_contents wide = good;
  wide.columns = 12288;
  wide.pixels.resize(2 * 12288);
  CHECK(has(error_of(imagenet32_pickle(wide)), "shape (2, 12288) (that is ImageNet64)"));

  imagenet32_contents short_data = good;
  short_data.pixels.resize(3072);  // the header says 2 images
  CHECK(has(error_of(imagenet32_pickle(short_data)), "carries 3072 bytes"));

  imagenet32_contents zero = good;
  zero.labels[1] = 0;
  CHECK(has(error_of(imagenet32_pickle(zero)), "label 0 at index 1 is outside [1, 1000]"));
  imagenet32_contents three = good;
  three.labels.push_back(5);
  CHECK(has(error_of(imagenet32_pickle(three)), "'data' holds 2 images but 'labels' holds 3 labels"));

  const std::vector<uint8_t> bytes = imagenet32_pickle(good);
  CHECK(has(error_of({bytes.begin(), bytes.begin() + 3000}), "truncated file?"));
  CHECK(has(error_of({'(', 'd', 'p', '0', '\n'}),
            "not a pickle of protocol 2 or later (expected PROTO 0x80 then 2..5, "
            "found first byte 0x28)"));
  CHECK(has(error_of({}), "found an empty file"));
  CHECK(has(error_of({0x80, 0x03, 'P', 'x', '\n', '.'}), "opcode 0x50 'P'"));  // PERSID: outside the subset
  CHECK(has(error_of({0x80, 0x05, 0x97, '.'}), "outside the supported subset"));  // an out-of-band buffer
  CHECK(has(error_of({0x80, 0x03, 'h', 0x05, '.'}), "memo entry 5 was never stored"));
  CHECK(has(error_of({0x80, 0x03, 'K', 1, 'K', 2, '.'}), "STOP with 2 values on the stack"));
}

TEST_CASE("the pickle reader keeps what it reads: ints, strings, nested containers, memo references") {
  pickle_writer w(pickle_style::protocol4);
  w.op('}');
  w.memoize();
  w.op('(');
  w.text("small");
  w.integer(200);
  w.text("big");
  w.integer(-70000);
  w.text("list");
  w.int_list({1, 300, 70000});
  w.text("again");
  w.op('h');  // BINGET: memo entry 0 is the dict itself, entry 1 the string "small"
  w.little(1, 1);
  w.op('u');
  w.op('.');
  const pickle_ptr root = read_pickle(w.bytes(), "x");
  REQUIRE(root->type == pickle_value::kind::dict);
  CHECK(root->find("small")->integer == 200);
  CHECK(root->find("big")->integer == -70000);
  const pickle_ptr list = root->find("list");
  REQUIRE(list->items.size() == 3);
  CHECK(list->items[2]->integer == 70000);
  CHECK(root->find("again")->text == "small");
  CHECK(describe(*root) == "a dict with keys small, big, list, again");
}
