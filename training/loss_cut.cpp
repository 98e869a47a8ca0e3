// The loss side's part of a cut as JSON.
#include "training/loss_cut.hpp"

#include <stdexcept>

#include "training/json_record.hpp"

namespace petra::training {

std::string encode(const loss_cut& part) { return json_record::write(part).dump(); }

loss_cut decode_loss_cut(const std::string& text) {
  try {
    return json_record::read<loss_cut>(nlohmann::json::parse(text));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the loss side's part of the cut is damaged: ") + e.what());
  }
}

}  // namespace petra::training
