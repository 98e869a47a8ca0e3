// safetensors: round trips, the exact bytes of the standard layout, and save-side checks.
#include "compute/serialize/safetensors.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "tests/serialize/scratch_directory.hpp"
#include "tests/skip.hpp"

using namespace petra;
using petra::testing::file_size_limit;
using petra::testing::message_of;
using petra::testing::read_bytes;
using petra::testing::scratch_directory;

namespace {

tensor counting(const shape_t& shape, float start) {
  std::vector<float> values(static_cast<std::size_t>(numel_of(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = start + 0.25f * static_cast<float>(i);
  return tensor::from_vector(shape, values);
}

bool same_bits(const tensor& a, const tensor& b) {
  return a.shape() == b.shape() && (a.numel() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

}  // namespace

TEST_CASE("save then load gives back every tensor bit for bit, in file order, with the metadata") {
  scratch_directory dir;
  const std::string path = dir.file("round_trip.safetensors");
  const float inf = std::numeric_limits<float>::infinity();
  const named_tensors saved = {
      {"z.weight", counting({3, 2, 3, 3}, -4.0f)},  // names deliberately not in sorted order
      {"a.bias", counting({3}, 1.0f)},
      {"empty", tensor::zeros({2, 0, 5})},
      {"scalar", tensor::from_vector({}, {-0.0f})},
      {"specials", tensor::from_vector({4}, {inf, -inf, std::nanf(""), 1e-45f})},
  };
  const std::map<std::string, std::string> metadata = {{"step", "1200"},
                                                       {"config", "{\"arch\": \"revnet18\"}"}};
  save_safetensors(path, saved, metadata);

  const safetensors_file loaded = load_safetensors(path);
  CHECK(loaded.path == path);
  CHECK(loaded.metadata == metadata);
  REQUIRE(loaded.tensors.size() == saved.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    CAPTURE(saved[i].first);
    CHECK(loaded.tensors[i].first == saved[i].first);
    CHECK(same_bits(loaded.tensors[i].second, saved[i].second));
    CHECK_FALSE(loaded.tensors[i].second.shares_storage_with(saved[i].second));
  }
  CHECK(loaded.find("scalar").rank() == 0);
  CHECK(loaded.find("scalar").numel() == 1);
  CHECK(loaded.find("empty").shape() == shape_t{2, 0, 5});
  CHECK(dir.entries() == std::vector<std::string>{"round_trip.safetensors"});
}

TEST_CASE("no tensors and no metadata is a valid file") {
  scratch_directory dir;
  const std::string path = dir.file("nothing.safetensors");
  save_safetensors(path, {});
  CHECK(read_bytes(path) == std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  const safetensors_file loaded = load_safetensors(path);
  CHECK(loaded.tensors.empty());
  CHECK(loaded.metadata.empty());
}

TEST_CASE("the bytes on disk follow the safetensors layout exactly") {
  scratch_directory dir;
  const std::string path = dir.file("tiny.safetensors");
  save_safetensors(path,
                   {{"a", tensor::from_vector({2}, {1.0f, -2.0f})}, {"b", tensor::from_vector({}, {0.5f})}},
                   {{"k", "v"}});

  // 132 bytes of JSON, padded with 4 spaces to 136 = 0x88.
  const std::string json =
      R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[],"data_offsets":[8,12]}})";
  REQUIRE(json.size() == 132);
  const std::string length_field("\x88\0\0\0\0\0\0\0", 8);
  const std::string data(
      "\x00\x00\x80\x3f"   // 1.0f
      "\x00\x00\x00\xc0"   // -2.0f
      "\x00\x00\x00\x3f",  // 0.5f
      12);
  CHECK(read_bytes(path) == length_field + json + "    " + data);
}

TEST_CASE("an independent Python reader decodes what we write") {
  if (std::system("test -x /usr/bin/python3") != 0)
    PETRA_SKIP("the Python cross-check needs /usr/bin/python3");
  scratch_directory dir;
  const std::string path = dir.file("cross.safetensors");
  save_safetensors(
      path,
      {{"w", counting({2, 3}, -1.0f)}, {"s", tensor::from_vector({}, {3.5f})}, {"e", tensor::zeros({0})}},
      {{"epoch", "7"}});
  // json + struct only: header length, 8-byte padding, offsets tiling the data, values.
  const std::string script = dir.file("read.py");
  petra::testing::write_bytes(script, R"(import json, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
assert n % 8 == 0 and 8 + n <= len(raw)
header = json.loads(raw[8:8 + n].decode('utf-8'))
data = raw[8 + n:]
out = ['meta ' + json.dumps(header.pop('__metadata__'), sort_keys=True)]
end = 0
for name, e in header.items():
    b, f = e['data_offsets']
    assert e['dtype'] == 'F32' and b == end
    end = f
    values = struct.unpack('<%df' % ((f - b) // 4), data[b:f])
    out.append(name + ' ' + ','.join(map(str, e['shape'])) + ' ' + ' '.join('%.9g' % v for v in values))
assert end == len(data)
open(sys.argv[2], 'w').write('\n'.join(out) + '\n')
)");
  const std::string decoded = dir.file("decoded.txt");
  REQUIRE(std::system(("/usr/bin/python3 " + script + " " + path + " " + decoded).c_str()) == 0);
  CHECK(read_bytes(decoded) ==
        "meta {\"epoch\": \"7\"}\n"
        "w 2,3 -1 -0.75 -0.5 -0.25 0 0.25\n"
        "s  3.5\n"
        "e 0 \n");
}

TEST_CASE("save_safetensors refuses what it cannot write faithfully, before touching the file") {
  scratch_directory dir;
  const std::string path = dir.file("refused.safetensors");
  const tensor t = tensor::zeros({2});
  CHECK(message_of([&] {
          save_safetensors(path, {{"x", t}, {"x", t}});
        }).find("'x' appears twice") != std::string::npos);
  CHECK(message_of([&] {
          save_safetensors(path, {{"__metadata__", t}});
        }).find("reserved") != std::string::npos);
  CHECK(message_of([&] {
          save_safetensors(path, {{"x", tensor()}});
        }).find("undefined") != std::string::npos);
  // A device tensor (never dereferenced: the check comes first).
  const tensor on_gpu({2}, std::make_shared<storage>(nullptr, 8, device{device_type::cuda, 0}, nullptr));
  const std::string gpu_message = message_of([&] { save_safetensors(path, {{"g", on_gpu}}); });
  CHECK(gpu_message.find("cuda:0") != std::string::npos);
  CHECK(gpu_message.find("host fp32") != std::string::npos);
  CHECK(message_of([&] {
          save_safetensors(path, {{"bad\xff", t}});
        }).find("cannot encode") != std::string::npos);
  CHECK(dir.entries().empty());
}

TEST_CASE("find names the missing tensor and the file") {
  scratch_directory dir;
  const std::string path = dir.file("find.safetensors");
  save_safetensors(path, {{"stem.conv.weight", tensor::zeros({4, 1, 3, 3})}});
  const safetensors_file loaded = load_safetensors(path);
  CHECK(loaded.contains("stem.conv.weight"));
  CHECK_FALSE(loaded.contains("head.weight"));
  const std::string message = message_of([&] { loaded.find("head.weight"); });
  CHECK(message.find("'head.weight'") != std::string::npos);
  CHECK(message.find(path) != std::string::npos);
  CHECK_THROWS_AS(loaded.find("head.weight"), safetensors_error);
}

TEST_CASE("overwriting a checkpoint replaces it whole") {
  scratch_directory dir;
  const std::string path = dir.file("ckpt.safetensors");
  save_safetensors(path, {{"w", counting({100}, 0.0f)}}, {{"step", "1"}});
  save_safetensors(path, {{"w", counting({3}, 9.0f)}}, {{"step", "2"}});
  const safetensors_file loaded = load_safetensors(path);
  CHECK(loaded.metadata.at("step") == "2");
  CHECK(loaded.find("w").to_vector() == std::vector<float>{9.0f, 9.25f, 9.5f});
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
}

TEST_CASE("a checkpoint write that fails on a full disk keeps the previous checkpoint") {
  scratch_directory dir;
  const std::string path = dir.file("ckpt.safetensors");
  save_safetensors(path, {{"w", counting({4}, 1.0f)}}, {{"step", "1"}});
  {
    file_size_limit limit(4096);
    const std::string message = message_of([&] {
      save_safetensors(path, {{"w", counting({100'000}, 0.0f)}});
    });
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("write error") != std::string::npos);
  }
  const safetensors_file loaded = load_safetensors(path);
  CHECK(loaded.metadata.at("step") == "1");
  CHECK(loaded.find("w").to_vector() == std::vector<float>{1.0f, 1.25f, 1.5f, 1.75f});
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});
}
