// `servesim report FILE... -o PAGE.html`: one self-contained HTML page of results files. The page
// is drawn by the Python package (python/servesim/report: SVG charts and a jinja2 template, both
// Python's to do well), which this command runs as `python3 -m servesim.report ARGS...`: the
// package beside this binary (BUILD/python, where the build puts it) when there is one, else the
// installed one. SERVESIM_PYTHON names another interpreter (default /usr/bin/python3, where
// Debian's python3-h5py and python3-jinja2 are). What the page maker prints comes back through
// OUT; its errors go to standard error as they are (one line naming the file) with its status.
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

  std::array<int, 2> pipe_fds{};
  if (pipe(pipe_fds.data()) != 0) throw Error("report", std::string("pipe: ") + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, python.c_str(), &actions, nullptr, child_argv.data(), child_env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (spawned != 0) {
    close(pipe_fds[0]);
    throw Error("report",
                "cannot run " + python + " (the page is drawn by servesim's Python " +
                    "package; SERVESIM_PYTHON names another interpreter): " + strerror(spawned));
  }
  std::array<char, 4096> buffer{};
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buffer.data(), buffer.size());
    if (n > 0) {
      out.write(buffer.data(), n);
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("report", std::string("waitpid: ") + strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  throw Error("report", python + " ended by signal " + std::to_string(WTERMSIG(status)));
}

}  // namespace servesim::cli
