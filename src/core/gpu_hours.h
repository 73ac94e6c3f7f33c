// GPU-hours as text for people: what `gpufleet quota` and `report` print, and the server's own
// messages about budgets (report recommendations, budget notifications), so that a figure reads
// the same everywhere (the dashboard's gpuHours in web/src/format.js follows it too). Pure;
// safe from any thread.
#pragma once

#include <string>

namespace gf {

// Up to four decimals, trailing zeros dropped ("0.0014", "30.5", "100"), so a tiny budget still
// shows what was used of it (0.01 is "0.01", not "0.0"); "-" when not finite.
std::string FormatGpuHours(double hours);

}  // namespace gf
