// Reading the files that hold credentials: a TLS certificate or private key (the server), an
// API token (the CLI and node agents). One place for the rules, so that every reader refuses
// the same things with the same words.
//
// A secret file that others may read is refused, as ssh refuses such a private key: the
// secret is already out, and using it quietly would hide that.
//
// Pure functions over the file system; safe from any thread.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gf {

// Which other users make a secret file unsafe. A TLS key may be shared with a service group
// (Debian keeps keys 0640 root:ssl-cert), so only "everyone" is refused; a personal API token
// may be read by its owner alone.
enum class SecretReaders {
  kOwnerAndGroup,  // refused when any other user may read it (mode & 0004)
  kOwnerOnly,      // refused when the group or others may read it (mode & 0044)
  // Not checked: a file another program places where only this one sees it, such as the
  // service-account token the kubelet projects into a pod (0644 unless the pod says otherwise;
  // refusing it would refuse every default install).
  kAnyone,
};

// The whole file. `what` names it in errors ("TLS certificate file"). Errors: kNotFound (no
// such file), kInvalidArgument (not a regular file), kIo (cannot read it).
Result<std::string> ReadCredentialFile(const std::string& path, std::string_view what);

// ReadCredentialFile, refusing a file readable beyond `readers` (kPermissionDenied naming the
// mode and the chmod that fixes it).
Result<std::string> ReadSecretFile(const std::string& path,
                                   std::string_view what,
                                   SecretReaders readers);

// A bearer token file: one line, the token (surrounding whitespace is dropped), readable by
// `readers` only (a gpufleet API token: its owner). `what` names it in errors. Errors: those of
// ReadSecretFile; kInvalidArgument when it holds no token or more than one word.
Result<std::string> ReadTokenFile(const std::string& path,
                                  std::string_view what = "token file",
                                  SecretReaders readers = SecretReaders::kOwnerOnly);

}  // namespace gf
