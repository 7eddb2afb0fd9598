// Every file servesim writes goes through here, so that no output ever destroys data: the path is
// resolved through its symlinks to the file it names, only a regular file (or nothing) is
// replaced, and the bytes go to a temp file beside the target, created exclusively under a name
// no user file has, which is renamed over the target once whole. Any failure (ENOSPC, EFBIG,
// EACCES, ...) is an Error naming the path and the system's reason, and leaves nothing behind.
// PathPlan checks a command's outputs before it does any work: each writable, and none the same
// file as an input or another output (by device and inode, not by spelling).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace servesim {

// The file PATH names, symlinks followed (a dangling link: the file it would create). Error
// naming PATH when that is not a regular file (a directory, device node, FIFO or socket), when
// its folder is missing or not writable, or when the file exists read-only.
std::string output_target(const std::string& path);

// Replaces the file PATH names (see output_target) with BYTES, through an exclusive temp file
// and a rename; an existing file's permissions are kept.
void write_output_file(const std::string& path, std::string_view bytes);

// Why PATH cannot be read as an input file: "cannot open: no such file", "cannot read: is a
// directory", "... is a device node", or the system's reason; "" when it is a regular file.
std::string input_file_problem(const std::string& path);

// A command's files, checked together before it does any work.
class PathPlan {
 public:
  // FLAG names the option the path came from ("trace", "out"), for messages. Empty paths are
  // ignored.
  void input(const std::string& flag, const std::string& path);
  void output(const std::string& flag, const std::string& path);
  // Error naming the flags when an output cannot be written, or is the same file as an input or
  // as another output.
  void check() const;

 private:
  struct Entry {
    std::string flag, path;
  };
  std::vector<Entry> inputs_, outputs_;
};

}  // namespace servesim
