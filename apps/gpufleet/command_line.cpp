#include "command_line.h"

#include <algorithm>
#include <array>
#include <exception>
#include <iostream>
#include <string_view>

#include "cli/admin_commands.h"
#include "cli/command_names.h"
#include "cli/notify_commands.h"
#include "cli/report_command.h"
#include "cli/run_command.h"
#include "cli/top.h"

namespace gf {

const CLI::Validator kNotEmpty(
    [](const std::string& value) {
      return value.empty() ? std::string("an empty value; give one, or leave the flag out")
                           : std::string();
    },
    "");

namespace {

// --log-level: checked while parsing, so that a bad level stops gpufleet before any command
// runs (client commands run as CLI11 callbacks, inside app.parse).
const CLI::Validator kLogLevel(
    [](const std::string& value) {
      if (!IsLogLevel(value)) {
        return "'" + value + "' is not a level; use trace, debug, info, warn or error";
      }
      return std::string();
    },
    "");

// The word a user typed as a command when gpufleet knows none by that name (`gpufleet hold 21`),
// once parsing failed: CLI11 keeps it among the unparsed words and only says that a subcommand
// is required, which sends the user looking for a missing word instead of a wrong one.
std::optional<std::string> UnknownCommand(CLI::App& app) {
  if (!app.get_subcommands().empty()) {
    return std::nullopt;
  }
  for (const std::string& word : app.remaining()) {
    if (word.rfind('-', 0) != 0) {
      return word;
    }
  }
  return std::nullopt;
}

// The commands `gpufleet --help` lists (not the internal, hidden ones), sorted.
std::vector<std::string> VisibleCommands(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* command :
       app.get_subcommands([](const CLI::App* c) { return !c->get_group().empty(); })) {
    names.push_back(command->get_name());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool IsLogLevel(const std::string& word) {
  // spdlog::level::from_str's names, and the two short forms it also takes.
  static constexpr std::array<std::string_view, 9> kLevels = {
      "trace", "debug", "info", "warning", "warn", "error", "err", "critical", "off"};
  return std::find(kLevels.begin(), kLevels.end(), word) != kLevels.end();
}

void AddGlobalOptions(CLI::App& app, ClientContext& client, std::string& log_level) {
  // Client settings: the environment and ~/.config/gpufleet/client.toml fill in what these
  // leave out (src/cli/client_settings.h), so they carry no envname here.
  app.add_option(
         "--socket", client.flags.socket, "API socket of a local gpufleet (env GPUFLEET_SOCKET)")
      ->check(kNotEmpty);
  app.add_option("--server",
                 client.flags.server,
                 "URL[,URL...] of the gpufleet servers, tried in order: https://HOST:PORT or "
                 "http://HOST:PORT (env GPUFLEET_SERVER)")
      ->check(kNotEmpty);
  app.add_option("--token-file",
                 client.flags.token_file,
                 "file holding your API token, readable by you alone (env GPUFLEET_TOKEN_FILE, "
                 "or GPUFLEET_TOKEN with the token itself)")
      ->check(kNotEmpty);
  app.add_option("--ca-file",
                 client.flags.ca_file,
                 "PEM file of the CA that signed the servers' certificates (env "
                 "GPUFLEET_CA_FILE; default: the system's CAs)")
      ->check(kNotEmpty);
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->check(kLogLevel);
}

void AddClientSideCommands(CLI::App& app, ClientContext& client) {
  AddClientCommands(app, client);
  AddAdminCommands(app, client);
  AddNotifyCommands(app, client);
  AddReportCommand(app, client);
  AddTopCommand(app, client);
  AddRunCommand(app, client);
}

std::vector<std::string> SplitJobCommand(int argc, char** argv, ClientContext& client) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
    client.command_after_dashes.emplace(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }
  return args;
}

std::optional<std::string> CommandWord(CLI::App& app, const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.rfind('-', 0) != 0) {
      return word;
    }
    // Only global options that take a value may come first: "--socket PATH" (the next word is
    // its value) or "--socket=PATH". A flag (--help, --version) or an unknown option makes the
    // line no command's.
    const std::size_t equals = word.find('=');
    const CLI::Option* option = app.get_option_no_throw(word.substr(0, equals));
    if (option == nullptr || option->get_expected_min() == 0) {
      return std::nullopt;
    }
    if (equals == std::string::npos) {
      ++i;
    }
  }
  return std::nullopt;
}

bool HasCommand(CLI::App& app, const std::string& name) {
  return !app.get_subcommands([&name](CLI::App* command) { return command->check_name(name); })
              .empty();
}

std::optional<int> ParseCommandLine(CLI::App& app,
                                    ClientContext& client,
                                    const std::string& log_level,
                                    void (*set_log_level)(const std::string& level),
                                    std::vector<std::string> args) {
  // Runs once every option is parsed and validated, before any subcommand's callback: what
  // holds for every command is settled here, not after one has already run.
  app.parse_complete_callback([&app, &client, &log_level, set_log_level] {
    if (set_log_level != nullptr) {
      set_log_level(log_level);  // checked by kLogLevel
    }
    if (client.command_after_dashes && !app.got_subcommand("submit") &&
        !app.got_subcommand("run")) {
      throw CLI::ValidationError("--",
                                 "only gpufleet submit and gpufleet run take a command after it "
                                 "(gpufleet submit [OPTIONS] -- CMD ARGS)");
    }
  });
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments reversed
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (const std::optional<std::string> word = UnknownCommand(app)) {
      std::cerr << "gpufleet: " << UnknownCommandMessage(*word, VisibleCommands(app)) << '\n';
      return 2;
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // --help/--version exit 0; bad usage exits 2
  }
  return std::nullopt;
}

int RunGuarded(int (*run)(int argc, char** argv), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gpufleet: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "gpufleet: internal error: unknown exception\n";
  }
  return 1;
}

}  // namespace gf
