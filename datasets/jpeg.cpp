// TurboJPEG wrapper: header, scaled decode, grayscale and CMYK to RGB, errors and warnings told apart.
#include "datasets/jpeg.hpp"

#include <turbojpeg.h>

#include <cstring>
#include <limits>

namespace petra::data {
namespace {

constexpr int64_t max_pixels = int64_t{1} << 28;  // 268 M pixels: far above any photo, far below 4 GB of RGB
// Huffman-coded scans spend at least one bit on every 8×8 block, so a complete image has at most
// 512 pixels per byte of file; twice that is refused as a corrupt header (a few hundred bytes must
// not make the decoder fill and convert gigabytes). Only an arithmetic-coded, near-constant image
// could be that small, and no dataset holds one.
constexpr int64_t max_pixels_per_byte = 1024;

}  // namespace

int scaled_size(int dim, jpeg_scale scale) {
  return static_cast<int>((int64_t{dim} * scale.num + scale.denom - 1) / scale.denom);
}

jpeg_scale choose_jpeg_scale(double region_width, double region_height, int need_width, int need_height) {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  jpeg_scale best;
  for (int i = 0; factors != nullptr && i < count; ++i) {
    const jpeg_scale s{factors[i].num, factors[i].denom};
    // Only 1/2, 1/4 and 1/8: libjpeg-turbo's reduced IDCTs for these are SIMD code, while 7/8, 3/4,
    // 5/8 and 3/8 run generic C IDCTs that decode slower than the full size does (measured: 7/8
    // takes 1.6× the time of 1/1 on 500×375 photos).
    if (s.num != 1 || s.denom < 2) continue;
    if (region_width * s.num < double(need_width) * s.denom) continue;
    if (region_height * s.num < double(need_height) * s.denom) continue;
    if (int64_t{s.num} * best.denom < int64_t{best.num} * s.denom) best = s;
  }
  return best;
}

jpeg_decoder::jpeg_decoder() : handle_(tjInitDecompress()) {
  if (handle_ == nullptr) {
    throw std::runtime_error(std::string("tjInitDecompress failed: ") + tjGetErrorStr2(nullptr) +
                             " (out of memory?)");
  }
}

jpeg_decoder::~jpeg_decoder() { tjDestroy(handle_); }

void jpeg_decoder::fail(const char* what) {
  throw jpeg_error(std::string(what) + ": " + tjGetErrorStr2(handle_));
}

jpeg_header jpeg_decoder::read_header(const uint8_t* data, std::size_t size) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
    throw jpeg_error("not a JPEG file (no SOI marker FF D8 at the start; " + std::to_string(size) +
                     " bytes)");
  }
  if (size > std::numeric_limits<unsigned long>::max()) throw jpeg_error("file too large for TurboJPEG");
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle_, data, static_cast<unsigned long>(size), &width, &height, &subsampling,
                          &colorspace) != 0) {
    fail("cannot read the JPEG header");
  }
  if (width <= 0 || height <= 0) throw jpeg_error("JPEG header gives an empty image");
  if (int64_t{width} * height > max_pixels) {  // a corrupt header must not make us allocate gigabytes
    throw jpeg_error("JPEG header claims " + std::to_string(width) + "×" + std::to_string(height) +
                     " pixels, more than the " + std::to_string(max_pixels >> 20) + " Mi pixels accepted");
  }
  if (int64_t{width} * height > max_pixels_per_byte * static_cast<int64_t>(size)) {
    throw jpeg_error("JPEG header claims " + std::to_string(width) + "×" + std::to_string(height) +
                     " pixels in a file of " + std::to_string(size) + " bytes, more than " +
                     std::to_string(max_pixels_per_byte) + " pixels per byte can hold: corrupt");
  }
  jpeg_header header;
  header.width = width;
  header.height = height;
  header.grayscale = colorspace == TJCS_GRAY;
  header.cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  return header;
}

void jpeg_decoder::decode(const uint8_t* data, std::size_t size, jpeg_scale scale, rgb_image& out) {
  const jpeg_header header = read_header(data, size);
  out.width = scaled_size(header.width, scale);
  out.height = scaled_size(header.height, scale);
  out.pixels.resize(static_cast<std::size_t>(out.width) * out.height * 3);
  const bool cmyk = header.cmyk;
  if (cmyk) cmyk_.resize(static_cast<std::size_t>(out.width) * out.height * 4);
  uint8_t* target = cmyk ? cmyk_.data() : out.pixels.data();
  const int rc = tjDecompress2(handle_, data, static_cast<unsigned long>(size), target, out.width, 0,
                               out.height, cmyk ? TJPF_CMYK : TJPF_RGB, 0);
  if (rc != 0) {
    // A warning leaves a complete image, except the one saying the data ran out before the image did.
    const bool warning = tjGetErrorCode(handle_) == TJERR_WARNING;
    if (!warning || std::strstr(tjGetErrorStr2(handle_), "Premature end") != nullptr) fail("cannot decode");
  }
  if (!cmyk) return;
  const std::size_t pixels = static_cast<std::size_t>(out.width) * out.height;
  for (std::size_t p = 0; p < pixels; ++p) {
    const uint8_t* in = cmyk_.data() + 4 * p;
    const unsigned k = in[3];
    for (int c = 0; c < 3; ++c) out.pixels[3 * p + c] = static_cast<uint8_t>((in[c] * k + 127) / 255);
  }
}

}  // namespace petra::data
