// The pickle virtual machine, restricted to the opcodes protocols 2-5 emit for plain data and numpy
// arrays. Bounds are checked before every read; nothing is ever called or imported.
#include "datasets/pickle_reader.hpp"

#include <cstdio>
#include <cstring>

#include "datasets/dataset.hpp"

namespace petra::data {
namespace {

using kind = pickle_value::kind;

pickle_ptr make(kind type) {
  auto value = std::make_shared<pickle_value>();
  value->type = type;
  return value;
}

pickle_ptr make_integer(int64_t v) {
  auto value = make(kind::integer);
  value->integer = v;
  return value;
}

// Text (UTF-8) whose code points are all below 256, as Latin-1 bytes: how protocol 2 under Python 3
// carries bytes (_codecs.encode(text, 'latin1')). False when a code point does not fit.
bool latin1_bytes(const std::string& utf8, std::vector<uint8_t>& out) {
  out.clear();
  out.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c < 0x80) {
      out.push_back(c);
      i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < utf8.size()) {
      const unsigned code = (c & 0x1Fu) << 6 | (static_cast<unsigned char>(utf8[i + 1]) & 0x3Fu);
      if (code > 0xFF) return false;
      out.push_back(static_cast<uint8_t>(code));
      i += 2;
    } else {
      return false;
    }
  }
  return true;
}

class unpickler {
 public:
  unpickler(const std::vector<uint8_t>& bytes, const std::string& path) : bytes_(bytes), path_(path) {}

  pickle_ptr run() {
    for (;;) {
      op_offset_ = pos_;
      const uint8_t op = take(1)[0];
      op_ = op;
      // One opcode a line: the switch reads as the opcode table it is.
      // clang-format off
      switch (op) {
        case 0x80:  take(1); break;                                                 // PROTO n
        case 0x95:  take(8); break;                                                 // FRAME: a length hint only
        case '.':   return stop();                                                  // STOP
        case '(':   marks_.push_back(stack_.size()); break;                         // MARK
        case '}':   push(make(kind::dict)); break;                                  // EMPTY_DICT
        case ']':   push(make(kind::list)); break;                                  // EMPTY_LIST
        case ')':   push(make(kind::tuple)); break;                                 // EMPTY_TUPLE
        case 'd':   push(container_from_mark(kind::dict)); break;                   // DICT
        case 'l':   push(container_from_mark(kind::list)); break;                   // LIST
        case 't':   push(container_from_mark(kind::tuple)); break;                  // TUPLE
        case 0x85:  push(tuple_of(1)); break;                                       // TUPLE1
        case 0x86:  push(tuple_of(2)); break;                                       // TUPLE2
        case 0x87:  push(tuple_of(3)); break;                                       // TUPLE3
        case 'a':   append(pop()); break;                                           // APPEND
        case 'e':   appends(); break;                                               // APPENDS
        case 's':   setitem(); break;                                               // SETITEM
        case 'u':   setitems(); break;                                              // SETITEMS
        case 'N':   push(make(kind::none)); break;                                  // NONE
        case 0x88:  push_bool(true); break;                                         // NEWTRUE
        case 0x89:  push_bool(false); break;                                        // NEWFALSE
        case 'J':   push(make_integer(static_cast<int32_t>(little(4)))); break;     // BININT
        case 'K':   push(make_integer(static_cast<int64_t>(little(1)))); break;     // BININT1
        case 'M':   push(make_integer(static_cast<int64_t>(little(2)))); break;     // BININT2
        case 0x8a:  push(long_integer(little(1))); break;                           // LONG1
        case 0x8b:  push(long_integer(little(4))); break;                           // LONG4
        case 'G':   push(binfloat()); break;                                        // BINFLOAT
        case 'X':   push(text(little(4))); break;                                   // BINUNICODE
        case 0x8c:  push(text(little(1))); break;                                   // SHORT_BINUNICODE
        case 0x8d:  push(text(little(8))); break;                                   // BINUNICODE8
        case 'T':   push(bytes_view(little(4))); break;                             // BINSTRING (Python 2 str)
        case 'U':   push(bytes_view(little(1))); break;                             // SHORT_BINSTRING
        case 'B':   push(bytes_view(little(4))); break;                             // BINBYTES
        case 'C':   push(bytes_view(little(1))); break;                             // SHORT_BINBYTES
        case 0x8e:  push(bytes_view(little(8))); break;                             // BINBYTES8
        case 0x96:  push(bytes_view(little(8))); break;                             // BYTEARRAY8
        case 'c':   push(global_from_lines()); break;                               // GLOBAL
        case 0x93:  push(stack_global()); break;                                    // STACK_GLOBAL
        case 'R':   reduce(); break;                                                // REDUCE
        case 0x81:  reduce(); break;                                                // NEWOBJ, kept as an object too
        case 'b':   build(); break;                                                 // BUILD
        case 'q':   put(little(1)); break;                                          // BINPUT
        case 'r':   put(little(4)); break;                                          // LONG_BINPUT
        case 0x94:  put(memo_.size()); break;                                       // MEMOIZE
        case 'h':   push(get(little(1))); break;                                    // BINGET
        case 'j':   push(get(little(4))); break;                                    // LONG_BINGET
        case '0':   pop(); break;                                                   // POP
        case '1':   pop_mark(); break;                                              // POP_MARK
        case '2':   push(top()); break;                                             // DUP
        default:          unsupported();
      }
      // clang-format on
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    char where[96];
    std::snprintf(where, sizeof where, "at offset %zu (opcode 0x%02X '%c')", op_offset_, op_,
                  op_ >= 0x20 && op_ < 0x7F ? op_ : '?');
    throw dataset_error(path_ + ": not a pickle of the expected layout: " + what + " " + where);
  }

  [[noreturn]] void unsupported() const {
    fail(
        "this opcode is outside the supported subset (protocols 2 to 5 without out-of-band buffers; "
        "protocol 0/1 text pickles are not read)");
  }

  const uint8_t* take(std::size_t n) {
    if (n > bytes_.size() - pos_) {
      fail("the pickle ends after " + std::to_string(bytes_.size()) + " bytes, " + std::to_string(n) +
           " more were needed (truncated file?)");
    }
    const uint8_t* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  uint64_t little(std::size_t n) {
    const uint8_t* p = take(n);
    uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
    return v;
  }

  void push(pickle_ptr value) { stack_.push_back(std::move(value)); }
  void push_bool(bool v) {
    auto value = make(kind::boolean);
    value->integer = v ? 1 : 0;
    push(value);
  }

  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  pickle_ptr pop() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    pickle_ptr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }

  pickle_ptr& top() {
    if (stack_.size() <= floor()) fail("the stack is empty");
    return stack_.back();
  }

  std::vector<pickle_ptr> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<pickle_ptr> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }

  pickle_ptr container_from_mark(kind type) {
    auto value = make(type);
    value->items = pop_mark();
    if (type == kind::dict && value->items.size() % 2 != 0)
      fail("a dict with an odd number of keys and values");
    return value;
  }

  pickle_ptr tuple_of(std::size_t n) {
    auto value = make(kind::tuple);
    value->items.resize(n);
    for (std::size_t i = n; i-- > 0;) value->items[i] = pop();
    return value;
  }

  pickle_value& expect(pickle_ptr& target, kind type, const char* what) {
    if (!target || target->type != type)
      fail(std::string("expected ") + what + " below, found " + describe(*target));
    return *target;
  }

  void append(pickle_ptr item) { expect(top(), kind::list, "a list").items.push_back(std::move(item)); }

  void appends() {
    std::vector<pickle_ptr> items = pop_mark();
    auto& list = expect(top(), kind::list, "a list").items;
    list.insert(list.end(), items.begin(), items.end());
  }

  void setitem() {
    pickle_ptr value = pop(), key = pop();
    auto& dict = expect(top(), kind::dict, "a dict").items;
    dict.push_back(std::move(key));
    dict.push_back(std::move(value));
  }

  void setitems() {
    std::vector<pickle_ptr> items = pop_mark();
    if (items.size() % 2 != 0) fail("SETITEMS with an odd number of keys and values");
    auto& dict = expect(top(), kind::dict, "a dict").items;
    dict.insert(dict.end(), items.begin(), items.end());
  }

  pickle_ptr long_integer(uint64_t n) {
    if (n > 8) fail("an integer of " + std::to_string(n) + " bytes does not fit 64 bits");
    const uint8_t* p = take(static_cast<std::size_t>(n));
    uint64_t v = 0;
    for (uint64_t i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
    if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    return make_integer(static_cast<int64_t>(v));
  }

  pickle_ptr binfloat() {
    const uint8_t* p = take(8);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = bits << 8 | p[i];  // big-endian
    auto value = make(kind::real);
    std::memcpy(&value->real, &bits, sizeof bits);
    return value;
  }

  pickle_ptr text(uint64_t n) {
    if (n > bytes_.size() - pos_) take(bytes_.size() - pos_ + 1);  // reports the truncation
    const uint8_t* p = take(static_cast<std::size_t>(n));
    auto value = make(kind::text);
    value->text.assign(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
    return value;
  }

  pickle_ptr bytes_view(uint64_t n) {
    if (n > bytes_.size() - pos_) take(bytes_.size() - pos_ + 1);
    auto value = make(kind::bytes);
    value->data = take(static_cast<std::size_t>(n));
    value->size = static_cast<std::size_t>(n);
    return value;
  }

  std::string line() {
    std::string text;
    for (;;) {
      const char c = static_cast<char>(take(1)[0]);
      if (c == '\n') return text;
      text += c;
      if (text.size() > 256) fail("a GLOBAL name longer than 256 characters");
    }
  }

  pickle_ptr global(const std::string& module, const std::string& name) {
    auto value = make(kind::global);
    value->text = module + "." + name;
    return value;
  }

  pickle_ptr global_from_lines() {
    const std::string module = line();
    return global(module, line());
  }

  pickle_ptr stack_global() {
    pickle_ptr name = pop(), module = pop();
    if (module->type != kind::text || name->type != kind::text) fail("STACK_GLOBAL needs two strings");
    return global(module->text, name->text);
  }

  void reduce() {
    pickle_ptr arguments = pop(), callable = pop();
    if (arguments->type != kind::tuple)
      fail("REDUCE arguments are " + describe(*arguments) + ", not a tuple");
    // Protocol 2 under Python 3 writes bytes b as _codecs.encode(b.decode('latin1'), 'latin1').
    if (callable->type == kind::global && callable->text == "_codecs.encode" &&
        arguments->items.size() == 2 && arguments->items[0]->type == kind::text &&
        arguments->items[1]->type == kind::text) {
      auto value = make(kind::bytes);
      if (!latin1_bytes(arguments->items[0]->text, value->owned)) fail("_codecs.encode of non-Latin-1 text");
      value->data = value->owned.data();
      value->size = value->owned.size();
      push(value);
      return;
    }
    auto value = make(kind::object);
    value->callable = std::move(callable);
    value->arguments = std::move(arguments);
    push(value);
  }

  void build() {
    pickle_ptr state = pop();
    pickle_ptr& target = top();
    if (target->type != kind::object) fail("BUILD on " + describe(*target) + ", expected an object");
    target->state = std::move(state);
  }

  void put(uint64_t index) {
    if (index > memo_.size() + 65536) fail("memo index " + std::to_string(index) + " is implausibly large");
    if (memo_.size() <= index) memo_.resize(static_cast<std::size_t>(index) + 1);
    memo_[static_cast<std::size_t>(index)] = top();
  }

  pickle_ptr get(uint64_t index) {
    if (index >= memo_.size() || !memo_[static_cast<std::size_t>(index)]) {
      fail("memo entry " + std::to_string(index) + " was never stored");
    }
    return memo_[static_cast<std::size_t>(index)];
  }

  pickle_ptr stop() {
    if (stack_.size() != 1 || !marks_.empty()) {
      fail("STOP with " + std::to_string(stack_.size()) + " values on the stack, expected exactly 1");
    }
    return stack_.back();
  }

  const std::vector<uint8_t>& bytes_;
  const std::string& path_;
  std::size_t pos_ = 0, op_offset_ = 0;
  uint8_t op_ = 0;
  std::vector<pickle_ptr> stack_, memo_;
  std::vector<std::size_t> marks_;
};

}  // namespace

pickle_ptr read_pickle(const std::vector<uint8_t>& bytes, const std::string& path) {
  if (bytes.size() < 2 || bytes[0] != 0x80 || bytes[1] < 2) {
    std::string found = bytes.empty() ? "an empty file" : "first byte 0x";
    if (!bytes.empty()) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%02X", bytes[0]);
      found += hex;
      if (bytes.size() >= 2 && bytes[0] == 0x80) found += " with protocol " + std::to_string(bytes[1]);
    }
    throw dataset_error(
        path + ": not a pickle of protocol 2 or later (expected PROTO 0x80 then 2..5, found " + found + ")");
  }
  return unpickler(bytes, path).run();
}

}  // namespace petra::data
