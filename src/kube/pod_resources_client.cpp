#include "kube/pod_resources_client.h"

#include <cerrno>
#include <cstdint>
#include <string>

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/kube_devices.h"
#include "kube/pod_resources.grpc.pb.h"

namespace gf {

namespace {

struct SocketIdentity {
  ino_t inode = 0;
  std::int64_t ctime_ns = 0;
  bool operator==(const SocketIdentity&) const = default;
};

}  // namespace

struct PodResourcesClient::Channel {
  // Which socket it connected to: a restarted kubelet makes a new one. The inode alone is not
  // enough, as file systems reuse the number of a file just removed.
  SocketIdentity socket{};
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

namespace {

// The kubelet answers with messages up to 16 MiB (its pod-resources server's limit); gRPC's
// default of 4 MiB would fail on a node with many pods.
constexpr int kMaxMessageBytes = 16 * 1024 * 1024;

// Which socket is there for us to connect to; the error names the socket and the fix.
Result<SocketIdentity> CheckSocket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == EACCES) {
      return PermissionDenied("kubelet pod-resources socket " + path +
                              ": a folder on its path is not searchable (" + ErrnoText(err) +
                              "); run the agent as root");
    }
    return Unavailable("kubelet pod-resources socket " + path + " is not there (" + ErrnoText(err) +
                       "): is this a Kubernetes node with the kubelet running? In a DaemonSet, "
                       "mount /var/lib/kubelet/pod-resources from the host (hostPath)");
  }
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPrecondition("kubelet pod-resources socket " + path +
                              " is not a socket; give the kubelet's socket "
                              "(/var/lib/kubelet/pod-resources/kubelet.sock)");
  }
  // Connecting to a Unix socket needs write permission on it; checked with the effective ids,
  // which are the ones connect() uses.
  if (::faccessat(AT_FDCWD, path.c_str(), R_OK | W_OK, AT_EACCESS) != 0) {
    return PermissionDenied("kubelet pod-resources socket " + path + ": " + ErrnoText(errno) +
                            "; this user may not connect to it: run the agent as root");
  }
  return SocketIdentity{
      .inode = st.st_ino,
      .ctime_ns = std::int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec};
}

// What gRPC said, as an error that names the socket, the call and the fix.
Error CallError(const std::string& path,
                std::string_view method,
                const grpc::Status& status,
                std::chrono::milliseconds timeout) {
  const std::string what = "kubelet pod-resources " + std::string(method) + " on " + path + ": " +
                           status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNIMPLEMENTED:
      return FailedPrecondition(
          what +
          " (not served by this kubelet: v1 List needs Kubernetes 1.20 or later, "
          "GetAllocatableResources 1.23, Get the KubeletPodResourcesGet feature gate)");
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Unavailable(what + " (no answer within " + std::to_string(timeout.count()) +
                         " ms; is the kubelet overloaded or hung?)");
    case grpc::StatusCode::UNAVAILABLE:
      return Unavailable(what + " (nothing answers on the socket: is the kubelet running?)");
    case grpc::StatusCode::NOT_FOUND:
      return NotFound(what);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      // Recent kubelets limit the rate of calls on this socket, for all its clients together.
      return MakeError(ErrorCode::kResourceExhausted,
                       what + " (the kubelet limits calls on this socket: poll it less often)");
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED:
      return PermissionDenied(what);
    default:
      return Internal(what);
  }
}

std::vector<KubeGpu> GpusOf(const google::protobuf::RepeatedPtrField<v1::ContainerDevices>& all) {
  std::vector<KubeGpu> gpus;
  for (const v1::ContainerDevices& devices : all) {
    if (!IsNvidiaGpuResource(devices.resource_name())) {
      continue;
    }
    for (const std::string& id : devices.device_ids()) {
      gpus.push_back(KubeGpu{.resource = devices.resource_name(),
                             .device_id = id,
                             .gpu = std::string(GpuOfDeviceId(id))});
    }
  }
  return gpus;
}

void AddContainersWithGpus(const v1::PodResources& pod, std::vector<KubeContainerGpus>& out) {
  for (const v1::ContainerResources& container : pod.containers()) {
    std::vector<KubeGpu> gpus = GpusOf(container.devices());
    if (!gpus.empty()) {
      out.push_back(KubeContainerGpus{.pod_namespace = pod.namespace_(),
                                      .pod_name = pod.name(),
                                      .container = container.name(),
                                      .gpus = std::move(gpus)});
    }
  }
}

std::unique_ptr<grpc::ClientContext> ContextWithin(std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

}  // namespace

PodResourcesClient::PodResourcesClient(std::string socket_path)
    : socket_path_(std::move(socket_path)) {}

PodResourcesClient::~PodResourcesClient() = default;

Result<PodResourcesClient::Channel*> PodResourcesClient::Connect() {
  const Result<SocketIdentity> socket = CheckSocket(socket_path_);
  if (!socket.ok()) {
    Disconnect();
    return socket.error();
  }
  // A kubelet that restarted listens on a new socket; the old channel's connection is dead.
  if (channel_ && channel_->socket != *socket) {
    Disconnect();
  }
  if (!channel_) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxMessageBytes);
    // gRPC shares connections among channels to the same address by default, so a new channel
    // would get the broken connection to a kubelet that restarted; this one keeps its own.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel =
        grpc::CreateCustomChannel("unix:" + socket_path_, grpc::InsecureChannelCredentials(), args);
    auto stub = v1::PodResourcesLister::NewStub(channel);
    channel_ = std::make_unique<Channel>(Channel{*socket, std::move(channel), std::move(stub)});
  }
  return channel_.get();
}

// A channel that failed to connect waits out gRPC's reconnect backoff (up to minutes) before it
// tries again; a kubelet that restarted should be seen at the next poll, so a failed
// connection is dropped and the next call makes a new one.
void PodResourcesClient::Disconnect() {
  channel_.reset();
}

Result<std::vector<KubeContainerGpus>> PodResourcesClient::List(std::chrono::milliseconds timeout) {
  GF_ASSIGN_OR_RETURN(Channel * channel, Connect());
  const auto context = ContextWithin(timeout);
  v1::ListPodResourcesResponse response;
  const grpc::Status status = channel->stub->List(context.get(), {}, &response);
  if (!status.ok()) {
    Disconnect();
    return CallError(socket_path_, "List", status, timeout);
  }
  std::vector<KubeContainerGpus> out;
  for (const v1::PodResources& pod : response.pod_resources()) {
    AddContainersWithGpus(pod, out);
  }
  return out;
}

Result<std::vector<KubeContainerGpus>> PodResourcesClient::Get(std::string_view pod_namespace,
                                                               std::string_view pod_name,
                                                               std::chrono::milliseconds timeout) {
  GF_ASSIGN_OR_RETURN(Channel * channel, Connect());
  const auto context = ContextWithin(timeout);
  v1::GetPodResourcesRequest request;
  request.set_pod_namespace(std::string(pod_namespace));
  request.set_pod_name(std::string(pod_name));
  v1::GetPodResourcesResponse response;
  const grpc::Status status = channel->stub->Get(context.get(), request, &response);
  if (!status.ok()) {
    if (status.error_code() != grpc::StatusCode::NOT_FOUND) {
      Disconnect();
    }
    return CallError(socket_path_, "Get", status, timeout);
  }
  std::vector<KubeContainerGpus> out;
  AddContainersWithGpus(response.pod_resources(), out);
  return out;
}

Result<std::vector<KubeGpu>> PodResourcesClient::AllocatableGpus(
    std::chrono::milliseconds timeout) {
  GF_ASSIGN_OR_RETURN(Channel * channel, Connect());
  const auto context = ContextWithin(timeout);
  v1::AllocatableResourcesResponse response;
  const grpc::Status status = channel->stub->GetAllocatableResources(context.get(), {}, &response);
  if (!status.ok()) {
    Disconnect();
    return CallError(socket_path_, "GetAllocatableResources", status, timeout);
  }
  return GpusOf(response.devices());
}

}  // namespace gf
