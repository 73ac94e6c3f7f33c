// For tests only: a listening TCP socket on 127.0.0.1 at a port the kernel picks, for the
// stand-in HTTP servers that client tests talk to (webhooks, the Kubernetes API).
#pragma once

#include <string>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gf {

struct LoopbackListener {
  int fd = -1;
  int port = 0;

  // Binds and listens; on failure fd stays -1 and the caller's test fails on it.
  LoopbackListener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the sockets API
    auto* any = reinterpret_cast<sockaddr*>(&addr);
    if (fd < 0 || ::bind(fd, any, sizeof(addr)) != 0 || ::getsockname(fd, any, &len) != 0 ||
        ::listen(fd, 16) != 0) {
      Close();
      return;
    }
    port = ntohs(addr.sin_port);
  }
  ~LoopbackListener() { Close(); }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  // Wakes a thread blocked in accept(), which then fails: how a server thread is told to stop.
  void Shutdown() const { ::shutdown(fd, SHUT_RDWR); }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port); }

 private:
  void Close() {
    if (fd >= 0) {
      ::close(fd);
    }
    fd = -1;
  }
};

}  // namespace gf
