// gf_kube_bench: what asking the kubelet for GPU owners costs the Kubernetes agent (issue #27:
// the agent on 8 GPUs under 30 MiB RSS and 1 % of a core at 1 Hz). It starts the stand-in
// kubelet (tests/fakekubelet) on an 8-GPU node scenario and calls PodResourcesClient::List:
//   1. back to back for --calls calls: CPU (user + sys of this process) per call, wall per call;
//   2. at --interval-ms for --seconds: CPU share of one core over that window, as the agent
//      would poll.
// RSS: VmRSS before the first call (gRPC not yet started) and after, and the peak (ru_maxrss).
// The fake's own CPU is not counted: it stands for the kubelet.
//
// Flags: --calls N (2000), --seconds N (10), --interval-ms N (1000), --fakekubelet PATH, --scenario
// FILE (defaults: the ones built and kept next to it). Exit 0: table printed; 1: a step failed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kube/pod_resources_client.h"

extern char** environ;  // NOLINT: POSIX's process environment (unistd.h leaves it undeclared)

namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double PeakRssMib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

double CurrentRssMib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
  }
  return 0;
}

struct Options {
  int calls = 2000;
  int seconds = 10;
  int interval_ms = 1000;
  std::string fake = GF_FAKEKUBELET_PATH;
  std::string scenario = GF_FAKEKUBELET_SCENARIO;
};

bool ParseFlags(int argc, char** argv, Options& options) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--calls") {
      options.calls = std::atoi(value);
    } else if (flag == "--seconds") {
      options.seconds = std::atoi(value);
    } else if (flag == "--interval-ms") {
      options.interval_ms = std::atoi(value);
    } else if (flag == "--fakekubelet") {
      options.fake = value;
    } else if (flag == "--scenario") {
      options.scenario = value;
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && options.calls > 0 && options.seconds > 0 && options.interval_ms > 0;
}

int Bench(const Options& options, const std::string& socket) {
  const double rss_before = CurrentRssMib();
  gf::PodResourcesClient client(socket);
  // The socket file appears before the fake listens on it: the first call is retried until it
  // answers, within a deadline.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  auto first = client.List(std::chrono::seconds(5));
  while (!first.ok() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    first = client.List(std::chrono::seconds(5));
  }
  if (!first.ok()) {
    std::fprintf(stderr, "kube_bench: %s\n", first.error().ToString().c_str());
    return 1;
  }
  std::size_t gpus = 0;
  for (const gf::KubeContainerGpus& container : *first) {
    gpus += container.gpus.size();
  }

  const double cpu0 = CpuSeconds();
  const auto wall0 = Clock::now();
  for (int i = 0; i < options.calls; ++i) {
    if (!client.List(std::chrono::seconds(5)).ok()) {
      std::fprintf(stderr, "kube_bench: call %d failed\n", i);
      return 1;
    }
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  const double cpu_per_call_us = (CpuSeconds() - cpu0) / options.calls * 1e6;
  const double rss_after = CurrentRssMib();

  const double cpu1 = CpuSeconds();
  const auto start = Clock::now();
  const auto end = start + std::chrono::seconds(options.seconds);
  for (auto next = start; next < end; next += std::chrono::milliseconds(options.interval_ms)) {
    std::this_thread::sleep_until(next);
    if (!client.List(std::chrono::seconds(5)).ok()) {
      std::fprintf(stderr, "kube_bench: a polled call failed\n");
      return 1;
    }
  }
  std::this_thread::sleep_until(end);
  const double window_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double polled_pct = (CpuSeconds() - cpu1) / window_s * 100.0;

  std::printf("| measure | figure |\n|---|---|\n");
  std::printf("| node | %zu containers with GPUs, %zu GPU devices |\n", first->size(), gpus);
  std::printf("| List back to back | %.1f us CPU, %.1f us wall per call (%d calls) |\n",
              cpu_per_call_us,
              wall_s / options.calls * 1e6,
              options.calls);
  std::printf("| List every %d ms for %d s | %.3f %% of one core |\n",
              options.interval_ms,
              options.seconds,
              polled_pct);
  std::printf("| RSS | %.1f MiB before gRPC, %.1f MiB after, peak %.1f MiB |\n",
              rss_before,
              rss_after,
              PeakRssMib());
  return 0;
}

int Run(int argc, char** argv) {
  Options options;
  if (!ParseFlags(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: gf_kube_bench [--calls N] [--seconds N] [--interval-ms N] "
                 "[--fakekubelet PATH] [--scenario FILE]\n");
    return 1;
  }
  char dir_template[] = "/tmp/gf-kube-bench-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    std::perror("kube_bench: mkdtemp");
    return 1;
  }
  const std::filesystem::path dir = dir_template;
  const std::string socket = (dir / "kubelet.sock").string();
  std::vector<std::string> args = {
      options.fake, "--socket", socket, "--scenario", options.scenario};
  std::vector<char*> fake_argv;
  fake_argv.reserve(args.size() + 1);
  for (std::string& arg : args) {
    fake_argv.push_back(arg.data());
  }
  fake_argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = 1;
  if (::posix_spawn(&pid, options.fake.c_str(), nullptr, nullptr, fake_argv.data(), environ) != 0) {
    std::fprintf(stderr, "kube_bench: cannot start %s\n", options.fake.c_str());
  } else {
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!std::filesystem::is_socket(socket) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    rc = Bench(options, socket);
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  std::filesystem::remove_all(dir);
  return rc;
}
}  // namespace

int main(int argc, char** argv) {
  // Exceptions (std::filesystem, allocation) end the bench with a message, not an abort.
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kube_bench: %s\n", e.what());
    return 1;
  }
}
