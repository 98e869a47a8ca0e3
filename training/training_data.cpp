// Loading the configured datasets; evaluation over a feed.
#include "training/training_data.hpp"

#include <stdexcept>

namespace petra {

training_data load_training_data(const config::run_config& c) {
  training_data d;
  auto train = std::make_shared<data::dataset>(data::load_dataset(c.data.dataset, c.data.path, true));
  auto test = std::make_shared<data::dataset>(data::load_dataset(c.data.dataset, c.data.path, false));
  if (c.data.train_limit > 0) data::keep_first(*train, c.data.train_limit);
  if (c.data.test_limit > 0) data::keep_first(*test, c.data.test_limit);
  d.train = train;
  d.test = test;
  const auto& in = c.model.input;
  if (in.size() == 3 && (d.train->channels != in[0] || d.train->height != in[1] || d.train->width != in[2]))
    throw std::invalid_argument("model.input is " + std::to_string(in[0]) + "×" + std::to_string(in[1]) +
                                "×" + std::to_string(in[2]) + " but " + d.train->name + " images are " +
                                std::to_string(d.train->channels) + "×" + std::to_string(d.train->height) +
                                "×" + std::to_string(d.train->width));
  if (d.train->num_classes > c.model.num_classes)
    throw std::invalid_argument("model.num_classes is " + std::to_string(c.model.num_classes) + " but " +
                                d.train->name + " has " + std::to_string(d.train->num_classes) + " classes");
  data::augment_options train_aug{c.data.mean, c.data.std, c.data.crop_padding, c.data.flip};
  data::augment_options test_aug{c.data.mean, c.data.std, 0, false};
  d.train_feed = std::make_shared<data_feed>(d.train, train_aug, true, c.training.micro_batch,
                                             c.training.accumulation, c.training.seed);
  d.test_feed = std::make_shared<data_feed>(d.test, test_aug, false, 500, 1, c.training.seed);
  d.wave_feed =
      std::make_shared<data_feed>(d.test, test_aug, false, c.training.micro_batch, 1, c.training.seed);
  return d;
}

}  // namespace petra
