// `servesim report FILE... -o PAGE.html`: one self-contained HTML page of results files. The page
// is drawn by the Python package (python/servesim/report: SVG charts and a jinja2 template, both
// Python's to do well), which this command runs as `python3 -m servesim.report ARGS...`: the
// package beside this binary (BUILD/python, where the build puts it) when there is one, else the
// installed one. SERVESIM_PYTHON names another interpreter (default /usr/bin/python3, where
// Debian's python3-h5py and python3-jinja2 are). What the page maker prints comes back through
// OUT; its error (one line naming the file) comes back as an Error, so that the command line
// prints it as every command's, and Python's servesim.command raises it.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "util/error.hpp"

extern char** environ;

namespace servesim::cli {
namespace {

namespace fs = std::filesystem;

// The folder holding the servesim package beside this binary ("" when there is none).
std::string package_beside_binary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path dir = self.parent_path() / "python";
  return fs::exists(dir / "servesim" / "report" / "__init__.py", ec) ? dir.string() : "";
}

std::string interpreter() {
  const char* chosen = std::getenv("SERVESIM_PYTHON");
  if (chosen != nullptr && *chosen != '\0') return chosen;
  return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

// This process's environment with DIR first on PYTHONPATH (unchanged when DIR is empty).
std::vector<std::string> environment_with(const std::string& dir) {
  std::vector<std::string> env;
  bool set = false;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    if (!dir.empty() && v.rfind("PYTHONPATH=", 0) == 0) {
      v = "PYTHONPATH=" + dir + (v.size() > 11 ? ":" + v.substr(11) : "");
      set = true;
    }
    env.push_back(v);
  }
  if (!dir.empty() && !set) env.push_back("PYTHONPATH=" + dir);
  return env;
}

// Reads FDS[0] into OUT and FDS[1] into ERR until both end.
void drain(std::array<int, 2> fds, std::ostream& out, std::string& err) {
  std::array<char, 4096> buffer{};
  std::array<pollfd, 2> polled{{{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}}};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(polled.data(), polled.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error("report", std::string("poll: ") + strerror(errno));
    }
    for (size_t i = 0; i < polled.size(); ++i) {
      if (polled[i].fd < 0 || polled[i].revents == 0) continue;
      const ssize_t n = read(polled[i].fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(polled[i].fd);
        polled[i].fd = -1;
        --open_fds;
      } else if (i == 0) {
        out.write(buffer.data(), n);
      } else {
        err.append(buffer.data(), size_t(n));
      }
    }
  }
}

}  // namespace

int cmd_report(int argc, const char* const* argv, std::ostream& out) {
  const std::string python = interpreter();
  std::vector<std::string> args = {python, "-m", "servesim.report"};
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  std::vector<char*> child_argv;
  for (std::string& a : args)
    child_argv.push_back(a.data());
  child_argv.push_back(nullptr);
  std::vector<std::string> env = environment_with(package_beside_binary());
  std::vector<char*> child_env;
  for (std::string& e : env)
    child_env.push_back(e.data());
  child_env.push_back(nullptr);

  // Close-on-exec: a child another thread spawns meanwhile does not hold them open.
  std::array<int, 2> out_pipe{}, err_pipe{};
  if (pipe2(out_pipe.data(), O_CLOEXEC) != 0 || pipe2(err_pipe.data(), O_CLOEXEC) != 0) {
    throw Error("report", std::string("pipe: ") + strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, python.c_str(), &actions, nullptr, child_argv.data(), child_env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw Error("report",
                "cannot run " + python + " (the page is drawn by servesim's Python " +
                    "package; SERVESIM_PYTHON names another interpreter): " + strerror(spawned));
  }
  std::string err;
  drain({out_pipe[0], err_pipe[0]}, out, err);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("report", std::string("waitpid: ") + strerror(errno));
  }
  if (!WIFEXITED(status)) {
    throw Error("report", python + " ended by signal " + std::to_string(WTERMSIG(status)));
  }
  const int code = WEXITSTATUS(status);
  if (code == 0) return 0;
  // The page maker's one line, less its "servesim report: error: " (run_cli prints that).
  const std::string prefix = "servesim report: error: ";
  if (err.rfind(prefix, 0) == 0) err.erase(0, prefix.size());
  while (!err.empty() && err.back() == '\n')
    err.pop_back();
  if (code == 2) throw Error("", err);
  throw Error("report",
              python + " -m servesim.report failed (status " + std::to_string(code) + "): " + err);
}

}  // namespace servesim::cli
