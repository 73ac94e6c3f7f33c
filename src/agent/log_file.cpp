#include "agent/log_file.h"

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gf {

Result<LogChunk> ReadLogFile(const std::filesystem::path& path,
                             std::int64_t offset,
                             std::int64_t limit) {
  if (offset < 0 || limit < 0) {
    return InvalidArgument("log read of " + path.string() + ": offset and limit must be >= 0");
  }
  // One descriptor for the size and the bytes, so a file that grows meanwhile (a running job)
  // gives a chunk consistent with the size it reports.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return LogChunk{.data = {}, .size = 0, .next_offset = 0};
    }
    return IoError("cannot read log " + path.string() + ": " + ErrnoText(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return IoError("cannot read log " + path.string() + ": " + ErrnoText(err));
  }
  const std::int64_t size = st.st_size;
  const std::int64_t start = std::min(offset, size);
  std::string data(static_cast<std::size_t>(std::min(limit, size - start)), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::pread(fd,
                              data.data() + got,
                              data.size() - got,
                              static_cast<off_t>(start + static_cast<std::int64_t>(got)));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return IoError("cannot read log " + path.string() + ": " + ErrnoText(err));
    }
    if (n == 0) {
      break;  // truncated meanwhile: return what is there
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  data.resize(got);
  return LogChunk{
      .data = std::move(data), .size = size, .next_offset = start + static_cast<std::int64_t>(got)};
}

}  // namespace gf
