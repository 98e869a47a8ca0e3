// The data feed over the decoding loader: for an in-memory set its micro-batches are exactly the
// seeded order and make_batch of each position, whatever the workers; a resume at (epoch, position)
// and a continuation at a phase boundary give the same batches; training drops the last
// incomplete optimizer batch; a stale ticket serves nothing; the images live in the maker's memory.
#include "training/data_feed.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <stdexcept>

using namespace petra;

namespace {

/// 100 images of 3×6×5 with pseudo-random pixels, labels i mod 7.
std::shared_ptr<const data::dataset> synthetic() {
  auto d = std::make_shared<data::dataset>();
  d->name = "synthetic/train";
  d->count = 100, d->channels = 3, d->height = 6, d->width = 5, d->num_classes = 7;
  d->pixels.resize(static_cast<std::size_t>(d->count * d->image_size()));
  uint32_t state = 7;
  for (uint8_t& p : d->pixels) p = static_cast<uint8_t>((state = state * 1664525u + 1013904223u) >> 24);
  for (int64_t i = 0; i < d->count; ++i) d->labels.push_back(static_cast<int32_t>(i % 7));
  return d;
}

const data::augment_options augment{{0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f}, 2, true};

std::shared_ptr<const data::image_source> source_of(const std::shared_ptr<const data::dataset>& d) {
  return std::make_shared<data::in_memory_source>(d, augment);
}

/// What the feed served before the loader existed: epoch_order (train) or dataset order, make_batch
/// of micro-batch `position`.
micro_batch reference(const data::dataset& d, bool train, int micro_batch_size, uint64_t seed, int epoch,
                      int64_t position) {
  std::vector<int64_t> order;
  if (train) {
    order = data::epoch_order(d.count, seed, epoch);
  } else {
    order.resize(static_cast<std::size_t>(d.count));
    std::iota(order.begin(), order.end(), 0);
  }
  const int64_t first = position * micro_batch_size;
  const int64_t count = std::min<int64_t>(micro_batch_size, d.count - first);
  micro_batch out;
  tensor images = tensor::empty({count, d.channels, d.height, d.width});
  out.labels.resize(static_cast<std::size_t>(count));
  data::make_batch(d, order.data() + first, count,
                   train ? augment : data::augment_options{augment.mean, augment.std, 0, false}, train, seed,
                   epoch, first, images.data(), out.labels.data());
  out.images = activation{images, {}};
  return out;
}

bool same(const micro_batch& a, const micro_batch& b) {
  const tensor& x = a.images.x1;
  const tensor& y = b.images.x1;
  return a.labels == b.labels && x.shape() == y.shape() && std::memcmp(x.data(), y.data(), x.bytes()) == 0;
}

std::vector<micro_batch> drain(data_feed& feed) {
  std::vector<micro_batch> out;
  for (micro_batch mb; feed.next(mb);) out.push_back(mb);
  return out;
}

}  // namespace

TEST_CASE("train feed: epoch order and make_batch of each position, bit for bit, for 0, 1, 2 and 4 workers") {
  const auto d = synthetic();
  for (int workers : {0, 1, 2, 4}) {
    INFO("workers = " << workers);
    feed_options o;
    o.micro_batch = 8, o.accumulation = 3, o.seed = 42, o.workers = workers;
    data_feed feed(source_of(d), o);
    CHECK(feed.micro_batches_per_epoch() == 12);  // ⌊100 / 24⌋ optimizer batches of 3
    for (int epoch : {1, 2}) {
      feed.start_epoch(epoch);
      const std::vector<micro_batch> got = drain(feed);
      REQUIRE(got.size() == 12);
      for (std::size_t p = 0; p < got.size(); ++p) {
        CHECK(same(got[p], reference(*d, true, 8, 42, epoch, static_cast<int64_t>(p))));
        CHECK(got[p].id == epoch * 12 + static_cast<int64_t>(p));
      }
    }
  }
}

TEST_CASE("eval feed: dataset order, no augmentation, every sample (the last micro-batch short)") {
  const auto d = synthetic();
  feed_options o;
  o.train = false, o.micro_batch = 30, o.workers = 2;
  data_feed feed(source_of(d), o);
  CHECK(feed.micro_batches_per_epoch() == 4);
  feed.start_epoch(0);
  const std::vector<micro_batch> got = drain(feed);
  REQUIRE(got.size() == 4);
  CHECK(got[3].labels.size() == 10);
  for (std::size_t p = 0; p < got.size(); ++p)
    CHECK(same(got[p], reference(*d, false, 30, 0, 0, int64_t(p))));
  feed.start_epoch(0);  // evaluated again: the same batches
  CHECK(same(drain(feed)[2], got[2]));
}

TEST_CASE("resume at (epoch, position) and continuing at a phase boundary give the straight run's batches") {
  const auto d = synthetic();
  feed_options o;
  o.micro_batch = 8, o.seed = 5, o.workers = 3;
  data_feed straight(source_of(d), o), phased(source_of(d), o), resumed(source_of(d), o);
  straight.start_epoch(2);
  const std::vector<micro_batch> all = drain(straight);
  REQUIRE(all.size() == 12);
  // Phases of 5: start_epoch at the position where the feed stands continues it.
  std::vector<micro_batch> pieces;
  for (int64_t first = 0; first < 12; first += 5) {
    phased.start_epoch(2, first);
    micro_batch mb;
    for (int64_t i = first; i < std::min<int64_t>(first + 5, 12) && phased.next(mb); ++i)
      pieces.push_back(mb);
  }
  REQUIRE(pieces.size() == 12);
  resumed.start_epoch(2, 7);
  const std::vector<micro_batch> tail = drain(resumed);
  REQUIRE(tail.size() == 5);
  for (std::size_t p = 0; p < 12; ++p) {
    CHECK(same(pieces[p], all[p]));
    CHECK(pieces[p].id == all[p].id);
  }
  for (std::size_t p = 0; p < 5; ++p) {
    CHECK(same(tail[p], all[p + 7]));
    CHECK(tail[p].id == all[p + 7].id);
  }
  // A rollback: back to an earlier position of the same epoch.
  phased.start_epoch(2, 3);
  micro_batch again;
  REQUIRE(phased.next(again));
  CHECK(same(again, all[3]));
}

TEST_CASE("a ticket of an older start_epoch serves nothing, the current one goes on") {
  const auto d = synthetic();
  feed_options o;
  o.micro_batch = 10, o.workers = 1;
  data_feed feed(source_of(d), o);
  const uint64_t old_ticket = feed.start_epoch(1);
  micro_batch mb;
  REQUIRE(feed.next(mb, old_ticket));
  const uint64_t ticket = feed.start_epoch(1, 1);  // where it stands: the same batches go on
  CHECK_FALSE(feed.next(mb, old_ticket));
  REQUIRE(feed.next(mb, ticket));
  CHECK(mb.id == 1 * 10 + 1);
}

TEST_CASE("training needs one optimizer batch, the images live in the memory the maker gives") {
  const auto d = synthetic();
  feed_options o;
  o.micro_batch = 64, o.accumulation = 2;
  CHECK_THROWS_WITH_AS(data_feed(source_of(d), o), doctest::Contains("smaller than one optimizer batch"),
                       std::invalid_argument);
  std::atomic<int> made{0};
  o.micro_batch = 16, o.accumulation = 1, o.workers = 2;
  o.images = [&made](const shape_t& shape) {
    ++made;
    return tensor::zeros(shape);
  };
  data_feed feed(source_of(d), o);
  feed.start_epoch(1);
  const std::vector<micro_batch> got = drain(feed);
  REQUIRE(got.size() == 6);
  CHECK(made.load() >= 6);
  for (const micro_batch& mb : got) CHECK(mb.images.x1.shape() == shape_t{16, 3, 6, 5});
}

TEST_CASE("next before start_epoch is a logic error") {
  feed_options o;
  o.micro_batch = 10;
  data_feed feed(source_of(synthetic()), o);
  micro_batch mb;
  CHECK_THROWS_AS(feed.next(mb), std::logic_error);
}
