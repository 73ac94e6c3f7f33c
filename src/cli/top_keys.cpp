#include "cli/top_keys.h"

#include <algorithm>
#include <string>

namespace gf {
namespace {

constexpr char kCtrlC = '\x03';
constexpr char kEscape = '\x1b';

enum class Key { kQuit, kDown, kUp, kCancel, kSort, kYes, kOther };

// The key at the front of `keys`, removed from it. An escape sequence (ESC [ ... final byte,
// or ESC O x) is one key.
Key NextKey(std::string_view& keys) {
  const char c = keys.front();
  keys.remove_prefix(1);
  if (c != kEscape) {
    switch (c) {
      case 'q':
      case 'Q':
      case kCtrlC:
        return Key::kQuit;
      case 'j':
        return Key::kDown;
      case 'k':
        return Key::kUp;
      case 'c':
        return Key::kCancel;
      case 's':
        return Key::kSort;
      case 'y':
      case 'Y':
        return Key::kYes;
      default:
        return Key::kOther;
    }
  }
  if (keys.empty() || (keys.front() != '[' && keys.front() != 'O')) {
    return Key::kOther;  // a lone Escape
  }
  keys.remove_prefix(1);
  // Parameters and intermediates, then the final byte (0x40..0x7E).
  std::size_t end = 0;
  while (end < keys.size() && (keys[end] < 0x40 || keys[end] > 0x7E)) {
    ++end;
  }
  const char final_byte = end < keys.size() ? keys[end] : '\0';
  keys.remove_prefix(std::min(keys.size(), end + 1));
  return final_byte == 'B' && end == 0   ? Key::kDown
         : final_byte == 'A' && end == 0 ? Key::kUp
                                         : Key::kOther;
}

void Move(const std::vector<std::int64_t>& order, TopControls& controls, int step) {
  if (order.empty()) {
    controls.selected_job.reset();
    return;
  }
  const auto at = controls.selected_job
                      ? std::find(order.begin(), order.end(), *controls.selected_job)
                      : order.end();
  if (at == order.end()) {
    controls.selected_job = step > 0 ? order.front() : order.back();
    return;
  }
  const auto index = static_cast<int>(at - order.begin()) + step;
  controls.selected_job =
      order[static_cast<std::size_t>(std::clamp(index, 0, static_cast<int>(order.size()) - 1))];
}

TopSort NextSort(TopSort sort) {
  switch (sort) {
    case TopSort::kGpuMemory:
      return TopSort::kCpu;
    case TopSort::kCpu:
      return TopSort::kHostMemory;
    case TopSort::kHostMemory:
      return TopSort::kPid;
    case TopSort::kPid:
      break;
  }
  return TopSort::kGpuMemory;
}

}  // namespace

TopKeyOutcome ApplyTopKeys(std::string_view keys,
                           const std::vector<std::int64_t>& job_order,
                           TopControls& controls) {
  TopKeyOutcome out;
  while (!keys.empty() && !out.quit) {
    const bool ctrl_c = keys.front() == kCtrlC;
    const Key key = NextKey(keys);
    controls.message.clear();
    if (const auto asked = controls.confirm_cancel) {
      controls.confirm_cancel.reset();
      if (key == Key::kYes) {
        out.cancel = asked;
      } else if (ctrl_c) {
        out.quit = true;
      } else {
        controls.message = "job " + std::to_string(*asked) + " not cancelled";
      }
      continue;
    }
    switch (key) {
      case Key::kQuit:
        out.quit = true;
        break;
      case Key::kDown:
        Move(job_order, controls, 1);
        break;
      case Key::kUp:
        Move(job_order, controls, -1);
        break;
      case Key::kCancel:
        if (controls.selected_job &&
            std::find(job_order.begin(), job_order.end(), *controls.selected_job) !=
                job_order.end()) {
          controls.confirm_cancel = controls.selected_job;
        } else {
          controls.message = "no job selected: select one with j/k (or the arrow keys) first";
        }
        break;
      case Key::kSort:
        controls.sort = NextSort(controls.sort);
        break;
      case Key::kYes:
      case Key::kOther:
        break;
    }
  }
  return out;
}

}  // namespace gf
