// Opening the configured datasets and their feeds.
#include "training/training_data.hpp"

#include <stdexcept>

#include "training/setup.hpp"

namespace petra {
namespace {

/// config's data.dataset as the dataset layer's kind (the layers share the names, not the enum).
data::dataset_kind dataset_kind_of(config::dataset_kind kind) {
  switch (kind) {
    case config::dataset_kind::fashion_mnist:
      return data::dataset_kind::fashion_mnist;
    case config::dataset_kind::mnist:
      return data::dataset_kind::mnist;
    case config::dataset_kind::cifar10:
      return data::dataset_kind::cifar10;
    case config::dataset_kind::imagenet32:
      return data::dataset_kind::imagenet32;
    case config::dataset_kind::imagenet:
      break;
  }
  return data::dataset_kind::imagenet;
}

data::dataset_spec spec_of(const config::data_config& d, int64_t limit) {
  const data::bad_image_policy on_bad_image = d.on_bad_image == config::bad_image_policy::fail
                                                  ? data::bad_image_policy::fail
                                                  : data::bad_image_policy::skip;
  return {dataset_kind_of(d.dataset),
          d.path,
          d.mean,
          d.std,
          d.crop_padding,
          d.flip,
          d.crop_size,
          d.resize_size,
          on_bad_image,
          limit};
}

/// Memory for the feed's micro-batches: pinned when stage 1 is a GPU of this process, with room
/// for the batches made ahead and a couple in flight kept when freed.
host_tensor_maker images_for(const config::run_config& c, const data::image_source& source, int micro_batch) {
  const device consumer = node_of(c, 0) == "local" ? device_of(c, 0) : device{};
  const std::size_t batch_bytes =
      static_cast<std::size_t>(micro_batch * source.shape().size()) * sizeof(float);
  const std::size_t batches = 2 * static_cast<std::size_t>(std::max(c.data.workers, 1)) + 2;
  return host_tensors_for(consumer, batch_bytes * batches);
}

std::string shape_text(int c, int h, int w) {
  return std::to_string(c) + "×" + std::to_string(h) + "×" + std::to_string(w);
}

}  // namespace

std::vector<data::bad_image> training_data::new_bad_images() {
  std::vector<data::bad_image> out = train->bad_images(logged_train_);
  logged_train_ += static_cast<int64_t>(out.size());
  std::vector<data::bad_image> from_test = test->bad_images(logged_test_);
  logged_test_ += static_cast<int64_t>(from_test.size());
  out.insert(out.end(), from_test.begin(), from_test.end());
  return out;
}

int64_t training_data::bad_image_count() const { return train->bad_image_count() + test->bad_image_count(); }

int eval_micro_batch(const config::run_config& c) {
  return c.data.dataset == config::dataset_kind::imagenet ? c.training.micro_batch : 500;
}

training_data load_training_data(const config::run_config& c) {
  training_data d;
  d.train = data::open_dataset(spec_of(c.data, c.data.train_limit), true);
  d.test = data::open_dataset(spec_of(c.data, c.data.test_limit), false);
  const auto& in = c.model.input;
  const data::image_shape s = d.train->shape();
  if (in.size() == 3 && (s.channels != in[0] || s.height != in[1] || s.width != in[2]))
    throw std::invalid_argument("model.input is " + shape_text(in[0], in[1], in[2]) + " but " +
                                d.train->name() + " images are " + shape_text(s.channels, s.height, s.width));
  if (d.train->num_classes() > c.model.num_classes)
    throw std::invalid_argument("model.num_classes is " + std::to_string(c.model.num_classes) + " but " +
                                d.train->name() + " has " + std::to_string(d.train->num_classes()) +
                                " classes");
  feed_options train;
  train.micro_batch = c.training.micro_batch;
  train.accumulation = c.training.accumulation;
  train.seed = c.training.seed;
  train.workers = c.data.workers;
  train.images = images_for(c, *d.train, train.micro_batch);
  d.train_feed = std::make_shared<data_feed>(d.train, train);
  feed_options test = train;
  test.train = false;
  test.micro_batch = eval_micro_batch(c);
  test.accumulation = 1;
  test.images = images_for(c, *d.test, test.micro_batch);
  d.test_feed = std::make_shared<data_feed>(d.test, test);
  // The evaluation waves: the test set in training-sized micro-batches (as the stages are sized).
  feed_options waves = test;
  waves.micro_batch = c.training.micro_batch;
  waves.images = images_for(c, *d.test, waves.micro_batch);
  d.wave_feed = std::make_shared<data_feed>(d.test, waves);
  if (c.training.bn_recalibration > 0) {
    feed_options calibration = waves;
    calibration.images = images_for(c, *d.train, calibration.micro_batch);
    d.calibration_feed = std::make_shared<data_feed>(d.train, calibration);
  }
  return d;
}

}  // namespace petra
