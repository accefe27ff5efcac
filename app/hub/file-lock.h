// An exclusive advisory lock on a file (flock), the kind huggingface_hub takes on the cache's lock files,
// so that Folio and other tools never write the same blob at once.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>

namespace folio::hub {

class FileLock {
public:
    // Creates the lock file (and its folder) and waits for the lock, polling `stop` while another process
    // or thread holds it: when `stop` returns true the wait ends with LockWaitStopped. Throws
    // folio::Error naming the file when it cannot be created or locked.
    FileLock(const std::filesystem::path& path, const std::function<bool()>& stop,
             std::chrono::milliseconds poll = std::chrono::milliseconds(50));
    ~FileLock();
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

    // Whether another holder made this one wait.
    bool waited() const { return waited_; }

private:
    int fd_ = -1;
    bool waited_ = false;
};

struct LockWaitStopped {};

}  // namespace folio::hub
