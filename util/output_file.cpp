#include "util/output_file.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.hpp"

namespace servesim {

namespace {

std::string reason(int err) {
  return std::string("cannot write: ") + std::strerror(err);
}

// The folder holding PATH ("." for a bare name) and PATH's last component.
std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
std::string name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device node";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is not a regular file";
}

// PATH with its symlinks followed, as far as they lead (a dangling link: the path it names).
std::string follow_links(const std::string& path) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    if (hops == 40) throw Error(path, 0, "", reason(ELOOP));
    std::string link(size_t(st.st_size > 0 ? st.st_size : 255) + 1, '\0');
    const ssize_t n = readlink(p.c_str(), link.data(), link.size());
    if (n < 0) throw Error(path, 0, "", reason(errno));
    link.resize(size_t(n));
    p = (link.empty() || link.front() == '/') ? link : folder_of(p) + "/" + link;
  }
}

// Which file a path names: its device and inode, or (for a file yet to be made) its folder's
// and its name.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;  // non-empty for a file that does not exist yet
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino && name == o.name; }
};

bool file_id(const std::string& path, FileId& id) {
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    id = {st.st_dev, st.st_ino, ""};
    return true;
  }
  if (errno != ENOENT || stat(folder_of(path).c_str(), &st) != 0) return false;
  id = {st.st_dev, st.st_ino, name_of(path)};
  return true;
}

// A temp-file name beside TARGET that no user file has: a dot file with a random part, created
// with O_EXCL, so an existing file of that name is never touched.
int create_temp(const std::string& target, std::string& tmp) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  const std::string folder = folder_of(target);
  // NAME_MAX is 255: keep room for the prefix and the random part.
  const std::string base = name_of(target).substr(0, 200);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t r = salt ^ (uint64_t(getpid()) << 32) ^ (counter++ * 0x9E3779B97F4A7C15ull);
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(r));
    tmp = folder + "/." + base + ".servesim-" + suffix + ".tmp";
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

std::string output_target(const std::string& path) {
  if (path.empty()) throw Error("", 0, "", "an output path is empty");
  const std::string target = follow_links(path);
  struct stat st {};
  if (stat(target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      throw Error(path, 0, "",
                  std::string("cannot write: ") + kind_of(st.st_mode) +
                      " (servesim writes and replaces regular files only)");
    }
    if (access(target.c_str(), W_OK) != 0) throw Error(path, 0, "", reason(errno));
  } else if (errno != ENOENT) {
    throw Error(path, 0, "", reason(errno));
  }
  const std::string folder = folder_of(target);
  struct stat dir {};
  if (stat(folder.c_str(), &dir) != 0) {
    throw Error(
        path, 0, "",
        errno == ENOENT ? "cannot write: folder '" + folder + "' does not exist" : reason(errno));
  }
  if (!S_ISDIR(dir.st_mode))
    throw Error(path, 0, "", "cannot write: '" + folder + "' is not a folder");
  if (access(folder.c_str(), W_OK | X_OK) != 0) {
    throw Error(path, 0, "", "cannot write in folder '" + folder + "': " + std::strerror(errno));
  }
  return target;
}

void write_output_file(const std::string& path, std::string_view bytes) {
  const std::string target = output_target(path);
  std::string tmp;
  const int fd = create_temp(target, tmp);
  if (fd < 0) throw Error(path, 0, "", reason(errno));
  struct stat st {};
  if (stat(target.c_str(), &st) == 0) fchmod(fd, st.st_mode & 07777);
  int err = 0;
  for (size_t done = 0; done < bytes.size() && err == 0;) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += size_t(n);
    } else if (n < 0 && errno != EINTR) {
      err = errno;
    } else if (n == 0) {
      err = EIO;
    }
  }
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && rename(tmp.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) {
    unlink(tmp.c_str());
    throw Error(path, 0, "", reason(err));
  }
}

std::string input_file_problem(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "cannot open: no such file"
                           : std::string("cannot open: ") + std::strerror(errno);
  }
  if (S_ISREG(st.st_mode)) return "";
  return std::string("cannot read: ") + kind_of(st.st_mode) + " (expected a regular file)";
}

void PathPlan::input(const std::string& flag, const std::string& path) {
  if (!path.empty()) inputs_.push_back({flag, path});
}

void PathPlan::output(const std::string& flag, const std::string& path) {
  if (!path.empty()) outputs_.push_back({flag, path});
}

void PathPlan::check() const {
  std::vector<std::pair<FileId, const Entry*>> outs;
  for (const Entry& o : outputs_) {
    std::string target;
    try {
      target = output_target(o.path);
    } catch (const Error& e) {
      throw Error(e.file(), 0, o.flag, e.reason());
    }
    FileId id;
    if (!file_id(target, id)) continue;
    for (const Entry& in : inputs_) {
      FileId other;
      if (file_id(in.path, other) && other.name.empty() && other == id) {
        throw Error(o.path, 0, o.flag,
                    "is also the input --" + in.flag + ": writing it would destroy that input");
      }
    }
    for (const auto& [other, entry] : outs) {
      if (other == id) {
        throw Error(o.path, 0, o.flag,
                    "is the same file as --" + entry->flag + ": each output needs its own");
      }
    }
    outs.emplace_back(id, &o);
  }
}

}  // namespace servesim
