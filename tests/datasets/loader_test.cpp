// batch_loader: the same bytes whatever the number of workers, strict epoch order, resume points,
// bounded read-ahead, errors rethrown in order, the caller's allocator, and the waited-time counter.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>

#include "datasets/datasets.hpp"
#include "tests/datasets/image_files.hpp"

using namespace petra::data;
using namespace petra::data::testing;

namespace {

// Sample i at epoch position p is four floats i·1000 + p, label i mod 7; may sleep or throw.
class counting_source : public image_source {
 public:
  explicit counting_source(int64_t count, int sleep_ms = 0, int64_t bad_index = -1)
      : count_(count), sleep_ms_(sleep_ms), bad_index_(bad_index) {}
  std::string name() const override { return "counting"; }
  int64_t count() const override { return count_; }
  int num_classes() const override { return 7; }
  image_shape shape() const override { return {1, 2, 2}; }
  int32_t label(int64_t index) const override { return static_cast<int32_t>(index % 7); }
  int fills() const { return fills_; }

 private:
  void fill_checked(const int64_t* indices, int64_t count, bool, uint64_t, int, int64_t first_position,
                    float* images, int32_t* labels) const override {
    ++fills_;
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    for (int64_t i = 0; i < count; ++i) {
      if (indices[i] == bad_index_) throw dataset_error("counting: bad sample " + std::to_string(bad_index_));
      for (int k = 0; k < 4; ++k) images[i * 4 + k] = float(indices[i] * 1000 + first_position + i);
      labels[i] = label(indices[i]);
    }
  }

  int64_t count_;
  int sleep_ms_;
  int64_t bad_index_;
  mutable std::atomic<int> fills_{0};
};

struct epoch_bytes {
  std::vector<std::vector<float>> images;
  std::vector<std::vector<int32_t>> labels;
};

epoch_bytes run_epoch(batch_loader& loader, int epoch, int64_t position = 0) {
  epoch_bytes e;
  loader.start_epoch(epoch, position);
  const int64_t floats = loader.source().shape().size();
  for (loaded_batch b; loader.next(b);) {
    REQUIRE(b.epoch == epoch);
    REQUIRE(b.position == position + static_cast<int64_t>(e.images.size()));
    e.images.emplace_back(b.images.data, b.images.data + b.count * floats);
    e.labels.push_back(b.labels);
  }
  return e;
}

dataset synthetic(int64_t count) {
  dataset d;
  d.name = "synthetic";
  d.count = count;
  d.channels = 3;
  d.height = d.width = 8;
  d.num_classes = 10;
  for (int64_t i = 0; i < count * d.image_size(); ++i) d.pixels.push_back(static_cast<uint8_t>(1 + i % 251));
  for (int64_t i = 0; i < count; ++i) d.labels.push_back(static_cast<int32_t>(i % 10));
  return d;
}

}  // namespace

TEST_CASE("in memory: the loader's batches are make_batch's bytes, whatever the workers") {
  const auto data = std::make_shared<const dataset>(synthetic(203));
  const augment_options augment{{0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.25f}, 2, true};
  const auto source = std::make_shared<in_memory_source>(data, augment);
  for (bool train : {true, false}) {
    // train: whole optimizer steps of k = 2 micro-batches of 16 (203 → 12 micro-batches); eval: all, the last
    // short.
    const int64_t micro_batches = train ? (203 / 32) * 2 : 0;
    for (int workers : {0, 1, 2, 4}) {
      CAPTURE(train);
      CAPTURE(workers);
      batch_loader loader(source, {16, micro_batches, train, 42, workers, 0});
      CHECK(loader.micro_batches_per_epoch() == (train ? 12 : 13));
      const epoch_bytes e = run_epoch(loader, 3);
      REQUIRE(e.images.size() == static_cast<std::size_t>(loader.micro_batches_per_epoch()));
      std::vector<int64_t> order = train ? epoch_order(203, 42, 3) : std::vector<int64_t>(203);
      if (!train) std::iota(order.begin(), order.end(), int64_t{0});
      for (std::size_t p = 0; p < e.images.size(); ++p) {
        const int64_t first = static_cast<int64_t>(p) * 16, count = std::min<int64_t>(16, 203 - first);
        std::vector<float> images(static_cast<std::size_t>(count * 192));
        std::vector<int32_t> labels(static_cast<std::size_t>(count));
        make_batch(*data, order.data() + first, count, augment, train, 42, 3, first, images.data(),
                   labels.data());
        REQUIRE(e.images[p].size() == images.size());
        CHECK(std::memcmp(e.images[p].data(), images.data(), images.size() * sizeof(float)) == 0);
        CHECK(e.labels[p] == labels);
      }
    }
  }
}

TEST_CASE("ImageNet folders: same seed, same micro-batches with 1, 2 and 4 workers") {
  temp_dir dir;
  write_jpeg_tree(dir.str(), 3, 8);  // 24 JPEGs: RGB, grayscale and CMYK of nine sizes
  imagenet_transform transform;
  transform.crop_size = 48;
  transform.resize_size = 56;
  const auto source = std::make_shared<imagenet_source>(dir.str(), true, transform);
  std::vector<epoch_bytes> runs;
  for (int workers : {1, 2, 4, 0}) {
    batch_loader loader(source, {5, 0, true, 9, workers, workers + 1});
    runs.push_back(run_epoch(loader, 2));
    REQUIRE(runs.back().images.size() == 5);  // 24 samples: four of 5 and one of 4
    CHECK(runs.back().images.back().size() == 4u * 3 * 48 * 48);
  }
  for (std::size_t r = 1; r < runs.size(); ++r) {
    CAPTURE(r);
    for (std::size_t p = 0; p < runs[0].images.size(); ++p) {
      REQUIRE(runs[r].images[p].size() == runs[0].images[p].size());
      CHECK(std::memcmp(runs[r].images[p].data(), runs[0].images[p].data(), runs[0].images[p].size() * 4) ==
            0);
      CHECK(runs[r].labels[p] == runs[0].labels[p]);
    }
  }
  batch_loader loader(source, {5, 0, true, 9, 2, 0});
  CHECK(run_epoch(loader, 3).images != runs[0].images);  // another epoch: another order and crops
}

TEST_CASE("start_epoch at a position serves exactly the rest of the full epoch") {
  const auto source = std::make_shared<counting_source>(50);
  batch_loader loader(source, {4, 0, true, 5, 2, 3});
  const epoch_bytes full = run_epoch(loader, 1);
  CHECK(full.images.size() == 13);
  const epoch_bytes rest = run_epoch(loader, 1, 9);
  REQUIRE(rest.images.size() == 4);
  for (std::size_t p = 0; p < 4; ++p) CHECK(rest.images[p] == full.images[p + 9]);
  CHECK(run_epoch(loader, 1, 13).images.empty());  // at the end: nothing left
  // Every sample of the epoch is served once, at its position.
  std::vector<int64_t> seen;
  for (std::size_t p = 0; p < full.images.size(); ++p) {
    for (std::size_t i = 0; i < full.images[p].size(); i += 4) {
      const auto value = static_cast<int64_t>(full.images[p][i]);
      CHECK(value % 1000 == static_cast<int64_t>(p * 4 + i / 4));
      seen.push_back(value / 1000);
    }
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> all(50);
  std::iota(all.begin(), all.end(), int64_t{0});
  CHECK(seen == all);
}

TEST_CASE("read-ahead is bounded by prefetch, a new epoch drops work in flight, destruction joins") {
  const auto source = std::make_shared<counting_source>(400, 2);
  {
    batch_loader loader(source, {4, 0, false, 0, 3, 5});
    loader.start_epoch(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // nobody consumes
    CHECK(source->fills() <= 5);
    loaded_batch b;
    REQUIRE(loader.next(b));
    CHECK(b.position == 0);
    loader.start_epoch(1, 20);  // abandon epoch 0 with batches in flight
    REQUIRE(loader.next(b));
    CHECK(b.epoch == 1);
    CHECK(b.position == 20);
    CHECK(b.images.data[0] == float(80 * 1000 + 80));
    loader.start_epoch(2);
  }  // destroyed with workers busy: joins, no hang, no leak
  CHECK(source->fills() < 100);
}

TEST_CASE("a worker's exception is rethrown by next() at its batch, after the batches before it") {
  const auto source = std::make_shared<counting_source>(40, 0, 9);  // sample 9 sits in batch 2 (eval order)
  for (int workers : {0, 1, 3}) {
    CAPTURE(workers);
    batch_loader loader(source, {4, 0, false, 0, workers, 0});
    loader.start_epoch(0);
    loaded_batch b;
    CHECK(loader.next(b));
    CHECK(loader.next(b));
    CHECK_THROWS_WITH_AS(loader.next(b), doctest::Contains("counting: bad sample 9"), dataset_error);
    CHECK(loader.next(b));  // the consumer decides whether to go on
    CHECK(b.position == 3);
  }

  // With real files: on_bad_image: fail stops the epoch with the file's path.
  temp_dir dir;
  const std::vector<std::string> wnids = write_jpeg_tree(dir.str(), 2, 3);
  const std::string broken = dir.file("val/" + wnids[1] + "/img_0.JPEG");
  write_file(broken, {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F'});
  imagenet_transform transform;
  transform.crop_size = 32;
  transform.resize_size = 40;
  const auto files = std::make_shared<imagenet_source>(dir.str(), false, transform, bad_image_policy::fail);
  batch_loader loader(files, {2, 0, false, 0, 2, 0});
  loader.start_epoch(0);
  loaded_batch b;
  CHECK(loader.next(b));
  CHECK_THROWS_WITH_AS(loader.next(b), contains(broken), dataset_error);
}

TEST_CASE("the images live in the caller's memory: the allocator is asked for each batch's shape") {
  const auto source = std::make_shared<counting_source>(10);
  std::atomic<int> calls{0};
  std::atomic<int64_t> images{0};
  image_allocator allocate = [&](int64_t count, const image_shape& shape) {
    ++calls;
    images += count;
    CHECK(shape.size() == 4);
    auto block =
        std::make_shared<std::vector<float>>(static_cast<std::size_t>(count * shape.size()) + 1, -1.0f);
    block->back() = 12345.0f;  // a guard word past the batch
    return image_buffer{block->data(), block};
  };
  batch_loader loader(source, {4, 0, false, 0, 2, 0}, allocate);
  loader.start_epoch(0);
  std::vector<loaded_batch> kept;
  for (loaded_batch b; loader.next(b);) kept.push_back(std::move(b));
  CHECK(calls == 3);
  CHECK(images == 10);
  for (const loaded_batch& b : kept) {
    auto* block = static_cast<std::vector<float>*>(b.images.owner.get());
    CHECK(b.images.data == block->data());
    CHECK(block->back() == 12345.0f);
    CHECK(b.images.data[0] == float(b.position * 4 * 1000 + b.position * 4));
  }

  batch_loader nothing(source, {4, 0, false, 0, 1, 0},
                       [](int64_t, const image_shape&) { return image_buffer{}; });
  nothing.start_epoch(0);
  loaded_batch b;
  CHECK_THROWS_WITH_AS(nothing.next(b), doctest::Contains("the allocator gave no memory"),
                       std::runtime_error);
}

TEST_CASE("waited time: a consumer faster than the workers waits, and the wait is counted") {
  const auto slow = std::make_shared<counting_source>(12, 25);
  batch_loader loader(slow, {4, 0, false, 0, 1, 0});
  CHECK(loader.stats().waits == 0);
  run_epoch(loader, 0);
  const loader_stats stats = loader.stats();
  CHECK(stats.served == 3);
  CHECK(stats.waits >= 1);  // the first batch cannot be ready when next() asks right after start_epoch
  CHECK(stats.waited_seconds > 0);

  batch_loader inline_loader(slow, {4, 0, false, 0, 0, 0});  // no workers: next() fills, never waits
  run_epoch(inline_loader, 0);
  CHECK(inline_loader.stats().waits == 0);
  CHECK(inline_loader.stats().waited_seconds == 0);
  CHECK(inline_loader.stats().served == 3);
}

TEST_CASE("bad loader options and calls are rejected with the value") {
  const auto source = std::make_shared<counting_source>(10);
  CHECK_THROWS_WITH_AS(batch_loader(source, {0, 0, true, 0, 1, 0}), doctest::Contains("micro_batch = 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(batch_loader(source, {4, 0, true, 0, -1, 0}), doctest::Contains("workers = -1"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(batch_loader(source, {4, 4, true, 0, 1, 0}),
                       doctest::Contains("enough for 3 micro-batches of 4"), std::invalid_argument);
  CHECK_THROWS_AS(batch_loader(nullptr, {}), std::invalid_argument);
  batch_loader loader(source, {4, 0, true, 0, 1, 0});
  loaded_batch b;
  CHECK_THROWS_AS(loader.next(b), std::logic_error);
  CHECK_THROWS_WITH_AS(loader.start_epoch(0, 4), doctest::Contains("position 4 is outside [0, 3]"),
                       std::invalid_argument);
}
