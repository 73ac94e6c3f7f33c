// The gpufleet(1) manual page, written from the command line's own definition (every visible
// command, its description and options, as `--help` shows them), so the page installed by the
// Debian package cannot drift from the binary beside it. `gpufleet man-page` prints it; the
// build writes it to gpufleet.1.gz (apps/gpufleet/CMakeLists.txt). Pure function.
#pragma once

#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace gf {

// The page in roff (man(7) macros). Commands in a group named "" (internal ones, hidden from
// --help) are left out, as is each --help flag. `version`: "0.1.0".
std::string ManPage(const CLI::App& app, std::string_view version);

}  // namespace gf
