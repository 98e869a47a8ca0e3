// The one interface every dataset kind serves batches through, in memory (IDX, CIFAR-10, ImageNet32)
// or file-backed (ImageNet folders), and the log of bad images a file-backed set met.
#pragma once

#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace petra::data {

/// The shape of one output image, C×H×W floats.
struct image_shape {
  int channels = 0, height = 0, width = 0;
  /// Floats of one image: C·H·W.
  int64_t size() const { return int64_t{channels} * height * width; }
};

/// What to do with an image that cannot be read or decoded.
enum class bad_image_policy {
  skip,  // serve the next good image in dataset order instead, and record the bad one
  fail,  // throw dataset_error naming the file
};

/// "skip" → skip, "fail" → fail; anything else is std::invalid_argument naming the value.
bad_image_policy parse_bad_image_policy(const std::string& text);

/// One image that could not be used: its dataset index, its file and why.
struct bad_image {
  int64_t index = 0;
  std::string path;
  std::string reason;
};

/// The bad images a source met, each once, in the order they were met; thread-safe.
class bad_image_log {
 public:
  /// Records `entry` unless its index is already recorded; true when it was new.
  bool record(bad_image entry);
  /// Whether dataset index `index` is recorded as bad.
  bool contains(int64_t index) const;
  /// How many bad images are recorded.
  int64_t count() const;
  /// Entries [from, count()): a caller that logs them keeps `from` to report each only once.
  std::vector<bad_image> entries(int64_t from = 0) const;

 private:
  mutable std::mutex mutex_;
  std::vector<bad_image> entries_;
  std::set<int64_t> indices_;
};

/// A labelled image set that fills normalised float batches. fill_batch is const and may run on
/// several threads at once; what it writes for a sample depends only on (the data, seed, epoch,
/// position in the epoch, train), never on which thread runs it or what ran before.
class image_source {
 public:
  virtual ~image_source() = default;

  /// E.g. "imagenet/train", "cifar10/test".
  virtual std::string name() const = 0;
  /// Samples in the set.
  virtual int64_t count() const = 0;
  /// Labels lie in [0, num_classes()).
  virtual int num_classes() const = 0;
  /// The shape of every image fill_batch writes.
  virtual image_shape shape() const = 0;
  /// The label of sample `index` ∈ [0, count()).
  virtual int32_t label(int64_t index) const = 0;
  /// Class names by label when the set has them (ImageNet folders: the wnids), else empty.
  virtual std::vector<std::string> class_names() const { return {}; }
  /// The bad images met so far (from index `from` of the log on); empty for in-memory sets.
  virtual std::vector<bad_image> bad_images(int64_t from = 0) const {
    (void)from;
    return {};
  }
  /// How many bad images were met so far.
  virtual int64_t bad_image_count() const { return 0; }

  /// Fills images (count × C×H×W floats) and labels (count) with samples indices[0..count), the
  /// sample i sitting at position first_position + i of epoch `epoch`. train = the training
  /// augmentation (its randomness from counter_rng(seed, augment, epoch, position)); else the
  /// eval transform. Checks its arguments (std::invalid_argument / std::out_of_range), then fills.
  void fill_batch(const int64_t* indices, int64_t count, bool train, uint64_t seed, int epoch,
                  int64_t first_position, float* images, int32_t* labels) const;

 private:
  /// fill_batch after the argument checks.
  virtual void fill_checked(const int64_t* indices, int64_t count, bool train, uint64_t seed, int epoch,
                            int64_t first_position, float* images, int32_t* labels) const = 0;
};

}  // namespace petra::data
