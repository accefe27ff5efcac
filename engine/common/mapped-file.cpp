#include "engine/common/mapped-file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "engine/common/error.h"

namespace folio {

namespace {

// Closes a file descriptor when it goes out of scope.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() { ::close(fd_); }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

std::string errno_text(int error) {
    return std::system_category().message(error);
}

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int error = errno;
        fail(path.string(), ": cannot open: ", errno_text(error));
    }
    const FileDescriptor file(fd);
    struct stat status {};
    if (::fstat(file.get(), &status) != 0) {
        const int error = errno;
        fail(path.string(), ": cannot read its size: ", errno_text(error));
    }
    if (S_ISDIR(status.st_mode)) {
        fail(path.string(), ": is a folder, not a file");
    }
    if (!S_ISREG(status.st_mode)) {
        fail(path.string(), ": is not a regular file");
    }
    if (status.st_size == 0) {
        return;
    }
    const auto n_bytes = static_cast<size_t>(status.st_size);
    void* mapping = ::mmap(nullptr, n_bytes, PROT_READ, MAP_PRIVATE, file.get(), 0);
    if (mapping == MAP_FAILED) {
        const int error = errno;
        fail(path.string(), ": cannot map ", n_bytes, " bytes: ", errno_text(error));
    }
    data_ = static_cast<const std::byte*>(mapping);
    size_ = n_bytes;
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) {
        ::munmap(const_cast<std::byte*>(data_), size_);
    }
}

std::string read_file_text(const std::filesystem::path& path) {
    const MappedFile file(path);
    return std::string(reinterpret_cast<const char*>(file.data()), file.size());
}

bool file_mentions(const std::filesystem::path& path, std::string_view text) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error)) {
        return false;
    }
    const MappedFile file(path);
    const std::string_view bytes(reinterpret_cast<const char*>(file.data()), file.size());
    return bytes.find(text) != std::string_view::npos;
}

}  // namespace folio
