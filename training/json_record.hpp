// One description per JSON record: a record's `describe(fields, record)` names each field once, and
// that description both writes the record (json_record::write) and reads it back with every field's
// type checked (json_record::read), so a writer and its reader cannot disagree on a name.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace petra::json_record {

/// How a field is written when it has no value, and what reading does when it is absent or null.
enum class presence {
  required,  // reading fails without it
  optional,  // an empty std::optional is written as null; absent or null on reading: left as it is
  omitted,   // written only when it holds a value; read as optional
};

/// A required field missing, or a field of the wrong type: the message names the field and where
/// it was ("metrics.jsonl line 7, stage 2: \"loss\" must be a number, got \"x\"").
class field_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class writer;

/// Whether `describe(fields, T&)` is declared for T (found by argument-dependent lookup).
template <class T, class = void>
struct is_record : std::false_type {};
template <class T>
struct is_record<T, std::void_t<decltype(describe(std::declval<writer&>(), std::declval<T&>()))>>
    : std::true_type {};

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

/// Writes each described field into a JSON object.
class writer {
 public:
  template <class T>
  void operator()(const char* name, const T& value, presence p = presence::required) {
    if constexpr (is_optional<T>::value)
      if (p == presence::omitted && !value) return;
    out_[name] = to_json(value);
  }
  /// A histogram as the metrics lines write it: {"value": count}.
  void counts(const char* name, const std::map<int64_t, int64_t>& h, presence = presence::required) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [value, count] : h) object[std::to_string(value)] = count;
    out_[name] = std::move(object);
  }
  /// A field whose value is the record's kind ("event": "step"); readers dispatch on it beforehand.
  void tag(const char* name, const char* value) { out_[name] = value; }

  nlohmann::json take() { return std::move(out_); }

  template <class T>
  static nlohmann::json to_json(const T& value) {
    if constexpr (is_optional<T>::value) {
      return value ? to_json(*value) : nlohmann::json();
    } else if constexpr (is_record<T>::value) {
      writer w;
      describe(w, const_cast<T&>(value));  // writing only reads: one description serves both ways
      return w.take();
    } else if constexpr (is_vector<T>::value) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& element : value) out.push_back(to_json(element));
      return out;
    } else {
      return nlohmann::json(value);  // numbers, strings, std::map<int64_t, int64_t> as [[value, count], ...]
    }
  }

 private:
  nlohmann::json out_ = nlohmann::json::object();
};

/// Reads each described field from a JSON object; `where` prefixes its errors.
class reader {
 public:
  reader(const nlohmann::json& in, std::string where) : in_(in), where_(std::move(where)) {}

  template <class T>
  void operator()(const char* name, T& value, presence p = presence::required) {
    const nlohmann::json* j = find(name, p);
    if (j) from_json(*j, value, name, where_);
  }
  void counts(const char* name, std::map<int64_t, int64_t>& h, presence p = presence::required);
  void tag(const char*, const char*) {}

  /// `j` into `value`: `name` and `where` say what it is in errors.
  template <class T>
  static void from_json(const nlohmann::json& j, T& value, const std::string& name,
                        const std::string& where) {
    if constexpr (is_optional<T>::value) {
      if (j.is_null()) {
        value.reset();
        return;
      }
      typename T::value_type inner{};
      from_json(j, inner, name, where);
      value = std::move(inner);
    } else if constexpr (is_record<T>::value) {
      if (!j.is_object()) fail(where, "\"" + name + "\" must be an object, got " + shown(j));
      reader r(j, element_where(where, name, j));
      describe(r, value);
    } else if constexpr (is_vector<T>::value) {
      if (!j.is_array()) fail(where, "\"" + name + "\" must be an array, got " + shown(j));
      value.clear();
      for (const nlohmann::json& element : j) {
        typename T::value_type item{};
        if (is_record<typename T::value_type>::value && !element.is_object())
          fail(where, "each element of \"" + name + "\" must be an object, got " + shown(element));
        from_json(element, item, name + "[" + std::to_string(value.size()) + "]", where);
        value.push_back(std::move(item));
      }
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!j.is_boolean()) fail(where, "\"" + name + "\" must be true or false, got " + shown(j));
      value = j.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      if (!j.is_number_integer()) fail(where, "\"" + name + "\" must be an integer, got " + shown(j));
      value = j.get<T>();
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!j.is_number()) fail(where, "\"" + name + "\" must be a number, got " + shown(j));
      value = j.get<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (!j.is_string()) fail(where, "\"" + name + "\" must be a string, got " + shown(j));
      value = j.get<std::string>();
    } else if constexpr (std::is_same_v<T, nlohmann::json>) {
      value = j;
    } else {  // std::map<int64_t, int64_t> as [[value, count], ...]
      static_assert(std::is_same_v<T, std::map<int64_t, int64_t>>,
                    "a field of a type json_record cannot read");
      value.clear();
      bool pairs = j.is_array();
      for (std::size_t i = 0; pairs && i < j.size(); ++i)
        pairs =
            j[i].is_array() && j[i].size() == 2 && j[i][0].is_number_integer() && j[i][1].is_number_integer();
      if (!pairs) fail(where, "\"" + name + "\" must be an array of [value, count] pairs, got " + shown(j));
      for (const nlohmann::json& pair : j) value[pair[0].get<int64_t>()] = pair[1].get<int64_t>();
    }
  }

 private:
  const nlohmann::json* find(const char* name, presence p) const;
  [[noreturn]] static void fail(const std::string& where, const std::string& what);
  static std::string shown(const nlohmann::json& j);
  /// Where a nested record is: a stage is named by its number ("line 7, stage 2"), others by their field.
  static std::string element_where(const std::string& where, const std::string& name,
                                   const nlohmann::json& j);

  const nlohmann::json& in_;
  std::string where_;
};

/// The JSON object of a record.
template <class R>
nlohmann::json write(const R& record) {
  return writer::to_json(record);
}

/// A record from its JSON object. Throws field_error naming the field and `where`.
template <class R>
R read(const nlohmann::json& j, const std::string& where = "") {
  if (!j.is_object()) throw field_error((where.empty() ? "" : where + ": ") + "expected a JSON object");
  R record{};
  reader r(j, where);
  describe(r, record);
  return record;
}

}  // namespace petra::json_record
