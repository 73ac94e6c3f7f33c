// fakekubelet: a stand-in for the kubelet's pod-resources service, for tests (README.md). It
// serves v1.PodResourcesLister (src/kube/pod_resources.proto, the real wire API) over a Unix
// socket from a scenario JSON file, re-read whenever the file changes, so a test drives what
// "the kubelet" says by rewriting the file.
//
//   fakekubelet --socket PATH --scenario FILE
//
// Runs until SIGTERM or SIGINT, then removes its socket.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kube/pod_resources.grpc.pb.h"

namespace {

using nlohmann::json;

// What the scenario says, parsed once per version of the file.
struct Scenario {
  v1::ListPodResourcesResponse pods;
  v1::AllocatableResourcesResponse allocatable;
  std::set<std::string> unimplemented;  // method names answering UNIMPLEMENTED
  std::set<std::string> rate_limited;   // method names answering RESOURCE_EXHAUSTED
  std::chrono::milliseconds delay{0};   // before every answer: a slow kubelet
};

void AddDevices(const json& list, google::protobuf::RepeatedPtrField<v1::ContainerDevices>* out) {
  for (const json& entry : list) {
    v1::ContainerDevices* devices = out->Add();
    devices->set_resource_name(entry.at("resource").get<std::string>());
    for (const json& id : entry.at("ids")) {
      devices->add_device_ids(id.get<std::string>());
    }
    if (entry.contains("numa")) {
      devices->mutable_topology()->add_nodes()->set_id(entry.at("numa").get<std::int64_t>());
    }
  }
}

Scenario Parse(const json& doc) {
  Scenario s;
  for (const json& pod_json : doc.value("pods", json::array())) {
    v1::PodResources* pod = s.pods.add_pod_resources();
    pod->set_namespace_(pod_json.at("namespace").get<std::string>());
    pod->set_name(pod_json.at("name").get<std::string>());
    for (const json& container_json : pod_json.value("containers", json::array())) {
      v1::ContainerResources* container = pod->add_containers();
      container->set_name(container_json.at("name").get<std::string>());
      AddDevices(container_json.value("devices", json::array()), container->mutable_devices());
      for (const json& cpu : container_json.value("cpu_ids", json::array())) {
        container->add_cpu_ids(cpu.get<std::int64_t>());
      }
    }
  }
  AddDevices(doc.value("allocatable", json::array()), s.allocatable.mutable_devices());
  for (const json& name : doc.value("unimplemented", json::array())) {
    s.unimplemented.insert(name.get<std::string>());
  }
  for (const json& name : doc.value("rate_limited", json::array())) {
    s.rate_limited.insert(name.get<std::string>());
  }
  s.delay = std::chrono::milliseconds(doc.value("delay_ms", 0));
  return s;
}

// The scenario file, re-read when its inode, size or modification time changes (a test writes
// a temporary file and renames it over the old one, which always gives a new inode).
class ScenarioFile {
 public:
  explicit ScenarioFile(std::string path) : path_(std::move(path)) {}

  // The current scenario, or the reason there is none.
  std::variant<Scenario, std::string> Current() {
    const std::lock_guard lock(mu_);
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      return "fakekubelet: cannot read scenario " + path_;
    }
    const Stamp stamp{st.st_ino, st.st_size, st.st_mtim.tv_sec, std::int64_t{st.st_mtim.tv_nsec}};
    if (!loaded_ || stamp != stamp_) {
      stamp_ = stamp;
      loaded_ = true;
      std::ifstream in(path_);
      std::stringstream text;
      text << in.rdbuf();
      try {
        current_ = Parse(json::parse(text.str()));
      } catch (const std::exception& e) {
        current_ = "fakekubelet: broken scenario " + path_ + ": " + e.what();
      }
    }
    return current_;
  }

 private:
  struct Stamp {
    ino_t inode;
    off_t size;
    time_t sec;
    std::int64_t nsec;
    bool operator==(const Stamp&) const = default;
  };
  std::mutex mu_;
  std::string path_;
  bool loaded_ = false;                          // GUARDED_BY(mu_)
  Stamp stamp_{};                                // GUARDED_BY(mu_)
  std::variant<Scenario, std::string> current_;  // GUARDED_BY(mu_)
};

class FakePodResources final : public v1::PodResourcesLister::Service {
 public:
  explicit FakePodResources(ScenarioFile& file) : file_(file) {}

  grpc::Status List(grpc::ServerContext*,
                    const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    return Answer("List", [&](const Scenario& s) {
      *response = s.pods;
      return grpc::Status::OK;
    });
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*,
                                       const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override {
    return Answer("GetAllocatableResources", [&](const Scenario& s) {
      *response = s.allocatable;
      return grpc::Status::OK;
    });
  }

  grpc::Status Get(grpc::ServerContext*,
                   const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override {
    return Answer("Get", [&](const Scenario& s) {
      for (const v1::PodResources& pod : s.pods.pod_resources()) {
        if (pod.namespace_() == request->pod_namespace() && pod.name() == request->pod_name()) {
          *response->mutable_pod_resources() = pod;
          return grpc::Status::OK;
        }
      }
      // The kubelet's own answer for a pod it does not run.
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          "pod " + request->pod_name() + " in namespace " +
                              request->pod_namespace() + " not found");
    });
  }

 private:
  template <typename Fill>
  grpc::Status Answer(const std::string& method, Fill fill) {
    auto current = file_.Current();
    if (const auto* problem = std::get_if<std::string>(&current)) {
      return grpc::Status(grpc::StatusCode::INTERNAL, *problem);
    }
    const Scenario& s = std::get<Scenario>(current);
    std::this_thread::sleep_for(s.delay);
    if (s.unimplemented.contains(method)) {
      return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                          "unknown method " + method + " for service v1.PodResourcesLister");
    }
    if (s.rate_limited.contains(method)) {
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit");
    }
    return fill(s);
  }

  ScenarioFile& file_;
};

int Usage() {
  std::fprintf(stderr, "usage: fakekubelet --socket PATH --scenario FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket_path;
  std::string scenario_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--socket") {
      socket_path = argv[i + 1];
    } else if (flag == "--scenario") {
      scenario_path = argv[i + 1];
    } else {
      return Usage();
    }
  }
  if (socket_path.empty() || scenario_path.empty() || argc % 2 == 0) {
    return Usage();
  }
  // Block the stop signals before gRPC starts its threads, so only sigwait below takes them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  // As the kubelet does: a socket file left by an earlier run would make the bind fail.
  ::unlink(socket_path.c_str());
  ScenarioFile file(scenario_path);
  FakePodResources service(file);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  const std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "fakekubelet: cannot serve on %s\n", socket_path.c_str());
    return 1;
  }
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  // At once, cancelling calls in flight: a kubelet that stops does not finish its answers.
  server->Shutdown(std::chrono::system_clock::now());
  ::unlink(socket_path.c_str());
  return 0;
}
