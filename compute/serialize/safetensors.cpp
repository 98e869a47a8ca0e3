// safetensors writer and validating reader (fp32 only, little-endian hosts only).
#include "compute/serialize/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "compute/serialize/atomic_file.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp copies fp32 bytes as they are: it needs a little-endian host"
#endif

namespace petra {
namespace {

using json = nlohmann::ordered_json;  // keeps the header's key order as written

constexpr const char* metadata_key = "__metadata__";

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw safetensors_error("safetensors file '" + path + "': " + problem);
}

std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// One tensor entry of the header, checked on its own.
struct entry {
  std::string name;
  shape_t shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

std::string header_for(const named_tensors& tensors, const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) {
    json meta = json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[metadata_key] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::uint64_t end = offset + t.bytes();
    header[name] = json{{"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

shape_t parse_shape(const std::string& path, const std::string& name, const json& value) {
  if (!value.is_array()) fail(path, "tensor '" + name + "': \"shape\" is not an array of integers");
  shape_t shape;
  for (const json& dim : value) {
    if (!dim.is_number_integer())
      fail(path, "tensor '" + name + "': shape " + value.dump() + " holds a non-integer");
    if (dim.is_number_unsigned() ? dim.get<std::uint64_t>() > (std::uint64_t{1} << 62)
                                 : dim.get<int64_t>() < 0)
      fail(path, "tensor '" + name + "': shape " + value.dump() + " has a negative or absurd dimension");
    shape.push_back(dim.get<int64_t>());
  }
  return shape;
}

// Bytes the shape needs as fp32, or nothing when that overflows (then it cannot fit).
bool fp32_bytes(const shape_t& shape, std::uint64_t& bytes) {
  bytes = sizeof(float);
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    bytes = 0;
    return true;
  }
  for (int64_t dim : shape)
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(dim), &bytes)) return false;
  return true;
}

entry parse_entry(const std::string& path, const std::string& name, const json& value,
                  std::uint64_t data_bytes) {
  if (!value.is_object()) fail(path, "tensor '" + name + "': entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!value.contains(key)) fail(path, "tensor '" + name + "': entry has no \"" + key + "\"");
  const json& dtype = value["dtype"];
  if (!dtype.is_string()) fail(path, "tensor '" + name + "': \"dtype\" is not a string");
  if (dtype.get<std::string>() != "F32")
    fail(path, "tensor '" + name + "' has dtype " + dtype.get<std::string>() +
                   "; petra reads only F32 (convert the file to float32)");

  entry result;
  result.name = name;
  result.shape = parse_shape(path, name, value["shape"]);
  const json& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail(path, "tensor '" + name + "': \"data_offsets\" " + offsets.dump() +
                   " is not a pair of non-negative integers [begin, end]");
  result.begin = offsets[0].get<std::uint64_t>();
  result.end = offsets[1].get<std::uint64_t>();
  if (result.begin > result.end || result.end > data_bytes)
    fail(path, "tensor '" + name + "': data_offsets " + range_text(result.begin, result.end) +
                   " lie outside the data section of " + std::to_string(data_bytes) + " bytes");
  std::uint64_t needed = 0;
  if (!fp32_bytes(result.shape, needed) || needed != result.end - result.begin)
    fail(path, "tensor '" + name + "': shape " + to_string(result.shape) + " needs " +
                   (fp32_bytes(result.shape, needed) ? std::to_string(needed) : std::string("too many")) +
                   " bytes but data_offsets " + range_text(result.begin, result.end) + " hold " +
                   std::to_string(result.end - result.begin));
  return result;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& value) {
  if (!value.is_object()) fail(path, "\"__metadata__\" is not an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string()) fail(path, "metadata '" + key + "' is not a string: " + item.dump());
    metadata[key] = item.get<std::string>();
  }
  return metadata;
}

// The data section must be tiled exactly: no overlaps, no holes, nothing after the end.
void check_tiling(const std::string& path, const std::vector<entry>& sorted, std::uint64_t data_bytes) {
  std::uint64_t covered = 0;
  const entry* previous = nullptr;
  for (const entry& e : sorted) {
    if (e.begin < covered)
      fail(path, "tensors '" + previous->name + "' " + range_text(previous->begin, previous->end) + " and '" +
                     e.name + "' " + range_text(e.begin, e.end) + " overlap");
    if (e.begin > covered)
      fail(path, "data bytes " + range_text(covered, e.begin) + " belong to no tensor (a hole before '" +
                     e.name + "')");
    covered = e.end;
    previous = &e;
  }
  if (covered != data_bytes)
    fail(path,
         std::to_string(data_bytes - covered) + " data bytes after the last tensor belong to no tensor");
}

}  // namespace

const tensor& safetensors_file::find(const std::string& name) const {
  for (const auto& [key, t] : tensors)
    if (key == name) return t;
  throw safetensors_error("safetensors file '" + path + "' has no tensor '" + name + "' (it holds " +
                          std::to_string(tensors.size()) + " tensors); was it written by another model?");
}

bool safetensors_file::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& item) { return item.first == name; });
}

void save_safetensors(const std::string& path, const named_tensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    if (name == metadata_key)
      throw std::invalid_argument("save_safetensors '" + path +
                                  "': \"__metadata__\" is reserved, rename the tensor");
    if (!names.insert(name).second)
      throw std::invalid_argument("save_safetensors '" + path + "': tensor name '" + name +
                                  "' appears twice");
    if (!t.defined())
      throw std::invalid_argument("save_safetensors '" + path + "': tensor '" + name + "' is undefined");
    if (t.where().type != device_type::cpu)
      throw std::invalid_argument("save_safetensors '" + path + "': tensor '" + name + "' lives on " +
                                  t.where().str() +
                                  "; only host fp32 tensors are written, copy it to the host first");
  }
  std::string header;
  try {
    header = header_for(tensors, metadata);
  } catch (const nlohmann::json::exception& e) {  // names or metadata that are not UTF-8
    throw std::invalid_argument("save_safetensors '" + path + "': cannot encode the header: " + e.what());
  }

  write_file_atomically(path, [&](std::ostream& out) {
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header.size() >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& [name, t] : tensors)
      if (t.numel())
        out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
  });
}

safetensors_file load_safetensors(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (!std::filesystem::exists(status)) fail(path, "no such file");
  if (!std::filesystem::is_regular_file(status)) fail(path, "not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be opened for reading (" + std::string(std::strerror(errno)) + ")");
  const std::uint64_t file_bytes = std::filesystem::file_size(path, error);
  if (error) fail(path, "cannot read its size (" + error.message() + ")");

  if (file_bytes < 8)
    fail(path,
         "only " + std::to_string(file_bytes) + " bytes, shorter than the 8-byte header length; truncated?");
  unsigned char length[8];
  in.read(reinterpret_cast<char*>(length), 8);
  std::uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length[i];
  if (header_bytes > max_safetensors_header_bytes)
    fail(path, "header length " + std::to_string(header_bytes) + " is absurd (limit " +
                   std::to_string(max_safetensors_header_bytes) + "); not a safetensors file?");
  if (header_bytes > file_bytes - 8)
    fail(path, "header length " + std::to_string(header_bytes) + " exceeds the " +
                   std::to_string(file_bytes - 8) + " bytes that follow it; truncated?");

  std::string header_text(header_bytes, '\0');
  in.read(header_text.data(), static_cast<std::streamsize>(header_bytes));
  if (!in) fail(path, "reading the header failed");
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
    fail(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");

  safetensors_file result;
  result.path = path;
  const std::uint64_t data_bytes = file_bytes - 8 - header_bytes;
  std::vector<entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == metadata_key)
      result.metadata = parse_metadata(path, value);
    else
      entries.push_back(parse_entry(path, key, value, data_bytes));
  }
  std::stable_sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  check_tiling(path, entries, data_bytes);

  for (const entry& e : entries) {  // tiled, so the data section reads front to back
    tensor t = tensor::empty(e.shape);
    if (t.numel()) in.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
    if (!in)
      fail(path, "reading the data of tensor '" + e.name + "' failed; was the file changed while read?");
    result.tensors.emplace_back(e.name, std::move(t));
  }
  return result;
}

}  // namespace petra
