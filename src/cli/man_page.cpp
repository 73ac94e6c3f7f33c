#include "cli/man_page.h"

#include <algorithm>
#include <vector>

namespace gf {
namespace {

// `text` as roff body text: backslashes and hyphens escaped, a leading '.' or '\'' (a request)
// made literal.
std::string Roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\'')) {
      out += "\\&";
    }
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

// The visible subcommands of `app`, by name.
std::vector<const CLI::App*> VisibleSubcommands(const CLI::App& app) {
  std::vector<const CLI::App*> out =
      app.get_subcommands([](const CLI::App* c) { return !c->get_group().empty(); });
  std::sort(out.begin(), out.end(), [](const CLI::App* a, const CLI::App* b) {
    return a->get_name() < b->get_name();
  });
  return out;
}

// One ".TP" entry per option of `app` but --help: its names in bold, its value's type in italics.
void WriteOptions(const CLI::App& app, std::string& out) {
  for (const CLI::Option* option : app.get_options()) {
    const std::string names =
        option->get_positional() ? option->get_name(true) : option->get_name(false, true);
    if (names.find("--help") != std::string::npos) {
      continue;
    }
    out += ".TP\n\\fB" + Roff(names) + "\\fR";
    if (const std::string type = option->get_type_name(); !type.empty()) {
      out += " \\fI" + Roff(type) + "\\fR";
    }
    if (option->get_required()) {
      out += " (required)";
    }
    out += "\n" + Roff(option->get_description());
    if (const std::string value = option->get_default_str(); !value.empty()) {
      out += " [default: " + Roff(value) + "]";
    }
    out += "\n";
  }
}

// ".SS gpufleet token create" and its options, then its own subcommands, depth first.
void WriteCommand(const CLI::App& command, const std::string& path, std::string& out) {
  const std::string name = path + " " + command.get_name();
  out += ".SS \"" + Roff(name) + "\"\n" + Roff(command.get_description()) + "\n";
  WriteOptions(command, out);
  for (const CLI::App* sub : VisibleSubcommands(command)) {
    WriteCommand(*sub, name, out);
  }
}

}  // namespace

std::string ManPage(const CLI::App& app, std::string_view version) {
  const std::string v = Roff(version);
  // The coding line: descriptions hold UTF-8 (dashes, arrows), which man's preconv reads so.
  std::string out = "'\\\" -*- coding: UTF-8 -*-\n";
  out += ".\\\" Written by `gpufleet man-page` from the command line itself.\n";
  out += ".TH GPUFLEET 1 \"\" \"gpufleet " + v + "\" \"gpufleet manual\"\n";
  // "gpufleet: a GPU compute manager" is already "gpufleet \- a GPU compute manager" here.
  std::string summary = app.get_description();
  if (const std::string prefix = app.get_name() + ": "; summary.starts_with(prefix)) {
    summary.erase(0, prefix.size());
  }
  out += ".SH NAME\ngpufleet \\- " + Roff(summary) + "\n";
  out += ".SH SYNOPSIS\n.B gpufleet\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n";
  out +=
      ".SH DESCRIPTION\nOne program for a GPU server or a cluster of them: \\fBgpufleet up\\fR "
      "runs everything on one server, \\fBgpufleet server\\fR and \\fBgpufleet agent\\fR a "
      "cluster; the other commands are the client. Every command also prints its options with "
      "\\fB\\-\\-help\\fR.\n";
  out += ".SH GLOBAL OPTIONS\n";
  WriteOptions(app, out);
  out += ".SH COMMANDS\n";
  for (const CLI::App* command : VisibleSubcommands(app)) {
    WriteCommand(*command, "gpufleet", out);
  }
  out +=
      ".SH FILES\n"
      ".TP\n/etc/gpufleet/gpufleet.toml\nSettings of the daemons: policy, classes, teams, the "
      "\\fB[up]\\fR keys.\n"
      ".TP\n/etc/default/gpufleet\nThe extra flags the systemd units pass to each daemon.\n"
      ".TP\n/var/lib/gpufleet\nState: the SQLite store (state.db) and the jobs' folders.\n"
      ".TP\n/run/gpufleet/gpufleet.sock\nThe API socket of a daemon run by root.\n"
      ".SH SEE ALSO\n"
      "systemctl(1); /usr/share/doc/gpufleet/install.md (units, backup, restore, upgrades)\n";
  return out;
}

}  // namespace gf
