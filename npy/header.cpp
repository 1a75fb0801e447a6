#include "npy/header.h"

#include <cctype>
#include <variant>

#include "npy/fail.h"

namespace apnn::npy {

namespace {

// The Python literals a header can hold: a string, a bool, an int or a tuple of ints.
using Value = std::variant<std::string, bool, int64_t, std::vector<int64_t>>;

// A recursive-descent reader of the small subset of Python literal syntax numpy headers use.
// It never evaluates anything, so a hostile header can only be rejected.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!peek_is('}')) {
      const std::string key = string_literal();
      expect(':');
      const Value value = literal();
      const int slot = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
      if (slot < 0) bad("header has unknown key '" + key + "'");
      if (seen[slot]) bad("header repeats key '" + key + "'");
      seen[slot] = true;
      assign(h, slot, value);
      if (!peek_is(',')) break;
      ++pos_;  // a trailing comma before '}' is valid Python, and numpy writes one
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) syntax("unexpected text after the dict");
    static const char* const names[3] = {"descr", "fortran_order", "shape"};
    for (int i = 0; i < 3; ++i)
      if (!seen[i]) bad(std::string("header lacks key '") + names[i] + "'");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorKind::InvalidInput, path_, what); }
  [[noreturn]] void syntax(const std::string& what) const {
    bad("header is not a valid dict: " + what + " at offset " + std::to_string(pos_));
  }

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek_is(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek_is(c)) syntax(std::string("expected '") + c + "'");
    ++pos_;
  }

  Value literal() {
    skip_space();
    if (pos_ >= s_.size()) syntax("expected a value");
    const char c = s_[pos_];
    if (c == '\'' || c == '"') return string_literal();
    if (c == '(') return tuple_or_int();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return int_literal();
    if (word("True")) return true;
    if (word("False")) return false;
    syntax("unsupported value");
  }

  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    const size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    pos_ = end;
    return true;
  }

  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) syntax("expected a string");
    const char quote = s_[pos_++];
    std::string out;
    for (; pos_ < s_.size() && s_[pos_] != quote; ++pos_) {
      // No descr or key needs escapes; refusing them (and control characters) keeps every
      // name we echo in an error message on one line.
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '\\' || c < 0x20) syntax("unsupported character in a string");
      out += s_[pos_];
    }
    if (pos_ >= s_.size()) syntax("unterminated string");
    ++pos_;
    return out;
  }

  int64_t int_literal() {
    skip_space();
    const bool negative = pos_ < s_.size() && s_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[pos_]))) syntax("expected an integer");
    uint64_t v = 0;
    for (; pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])); ++pos_) {
      const auto digit = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (uint64_t{INT64_MAX} - digit) / 10) syntax("integer out of range");
      v = v * 10 + digit;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;  // Python 2 long, as numpy accepts
    return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  }

  // "(4,)" and "()" are tuples, "(4)" is just a parenthesised int (as in Python).
  Value tuple_or_int() {
    expect('(');
    std::vector<int64_t> items;
    bool comma = false;
    while (!peek_is(')')) {
      items.push_back(int_literal());
      comma = peek_is(',');
      if (!comma) break;
      ++pos_;
    }
    expect(')');
    if (items.size() == 1 && !comma) return items[0];
    return items;
  }

  void assign(Header& h, int slot, const Value& v) const {
    if (slot == 0) {
      if (!std::holds_alternative<std::string>(v)) bad("header 'descr' is not a string");
      h.descr = std::get<std::string>(v);
    } else if (slot == 1) {
      if (!std::holds_alternative<bool>(v)) bad("header 'fortran_order' is not True or False");
      h.fortran_order = std::get<bool>(v);
    } else {
      if (!std::holds_alternative<std::vector<int64_t>>(v)) bad("header 'shape' is not a tuple");
      h.shape = std::get<std::vector<int64_t>>(v);
    }
  }

  std::string_view s_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

Header parse_header(std::string_view text, const std::string& path) { return DictParser(text, path).parse(); }

int64_t element_count(const std::vector<int64_t>& shape, int element_size, const std::string& path) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(ErrorKind::InvalidInput, path, "shape has a negative dimension " + std::to_string(d));
    if (d != 0 && count > INT64_MAX / element_size / d) fail(ErrorKind::InvalidInput, path, "shape is too large");
    count *= d;
  }
  return count;
}

std::string format_header(const Header& h, size_t preamble_size) {
  std::string shape = "(";
  for (size_t i = 0; i < h.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(h.shape[i]);
  shape += h.shape.size() == 1 ? ",)" : ")";
  std::string text = "{'descr': '" + h.descr + "', 'fortran_order': " + (h.fortran_order ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  // Current numpy leaves room for the growth axis to reach 21 digits, so that appending
  // rows can rewrite the header in place; we copy it to stay byte-identical.
  constexpr size_t kGrowthAxisMaxDigits = 21;
  if (!h.shape.empty()) {
    const size_t digits = std::to_string(h.fortran_order ? h.shape.back() : h.shape.front()).size();
    text.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // As numpy: always 1..64 spaces, then '\n', so the data starts 64-byte aligned.
  constexpr size_t kAlign = 64;
  const size_t pad = kAlign - (preamble_size + text.size() + 1) % kAlign;
  text.append(pad, ' ');
  text += '\n';
  return text;
}

}  // namespace apnn::npy
