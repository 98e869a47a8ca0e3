// Test helper: writes the bytes Python's pickle module produces for an ImageNet32 batch dict
// {'data': ndarray, 'labels': [...], 'mean': ndarray} holding numpy arrays, opcode by opcode as
// CPython's pickler emits them (memo puts, GLOBAL or STACK_GLOBAL, MARK … APPENDS / SETITEMS,
// numpy's _reconstruct + BUILD state), in the styles numpy users produce.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace petra::data::testing {

/// Which pickler wrote the file.
enum class pickle_style {
  python2_protocol2,  // Python 2: str keys and raw data as BINSTRING
  python3_protocol2,  // Python 3, protocol 2: bytes as _codecs.encode(latin-1 text, 'latin1')
  protocol3,          // Python 3.0–3.7's default (how the distributed files were written)
  protocol4,          // Python 3.8+'s default: FRAME, SHORT_BINUNICODE, STACK_GLOBAL, MEMOIZE
};

class pickle_writer {
 public:
  explicit pickle_writer(pickle_style style) : style_(style) {
    op(0x80);
    op(style == pickle_style::protocol3 ? 3 : style == pickle_style::protocol4 ? 4 : 2);
    if (style == pickle_style::protocol4) {
      op(0x95);  // FRAME with a length the reader only skips
      little(0, 8);
    }
  }

  std::vector<uint8_t>& bytes() { return out_; }

  void op(uint8_t code) { out_.push_back(code); }
  void little(uint64_t value, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  }
  void raw(const void* data, std::size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + n);
  }

  void memoize() {
    if (style_ == pickle_style::protocol4) {
      op(0x94);
    } else if (memo_ < 256) {
      op('q');
      little(memo_, 1);
    } else {
      op('r');
      little(memo_, 4);
    }
    ++memo_;
  }

  void text(const std::string& s) {
    if (style_ == pickle_style::python2_protocol2) {
      binstring(s.data(), s.size());
    } else if (style_ == pickle_style::protocol4 && s.size() < 256) {
      op(0x8c);
      little(s.size(), 1);
      raw(s.data(), s.size());
    } else {
      op('X');
      little(s.size(), 4);
      raw(s.data(), s.size());
    }
    memoize();
  }

  void bytes(const uint8_t* data, std::size_t n) {
    if (style_ == pickle_style::python2_protocol2) {
      binstring(data, n);
      memoize();
    } else if (style_ == pickle_style::python3_protocol2) {
      global("_codecs", "encode");
      std::string latin1_as_utf8;
      for (std::size_t i = 0; i < n; ++i) {
        if (data[i] < 0x80) {
          latin1_as_utf8 += static_cast<char>(data[i]);
        } else {
          latin1_as_utf8 += static_cast<char>(0xC0 | data[i] >> 6);
          latin1_as_utf8 += static_cast<char>(0x80 | (data[i] & 0x3F));
        }
      }
      text(latin1_as_utf8);
      text("latin1");
      op(0x86);  // TUPLE2
      memoize();
      op('R');
      memoize();
    } else {
      if (n < 256) {
        op('C');
        little(n, 1);
      } else {
        op('B');
        little(n, 4);
      }
      raw(data, n);
      memoize();
    }
  }

  void global(const std::string& module, const std::string& name) {
    const std::string key = module + "\n" + name;
    if (auto it = globals_.find(key); it != globals_.end()) {  // the pickler's memo hit: BINGET
      op('h');
      little(static_cast<uint64_t>(it->second), 1);
      return;
    }
    if (style_ == pickle_style::protocol4) {
      text(module);
      text(name);
      op(0x93);
    } else {
      op('c');
      raw(module.data(), module.size());
      op('\n');
      raw(name.data(), name.size());
      op('\n');
    }
    globals_[key] = memo_;
    memoize();
  }

  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      little(static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op('M');
      little(static_cast<uint64_t>(v), 2);
    } else {
      op('J');
      little(static_cast<uint64_t>(v), 4);
    }
  }

  /// numpy's ndarray.__reduce__: _reconstruct(ndarray, (0,), b'b') then BUILD (1, shape, dtype, False, raw).
  void ndarray(const std::string& dtype, char byte_order, const std::vector<int64_t>& shape,
               const uint8_t* data, std::size_t n, const std::string& module = "numpy.core.multiarray") {
    global(module, "_reconstruct");
    global("numpy", "ndarray");
    integer(0);
    op(0x85);  // TUPLE1
    memoize();
    const uint8_t b = 'b';
    bytes(&b, 1);
    op(0x87);  // TUPLE3
    memoize();
    op('R');
    memoize();
    op('(');
    integer(1);
    for (int64_t dim : shape) integer(dim);
    op(shape.size() == 1 ? 0x85 : 0x86);
    memoize();
    global("numpy", "dtype");
    text(dtype);
    op(0x89);  // False
    op(0x88);  // True
    op(0x87);
    memoize();
    op('R');
    memoize();
    op('(');
    integer(3);
    text(std::string(1, byte_order));
    op('N');
    op('N');
    op('N');
    integer(-1);
    integer(-1);
    integer(0);
    op('t');
    memoize();
    op('b');   // BUILD the dtype
    op(0x89);  // not Fortran order
    bytes(data, n);
    op('t');
    memoize();
    op('b');  // BUILD the array
  }

  void int_list(const std::vector<int64_t>& values) {
    op(']');
    memoize();
    if (values.size() == 1) {
      integer(values[0]);
      op('a');
      return;
    }
    for (std::size_t first = 0; first < values.size(); first += 1000) {  // CPython batches APPENDS by 1000
      op('(');
      for (std::size_t i = first; i < values.size() && i < first + 1000; ++i) integer(values[i]);
      op('e');
    }
  }

 private:
  void binstring(const void* data, std::size_t n) {
    if (n < 256) {
      op('U');
      little(n, 1);
    } else {
      op('T');
      little(n, 4);
    }
    raw(data, n);
  }

  pickle_style style_;
  std::vector<uint8_t> out_;
  int memo_ = 0;
  std::map<std::string, int> globals_;
};

/// What goes into an ImageNet32 batch pickle; the defaults give the distributed layout.
struct imagenet32_contents {
  int64_t count = 0;
  std::vector<uint8_t> pixels;  // count × columns
  int64_t columns = 3072;
  std::vector<int64_t> labels;  // 1-based
  std::string dtype = "u1";
  bool with_mean = true;  // train batches carry the mean image (float64, 3072)
  std::string labels_key = "labels";
};

/// `count` images whose pixel k of image i is (i·7 + k + first) mod 256, labels 1 + (i·13 + first) mod 1000.
inline imagenet32_contents imagenet32_batch_contents(int64_t count, int first) {
  imagenet32_contents c;
  c.count = count;
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t k = 0; k < 3072; ++k) c.pixels.push_back(static_cast<uint8_t>((i * 7 + k + first) % 256));
    c.labels.push_back(1 + (i * 13 + first) % 1000);
  }
  return c;
}

/// The pickle bytes of {'data': …, 'labels': […], 'mean': …} as `style` writes them.
inline std::vector<uint8_t> imagenet32_pickle(const imagenet32_contents& c,
                                              pickle_style style = pickle_style::protocol3) {
  pickle_writer w(style);
  w.op('}');
  w.memoize();
  w.op('(');
  w.text("data");
  w.ndarray(c.dtype, c.dtype == "u1" ? '|' : '<', {c.count, c.columns}, c.pixels.data(), c.pixels.size());
  w.text(c.labels_key);
  w.int_list(c.labels);
  if (c.with_mean) {
    w.text("mean");
    std::vector<double> mean(3072, 127.5);
    w.ndarray("f8", '<', {3072}, reinterpret_cast<const uint8_t*>(mean.data()), mean.size() * sizeof(double));
  }
  w.op('u');  // SETITEMS
  w.op('.');
  return w.bytes();
}

}  // namespace petra::data::testing
