// `gpufleet report --format pdf` (docs/reports.md): the HTML report printed to PDF by headless
// Chromium, so that the PDF is the same page a browser shows, with the HTML's print stylesheet
// (A4, charts kept whole). gpufleet draws nothing itself here: Chromium lays out and prints.
#pragma once

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gf {

// The Chromium that prints: `chromium_env` (the CHROMIUM environment variable, which the browser
// tests read too) when set, else the first `chromium` or `chromium-browser` in `path_env`
// (PATH). Errors: kUnavailable, naming both ways to fix it (install Debian's chromium, or set
// CHROMIUM), also when CHROMIUM names a file that cannot run.
Result<std::string> FindChromium(const char* chromium_env, const char* path_env);

// The command line that prints the file `html` to `pdf` with a fresh profile in `profile`.
// Headless, with no sandbox: the page is gpufleet's own, with no script and nothing to fetch,
// and Chromium's sandbox needs user namespaces that containers and service units often lack
// (as root it refuses to start with one). No header or footer: the page carries its title.
std::vector<std::string> ChromiumPrintCommand(const std::string& chromium,
                                              const std::string& profile,
                                              const std::string& html,
                                              const std::string& pdf);

// The PDF of `html` (a whole page): written to a private temporary directory, printed there by
// `chromium`, which gets at most `timeout` (then it and its children are killed). The directory
// is removed afterwards. Errors: kIo (the directory, the files), kUnavailable (Chromium failed,
// timed out or wrote no PDF: with the end of its output).
Result<std::string> PrintHtmlToPdf(const std::string& chromium,
                                   const std::string& html,
                                   Millis timeout);

}  // namespace gf
