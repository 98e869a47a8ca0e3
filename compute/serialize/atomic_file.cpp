// write_file_atomically: temp file + fsync + rename + directory fsync, with POSIX calls
// because std::ofstream can neither fsync nor report why a write failed.
#include "compute/serialize/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <streambuf>
#include <vector>

namespace petra {
namespace {

std::string failure(const std::string& path, const std::string& problem) {
  return "cannot write '" + path + "': " + problem;
}

std::string system_error_text(int error_number) { return std::strerror(error_number); }

// Owns a file descriptor; close() reports the error that a silent destructor would hide.
class file_descriptor {
 public:
  explicit file_descriptor(int fd) : fd_(fd) {}
  ~file_descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;

  int get() const { return fd_; }
  /// Closes now; returns 0 or the errno of close().
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

// Removes the temp file unless the rename succeeded.
class temp_file_guard {
 public:
  explicit temp_file_guard(std::string path) : path_(std::move(path)) {}
  ~temp_file_guard() {
    if (!committed_) ::unlink(path_.c_str());
  }
  temp_file_guard(const temp_file_guard&) = delete;
  temp_file_guard& operator=(const temp_file_guard&) = delete;

  void commit() { committed_ = true; }

 private:
  std::string path_;
  bool committed_ = false;
};

// A buffered output stream buffer over a descriptor. The first write error (ENOSPC,
// EFBIG, EIO, ...) is kept so the caller can name it; the stream then turns bad.
class descriptor_streambuf : public std::streambuf {
 public:
  explicit descriptor_streambuf(int fd) : fd_(fd), buffer_(1 << 16) { reset_put_area(); }

  int error_number() const { return error_number_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

  int sync() override { return drain() ? 0 : -1; }

  // Large blocks (tensor payloads) go straight to the descriptor.
  std::streamsize xsputn(const char* data, std::streamsize count) override {
    if (count < static_cast<std::streamsize>(buffer_.size())) return std::streambuf::xsputn(data, count);
    if (!drain() || !write_all(data, static_cast<std::size_t>(count))) return 0;
    return count;
  }

 private:
  void reset_put_area() { setp(buffer_.data(), buffer_.data() + buffer_.size()); }

  bool drain() {
    const bool ok = write_all(pbase(), static_cast<std::size_t>(pptr() - pbase()));
    reset_put_area();
    return ok;
  }

  bool write_all(const char* data, std::size_t count) {
    if (error_number_) return false;
    while (count > 0) {
      const ssize_t written = ::write(fd_, data, count);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        error_number_ = written < 0 ? errno : ENOSPC;
        return false;
      }
      data += written;
      count -= static_cast<std::size_t>(written);
    }
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_number_ = 0;
};

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& fill) {
  if (path.empty() || path.back() == '/')
    throw std::invalid_argument("write_file_atomically: '" + path + "' is not a file path");

  // mkstemp in the target's directory: rename() is only atomic within one file system.
  std::string temp_path = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp_path.data());
  if (fd < 0)
    throw std::runtime_error(failure(path, "cannot create a temp file beside it (" +
                                               system_error_text(errno) +
                                               "); check that the directory exists and is writable"));
  temp_file_guard guard(temp_path);
  file_descriptor file(fd);
  (void)::fchmod(fd, 0644);  // mkstemp makes 0600; a checkpoint is an ordinary file

  descriptor_streambuf buffer(fd);
  std::ostream out(&buffer);
  try {
    fill(out);
  } catch (const std::exception& e) {
    std::throw_with_nested(
        std::runtime_error(failure(path, std::string("writing its content failed: ") + e.what())));
  } catch (...) {
    std::throw_with_nested(
        std::runtime_error(failure(path, "writing its content failed (unknown exception)")));
  }
  out.flush();
  if (buffer.error_number())
    throw std::runtime_error(failure(path, "write error (" + system_error_text(buffer.error_number()) +
                                               "); check the free space and the device"));
  if (!out) throw std::runtime_error(failure(path, "the output stream was left in a failed state"));
  if (::fsync(fd) != 0)
    throw std::runtime_error(
        failure(path, "fsync of the temp file failed (" + system_error_text(errno) + ")"));
  if (const int error_number = file.close())
    throw std::runtime_error(
        failure(path, "closing the temp file failed (" + system_error_text(error_number) + ")"));
  if (::rename(temp_path.c_str(), path.c_str()) != 0)
    throw std::runtime_error(
        failure(path, "renaming the temp file over it failed (" + system_error_text(errno) + ")"));
  guard.commit();

  // Make the rename itself durable. The new content is already in place, so a failure
  // here is reported but the file is whole.
  const std::string directory = directory_of(path);
  file_descriptor directory_fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (directory_fd.get() < 0 || ::fsync(directory_fd.get()) != 0)
    throw std::runtime_error(failure(path, "written, but fsync of its directory '" + directory +
                                               "' failed (" + system_error_text(errno) +
                                               "); the rename may not survive a crash"));
}

}  // namespace petra
