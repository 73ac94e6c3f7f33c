#include "json/json_text.h"

#include <exception>
#include <new>
#include <utility>
#include <vector>

#include "core/printable_text.h"

namespace gf {
namespace {

using nlohmann::json;

// Error messages quote at most this much of what the sender wrote: a key, the parser's
// "last read" token.
constexpr std::size_t kQuoteBytes = 60;
constexpr std::size_t kReasonBytes = 200;

// Builds the value from SAX events, as json::parse would, but refuses a level beyond
// `max_depth` and a key given twice in one object. Its stack holds the open arrays and objects
// (pointers stay valid: only the innermost container grows while they are open).
class BoundedBuilder final : public nlohmann::json_sax<json> {
 public:
  explicit BoundedBuilder(std::size_t max_depth) : max_depth_(max_depth) {}

  bool null() override { return Put(json(nullptr)) != nullptr; }
  bool boolean(bool v) override { return Put(json(v)) != nullptr; }
  bool number_integer(number_integer_t v) override { return Put(json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override { return Put(json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t& /*text*/) override {
    return Put(json(v)) != nullptr;
  }
  bool string(string_t& v) override { return Put(json(std::move(v))) != nullptr; }
  // Only binary formats (CBOR, ...) produce these; JSON text never does.
  bool binary(binary_t& v) override { return Put(json(std::move(v))) != nullptr; }

  bool start_object(std::size_t /*elements*/) override { return Open(json::object()); }
  bool start_array(std::size_t /*elements*/) override { return Open(json::array()); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& k) override {
    Frame& top = open_.back();
    if (top.value->contains(k)) {
      failure_ = "duplicate key \"" + TextPreview(k, kQuoteBytes) + "\" in " +
                 (open_.size() == 1 ? std::string("the top-level object") : "object " + Path()) +
                 "; send each key once";
      return false;
    }
    top.key = std::move(k);
    top.slot = &(*top.value)[top.key];
    return true;
  }

  bool parse_error(std::size_t /*position*/,
                   const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
    std::string_view reason = e.what();
    if (const std::size_t end = reason.find("] "); end != std::string_view::npos) {
      reason.remove_prefix(end + 2);
    }
    constexpr std::string_view kAt = "parse error at ";  // "line 1, column 5: ..."
    failure_ = reason.starts_with(kAt)
                   ? "not valid JSON at " + TextPreview(reason.substr(kAt.size()), kReasonBytes)
                   : "not valid JSON: " + TextPreview(reason, kReasonBytes);
    return false;
  }

  json TakeRoot() { return std::move(root_); }
  // Why the parse stopped (empty when it did not).
  const std::string& Failure() const { return failure_; }

 private:
  struct Frame {
    json* value;           // an open array or object
    std::string key;       // objects: the key being filled (for Path())
    json* slot = nullptr;  // objects: where the value of `key` goes
  };

  // Places `v` where the parse stands: the root, the end of the open array, or the slot of the
  // open object's last key. Returns where it went.
  json* Put(json v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& top = open_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    *top.slot = std::move(v);
    return top.slot;
  }

  bool Open(json container) {
    if (open_.size() >= max_depth_) {
      failure_ = "JSON nested deeper than " + std::to_string(max_depth_) +
                 " levels (the limit); flatten it";
      return false;
    }
    json* placed = Put(std::move(container));
    open_.push_back(Frame{placed, {}, nullptr});
    return true;
  }

  bool Close() {
    open_.pop_back();
    return true;
  }

  // Where the innermost open object sits: "env", "nodes[2].gpus", "[0]".
  std::string Path() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < open_.size(); ++i) {
      const Frame& f = open_[i];
      if (f.value->is_array()) {
        path += "[" + std::to_string(f.value->size() - 1) + "]";
      } else {
        path += (path.empty() ? "" : ".") + TextPreview(f.key, kQuoteBytes);
      }
    }
    return path;
  }

  std::size_t max_depth_;
  json root_;
  std::vector<Frame> open_;
  std::string failure_;
};

// Appends `s` as a JSON string, shortened to about `budget` bytes first (a 1 MiB string is not
// copied to show its first 60).
void AppendString(std::string_view s, std::size_t budget, std::string& out) {
  out += json(TruncateUtf8(s, budget)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends the compact JSON text of a scalar, as dump() writes it.
void AppendScalar(const json& v, std::size_t budget, std::string& out) {
  if (v.is_string()) {
    AppendString(v.get_ref<const std::string&>(), budget, out);
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

}  // namespace

Result<json> ParseJsonText(std::string_view text, std::string_view what, JsonLimits limits) {
  try {
    BoundedBuilder builder(limits.max_depth);
    if (!json::sax_parse(text.data(), text.data() + text.size(), &builder)) {
      return InvalidArgument(std::string(what) + ": " + builder.Failure());
    }
    return builder.TakeRoot();
  } catch (const std::bad_alloc&) {
    return MakeError(ErrorCode::kResourceExhausted,
                     std::string(what) + ": out of memory while reading its JSON");
  } catch (const std::exception& e) {
    return InvalidArgument(std::string(what) +
                           ": not valid JSON: " + TextPreview(e.what(), kReasonBytes));
  }
}

std::string JsonPreview(const json& value, std::size_t max_bytes) {
  // Walks `value` depth first with an explicit stack, writing what dump() would, and stops once
  // past `max_bytes`. Every step writes at least one byte, so the walk (and the stack) is
  // bounded by `max_bytes` whatever the size or depth of `value`.
  struct Frame {
    const json* container;
    json::const_iterator next;
  };
  std::vector<Frame> stack;
  std::string out;
  const json* pending = &value;
  while (out.size() <= max_bytes) {
    if (pending != nullptr) {
      if (pending->is_structured()) {
        out += pending->is_object() ? '{' : '[';
        stack.push_back(Frame{pending, pending->cbegin()});
      } else {
        AppendScalar(*pending, max_bytes + 1 - out.size(), out);
      }
      pending = nullptr;
      continue;
    }
    if (stack.empty()) {
      break;
    }
    Frame& top = stack.back();
    if (top.next == top.container->cend()) {
      out += top.container->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (top.next != top.container->cbegin()) {
      out += ',';
    }
    if (top.container->is_object()) {
      AppendString(top.next.key(), max_bytes + 1 - out.size(), out);
      out += ':';
    }
    pending = &*top.next;
    ++top.next;
  }
  if (out.size() <= max_bytes) {
    return out;
  }
  out = TruncateUtf8(out, max_bytes);
  return out + "...";
}

std::string TextPreview(std::string_view text, std::size_t max_bytes) {
  const std::string kept = TruncateUtf8(text, max_bytes);
  // Escaped: what a sender wrote (and nlohmann's "last read: '…'" that quotes it) may hold
  // bytes that are not UTF-8, which would make the error itself unprintable as JSON (dump()
  // throws: tests/fuzz/regressions/job_spec), or terminal controls bound for a log.
  std::string out = EscapeControl(kept);
  if (kept.size() < text.size()) {
    out += "...";
  }
  return out;
}

}  // namespace gf
