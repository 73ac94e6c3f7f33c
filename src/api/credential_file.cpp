#include "api/credential_file.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace gf {
namespace {

std::string OctalMode(mode_t mode) {
  std::array<char, 8> out{};
  std::snprintf(out.data(), out.size(), "%04o", static_cast<unsigned>(mode & 07777));
  return out.data();
}

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const auto first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) {
    return {};
  }
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

}  // namespace

Result<std::string> ReadCredentialFile(const std::string& path, std::string_view what) {
  const std::string name = std::string(what) + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      return MakeError(ErrorCode::kNotFound, name + ": no such file");
    }
    return IoError(name + ": " + ErrnoText(err));
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(name + ": not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    return IoError(name + ": cannot read: " + ErrnoText(err));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return IoError(name + ": read failed");
  }
  return text.str();
}

Result<std::string> ReadSecretFile(const std::string& path,
                                   std::string_view what,
                                   SecretReaders readers) {
  struct stat st {};
  if (readers != SecretReaders::kAnyone && ::stat(path.c_str(), &st) == 0) {
    const mode_t forbidden = readers == SecretReaders::kOwnerOnly ? 0044 : 0004;
    if ((st.st_mode & forbidden) != 0) {
      const std::string fix = readers == SecretReaders::kOwnerOnly ? "chmod 600 " : "chmod o-r ";
      return MakeError(ErrorCode::kPermissionDenied,
                       std::string(what) + " " + path + " is readable by " +
                           (readers == SecretReaders::kOwnerOnly ? "other users" : "everyone") +
                           " (mode " + OctalMode(st.st_mode) + "); run `" + fix + path +
                           "` (and replace the secret if others may have read it)");
    }
  }
  return ReadCredentialFile(path, what);  // also reports a missing file
}

Result<std::string> ReadTokenFile(const std::string& path,
                                  std::string_view what,
                                  SecretReaders readers) {
  GF_ASSIGN_OR_RETURN(const std::string text, ReadSecretFile(path, what, readers));
  const std::string_view token = Trim(text);
  const std::string name = std::string(what) + " " + path;
  if (token.empty()) {
    return InvalidArgument(name +
                           " is empty; put the token (for gpufleet's own API: as printed "
                           "by `gpufleet token create`) on its one line");
  }
  if (token.find_first_of(" \t\r\n") != std::string_view::npos) {
    return InvalidArgument(name +
                           " holds more than one word; it must hold the token alone, on "
                           "one line");
  }
  return std::string(token);
}

}  // namespace gf
