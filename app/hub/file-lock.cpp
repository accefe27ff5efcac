#include "app/hub/file-lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "engine/common/error.h"

namespace folio::hub {

FileLock::FileLock(const std::filesystem::path& path, const std::function<bool()>& stop,
                   std::chrono::milliseconds poll) {
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
        fail(path.parent_path().string(), ": cannot create the folder: ", error.message());
    }
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) {
        fail(path.string(), ": cannot open the lock file: ", std::strerror(errno));
    }
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            const int saved = errno;
            ::close(fd_);
            fail(path.string(), ": cannot lock: ", std::strerror(saved));
        }
        waited_ = true;
        if (stop && stop()) {
            ::close(fd_);
            throw LockWaitStopped{};
        }
        std::this_thread::sleep_for(poll);
    }
}

FileLock::~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
}

}  // namespace folio::hub
