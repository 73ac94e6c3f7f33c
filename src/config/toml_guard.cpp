#include "config/toml_guard.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

#include "core/printable_text.h"

namespace gf {
namespace {

// One pass over the text with an explicit stack of open brackets and braces: the scan itself
// must not recurse, or it would fail on the very input it guards against.
class ShapeScanner {
 public:
  ShapeScanner(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Status Run() {
    StartLine();
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
        // A newline ends a key/value pair, but not an array that spans lines.
        if (frames_.empty()) {
          StartLine();
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
        continue;
      }
      if (c == '#') {
        SkipComment();
        continue;
      }
      const bool line_start = line_start_;
      line_start_ = false;
      if (c == '"' || c == '\'') {
        GF_TRY(KeyPart());  // a quoted key is a segment like a bare one
        SkipString(c);
        continue;
      }
      GF_TRY(Step(c, line_start));
      ++pos_;
    }
    return OkStatus();
  }

 private:
  // kKey: reading a key (its dots nest); kValue: a value (its dots are floats, times);
  // kHeader: inside a table header's brackets.
  enum class Mode { kKey, kValue, kHeader };

  // An open '[' or '{': the depth outside it, and the depth of its elements, to which a ','
  // returns (an inline table's next key starts again from there).
  struct Frame {
    char open;
    int outer;
    int inner;
  };

  // The character `c` outside strings and comments.
  Status Step(char c, bool line_start) {
    switch (c) {
      case '[':
        if (line_start && frames_.empty() && mode_ == Mode::kKey) {
          return StartHeader();
        }
        if (mode_ == Mode::kHeader) {
          return HeaderDeeper();  // not TOML; counted all the same
        }
        return Open(c);
      case '{':
        return Open(c);
      case ']':
      case '}':
        if (mode_ == Mode::kHeader) {
          // The rest of the line ("]" of a "[[...]]", a comment) nests nothing.
          depth_ = header_depth_;
          mode_ = Mode::kValue;
        } else {
          Close();
        }
        return OkStatus();
      case ',':
        if (!frames_.empty()) {
          depth_ = frames_.back().inner;
          mode_ = frames_.back().open == '{' ? Mode::kKey : Mode::kValue;
          key_started_ = false;
        }
        return OkStatus();
      case '=':
        if (mode_ == Mode::kKey) {
          mode_ = Mode::kValue;
        }
        return OkStatus();
      case '.':
        if (mode_ == Mode::kHeader) {
          return HeaderDeeper();
        }
        return mode_ == Mode::kKey ? Deeper() : OkStatus();
      default:
        return KeyPart();
    }
  }

  // A key/value line starts at the depth of the last table header.
  void StartLine() {
    depth_ = header_depth_;
    mode_ = Mode::kKey;
    key_started_ = false;
    line_start_ = true;
  }

  // "[" or "[[" at the start of a line: the header's segments set the depth of the lines below.
  Status StartHeader() {
    mode_ = Mode::kHeader;
    header_depth_ = 1;
    if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '[') {
      ++pos_;  // an array of tables: the array is a level, each table in it another
      ++header_depth_;
    }
    return CheckDepth(header_depth_);
  }

  Status HeaderDeeper() {
    ++header_depth_;
    return CheckDepth(header_depth_);
  }

  // The first character of a key is its first segment.
  Status KeyPart() {
    if (mode_ != Mode::kKey || key_started_) {
      return OkStatus();
    }
    key_started_ = true;
    return Deeper();
  }

  Status Open(char c) {
    frames_.push_back(Frame{c, depth_, 0});
    GF_TRY(Deeper());
    frames_.back().inner = depth_;
    mode_ = c == '{' ? Mode::kKey : Mode::kValue;
    key_started_ = false;
    return OkStatus();
  }

  // A close with nothing open is toml11's to refuse.
  void Close() {
    if (frames_.empty()) {
      return;
    }
    depth_ = frames_.back().outer;
    frames_.pop_back();
    mode_ = Mode::kValue;
  }

  Status Deeper() { return CheckDepth(++depth_); }

  Status CheckDepth(int depth) const {
    if (depth <= kMaxSettingsDepth) {
      return OkStatus();
    }
    return InvalidArgument(source_ + ":" + std::to_string(line_) + ": nested more than " +
                           std::to_string(kMaxSettingsDepth) +
                           " levels deep (each table name segment, dotted key segment, array "
                           "and inline table is a level); settings need a few: look for an "
                           "unclosed '[' or '{', or flatten the file");
  }

  void SkipComment() {
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      ++pos_;
    }
  }

  // From the opening quote `q` past the closing one: "basic" and 'literal' strings end on their
  // line; """multi-line""" and '''multi-line''' ones may span lines. Only basic strings have
  // escapes. An unterminated string runs to the end of its line or of the text (toml11 then
  // refuses it).
  void SkipString(char q) {
    const std::string triple(3, q);
    const bool basic = q == '"';
    if (text_.substr(pos_, 3) == triple) {
      pos_ += 3;
      while (pos_ < text_.size()) {
        if (text_.substr(pos_, 3) == triple) {
          pos_ += 3;
          // Up to two more quotes belong to the string: """a""""" is a"".
          for (int extra = 0; extra < 2 && pos_ < text_.size() && text_[pos_] == q; ++extra) {
            ++pos_;
          }
          return;
        }
        if (text_[pos_] == '\n') {
          ++line_;
        }
        if (basic && text_[pos_] == '\\' && pos_ + 1 < text_.size()) {
          ++pos_;  // the escaped character, a newline included (a line-ending backslash)
          if (text_[pos_] == '\n') {
            ++line_;
          }
        }
        ++pos_;
      }
      return;
    }
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '\n') {
      const char c = text_[pos_++];
      if (c == q) {
        return;
      }
      if (basic && c == '\\' && pos_ < text_.size() && text_[pos_] != '\n') {
        ++pos_;
      }
    }
  }

  std::string_view text_;
  const std::string& source_;
  std::size_t pos_ = 0;
  int line_ = 1;
  int depth_ = 0;         // levels at this point of the text
  int header_depth_ = 0;  // levels of the last [table] or [[array]] header
  Mode mode_ = Mode::kKey;
  bool key_started_ = false;  // kKey: the key's first segment is counted
  bool line_start_ = true;    // nothing but blanks so far on this line
  std::vector<Frame> frames_;
};

}  // namespace

Status CheckTomlShape(std::string_view text, const std::string& source_name) {
  if (text.size() > kMaxSettingsBytes) {
    return InvalidArgument(source_name + ": larger than " + std::to_string(kMaxSettingsBytes) +
                           " bytes (1 MiB), more than any settings file needs; is it the right "
                           "file?");
  }
  // TOML is UTF-8 by definition, and toml11 3.7's reporting of a bad sequence inside a
  // multi-line literal string reads past its buffer (tests/fuzz/regressions/settings): refuse
  // it here, before toml11 sees the text.
  if (const std::optional<std::size_t> bad = FindInvalidUtf8(text)) {
    const std::string_view before = text.substr(0, *bad);
    const auto line = 1 + std::count(before.begin(), before.end(), '\n');
    const std::size_t line_start =
        before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
    return InvalidArgument(source_name + ":" + std::to_string(line) + ":" +
                           std::to_string(*bad - line_start + 1) +
                           ": not valid UTF-8 (a TOML file must be UTF-8); save the file as "
                           "UTF-8");
  }
  return ShapeScanner(text, source_name).Run();
}

}  // namespace gf
