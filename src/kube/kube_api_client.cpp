#include "kube/kube_api_client.h"

#include "api/credential_file.h"

namespace gf {

Result<ApiClientOptions> KubeApiClientOptions(const KubeApiConfig& config) {
  ApiClientOptions options{.timeout = std::chrono::seconds(30),
                           .ca_file = config.ca_file,
                           .peer = "the Kubernetes API server"};
  if (!config.token_file.empty()) {
    GF_ASSIGN_OR_RETURN(
        options.token,
        ReadTokenFile(config.token_file, "Kubernetes token file", SecretReaders::kAnyone));
  }
  return options;
}

}  // namespace gf
