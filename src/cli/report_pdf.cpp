#include "cli/report_pdf.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;  // NOLINT: POSIX's process environment (unistd.h leaves it undeclared)

namespace gf {
namespace {

constexpr std::string_view kFix =
    "install Chromium (Debian: apt-get install chromium) or set CHROMIUM to the path of a "
    "Chromium or Chrome binary";

bool IsExecutableFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// A file:// URL of an absolute path: RFC 3986 path characters stay, others become %XX (a
// TMPDIR with a space or a '#' must not cut the URL).
std::string FileUrl(std::string_view path) {
  constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string url = "file://";
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0 || std::string_view("/-._~").find(c) != std::string_view::npos) {
      url += c;
    } else {
      url += '%';
      url += kHex[byte >> 4U];
      url += kHex[byte & 0xFU];
    }
  }
  return url;
}

// The last `max` bytes of the file at `path` ("" when unreadable): Chromium's own words on why
// it failed.
std::string Tail(const std::string& path, std::size_t max) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  std::string all = text.str();
  return all.size() > max ? all.substr(all.size() - max) : all;
}

// Removes a temporary directory and all in it when the print is done, however it ended.
class TemporaryDirectory {
 public:
  explicit TemporaryDirectory(std::string path) : path_(std::move(path)) {}
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& Path() const { return path_; }

 private:
  std::string path_;
};

// Runs `argv` in a process group of its own with stdout and stderr to `log`, and waits for it
// at most `timeout`; past that, the whole group is killed (Chromium starts helper processes).
// Returns how it ended, "" for exit 0.
Result<std::string> RunWithTimeout(const std::vector<std::string>& argv,
                                   const std::string& log,
                                   Millis timeout) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));  // posix_spawn's signature; it copies them
  }
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(
      &actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    return Unavailable("--format pdf: cannot run " + argv[0] + ": " + ErrnoText(spawned) + "; " +
                       std::string(kFix));
  }
  // Polled rather than waited on with a signal: the CLI has no signal handling to share.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) {
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return "still running after " + std::to_string(timeout.count()) + " ms, killed";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Chromium's helpers outlive the browser process only by accident; none may keep running.
  ::kill(-pid, SIGKILL);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    return std::string();
  }
  return WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                           : "killed by signal " + std::to_string(WTERMSIG(status));
}

}  // namespace

Result<std::string> FindChromium(const char* chromium_env, const char* path_env) {
  if (chromium_env != nullptr && *chromium_env != '\0') {
    if (IsExecutableFile(chromium_env)) {
      return std::string(chromium_env);
    }
    return Unavailable("--format pdf: CHROMIUM=" + std::string(chromium_env) +
                       " is not a program that can run; " + std::string(kFix));
  }
  std::string_view dirs = path_env != nullptr ? path_env : "";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    if (dir.empty() || dir.front() != '/') {
      continue;  // a relative PATH entry would make the report depend on the current directory
    }
    for (const char* name : {"chromium", "chromium-browser"}) {
      std::string candidate = std::string(dir) + "/" + name;
      if (IsExecutableFile(candidate)) {
        return candidate;
      }
    }
  }
  return Unavailable(
      "--format pdf prints the HTML report with Chromium, and there is no chromium on PATH: " +
      std::string(kFix));
}

std::vector<std::string> ChromiumPrintCommand(const std::string& chromium,
                                              const std::string& profile,
                                              const std::string& html,
                                              const std::string& pdf) {
  return {chromium,
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          // A fresh profile, and nothing that reaches the network or the desktop: the same
          // isolation the browser tests run Chromium with (tests/browser).
          "--user-data-dir=" + profile,
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          "--disable-sync",
          "--no-pdf-header-footer",
          "--print-to-pdf=" + pdf,
          FileUrl(html)};
}

Result<std::string> PrintHtmlToPdf(const std::string& chromium,
                                   const std::string& html,
                                   Millis timeout) {
  std::error_code error;
  std::filesystem::path base = std::filesystem::temp_directory_path(error);
  if (error) {
    base = "/tmp";
  }
  std::string name = (base / "gpufleet-report.XXXXXX").string();
  if (::mkdtemp(name.data()) == nullptr) {
    return IoError("--format pdf: cannot create a temporary directory " + name + ": " +
                   ErrnoText(errno) + "; set TMPDIR to a writable one");
  }
  const TemporaryDirectory dir(name);
  const std::string html_path = dir.Path() + "/report.html";
  const std::string pdf_path = dir.Path() + "/report.pdf";
  const std::string log_path = dir.Path() + "/chromium.log";
  {
    std::ofstream file(html_path, std::ios::binary);
    file << html;
    file.flush();
    if (!file) {
      return IoError("--format pdf: cannot write " + html_path);
    }
  }
  GF_ASSIGN_OR_RETURN(
      const std::string ended,
      RunWithTimeout(ChromiumPrintCommand(chromium, dir.Path() + "/profile", html_path, pdf_path),
                     log_path,
                     timeout));
  std::ifstream file(pdf_path, std::ios::binary);
  std::ostringstream pdf;
  pdf << file.rdbuf();
  if (!ended.empty() || pdf.str().rfind("%PDF-", 0) != 0) {
    return Unavailable("--format pdf: " + chromium + " did not print the report (" +
                       (ended.empty() ? "no PDF written" : ended) + "); its last output:\n" +
                       Tail(log_path, 1500));
  }
  return pdf.str();
}

}  // namespace gf
