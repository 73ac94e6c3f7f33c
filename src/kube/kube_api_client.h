// How gpufleet's server calls the Kubernetes API server (kube_api_watch, kube_pod_stopper):
// one set of HTTP client options for both. Internal to gf_kube_api.
#pragma once

#include "api/api_client.h"
#include "core/result.h"

#include "kube/kube_api_watch.h"

namespace gf {

// The options of a call to `config`'s API server: its CA, the bearer token read from the token
// file at each call (projected service account tokens rotate), 30 s per call, and errors that
// name the API server rather than gpufleet. Errors: ReadTokenFile's (the file is missing or
// empty).
Result<ApiClientOptions> KubeApiClientOptions(const KubeApiConfig& config);

}  // namespace gf
