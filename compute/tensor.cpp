// Tensor storage and handles.
#include "compute/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace petra {

std::string device::str() const {
  switch (type) {
    case device_type::cpu:
      return "cpu";
    case device_type::cuda:
      return "cuda:" + std::to_string(index);
    case device_type::sim:
      return "sim:" + std::to_string(index);
  }
  return "?";
}

device device::parse(const std::string& text) {
  if (text == "cpu") return device{};
  for (const auto& [prefix, type] : {std::pair<std::string, device_type>{"cuda:", device_type::cuda},
                                     std::pair<std::string, device_type>{"sim:", device_type::sim}}) {
    if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size()) continue;
    const std::string digits = text.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 4)
      return device{type, std::stoi(digits)};
  }
  throw std::invalid_argument("bad device '" + text + "': expected 'cpu', 'cuda:N' or 'sim:N'");
}

storage::storage(void* data, std::size_t bytes, device where, std::function<void(void*)> deleter)
    : data_(data), bytes_(bytes), where_(where), deleter_(std::move(deleter)) {}

storage::~storage() {
  if (data_ && deleter_) deleter_(data_);
}

std::shared_ptr<storage> storage::allocate_host(std::size_t bytes) {
  const std::size_t rounded = ((bytes + 63) / 64) * 64;
  void* p = rounded ? std::aligned_alloc(64, rounded) : nullptr;
  if (rounded && !p) throw std::bad_alloc();
  return std::make_shared<storage>(p, bytes, device{}, [](void* q) { std::free(q); });
}

int64_t numel_of(const shape_t& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string to_string(const shape_t& shape) {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ")";
  return out.str();
}

tensor::tensor(shape_t shape, std::shared_ptr<storage> buffer, std::size_t offset_floats)
    : shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(offset_floats) {
  for (int64_t d : shape_)
    if (d < 0) throw std::invalid_argument("tensor shape " + to_string(shape_) + " has a negative extent");
  if (buffer_ && (offset_ + numel()) * sizeof(float) > buffer_->bytes())
    throw std::invalid_argument("tensor shape " + to_string(shape_) + " does not fit its buffer");
}

tensor tensor::empty(const shape_t& shape) {
  return tensor(shape, storage::allocate_host(static_cast<std::size_t>(numel_of(shape)) * sizeof(float)));
}

tensor tensor::zeros(const shape_t& shape) {
  tensor t = empty(shape);
  if (t.numel()) std::memset(t.data(), 0, t.bytes());
  return t;
}

tensor tensor::from_vector(const shape_t& shape, const std::vector<float>& values) {
  if (static_cast<int64_t>(values.size()) != numel_of(shape))
    throw std::invalid_argument("from_vector: " + std::to_string(values.size()) + " values for shape " +
                                to_string(shape));
  tensor t = empty(shape);
  if (!values.empty()) std::memcpy(t.data(), values.data(), t.bytes());
  return t;
}

int64_t tensor::numel() const { return numel_of(shape_); }

device tensor::where() const { return buffer_ ? buffer_->where() : device{}; }

namespace {

[[noreturn]] void refuse_host_access(const tensor& t) {
  throw std::logic_error("tensor " + t.shape_str() + " lives on " + t.where().str() +
                         ": its values are its backend's until it is handed over; the hand-over is missing "
                         "(export_for on the backend that made it, then import on the consumer, or to_host)");
}

}  // namespace

float* tensor::data() {
  if (!buffer_) return nullptr;
  if (buffer_->where().type == device_type::sim) refuse_host_access(*this);
  buffer_->note_write();
  return static_cast<float*>(buffer_->data()) + offset_;
}

const float* tensor::data() const {
  if (!buffer_) return nullptr;
  if (buffer_->where().type == device_type::sim) refuse_host_access(*this);
  return static_cast<const float*>(buffer_->data()) + offset_;
}

tensor tensor::clone() const {
  if (!defined()) return {};
  if (where().type != device_type::cpu) throw std::logic_error("tensor::clone: host tensors only");
  tensor t = empty(shape_);
  if (numel()) std::memcpy(t.data(), data(), bytes());
  return t;
}

std::vector<float> tensor::to_vector() const {
  if (!defined()) return {};
  if (where().type != device_type::cpu) throw std::logic_error("tensor::to_vector: host tensors only");
  return std::vector<float>(data(), data() + numel());
}

tensor tensor::reshaped(const shape_t& shape) const {
  if (numel_of(shape) != numel())
    throw std::invalid_argument("reshape " + shape_str() + " to " + to_string(shape) +
                                ": element counts differ");
  return tensor(shape, buffer_, offset_);
}

std::string tensor::shape_str() const { return to_string(shape_); }

}  // namespace petra
