// Runs a built program from a test (run_apnn: the `apnn` binary, APNN_CLI_PATH or $APNN_CLI):
// stdout and stderr captured through files (so stderr is not a terminal), a private cache,
// killed after a time limit (60 s unless the caller gives one: a GPU bench run compiles and
// times dozens of kernels, beside other suites on a shared machine).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "test_util.h"

extern char** environ;

// How long a CLI run may take before the test kills it.
inline constexpr std::chrono::seconds kCliTimeLimit{60};

struct CliResult {
  int code = -1;
  std::string out, err;
};

// Runs `binary` with args in workdir. The environment is the test's, less the cache and
// tuning variables, plus APNN_CACHE_DIR=cache.
inline CliResult run_program(const std::string& binary, const std::vector<std::string>& args,
                             const std::filesystem::path& workdir, const std::filesystem::path& cache,
                             const std::filesystem::path& scratch,
                             std::chrono::seconds limit = kCliTimeLimit) {
  const std::filesystem::path out = scratch / ".stdout", err = scratch / ".stderr";
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "APNN_CACHE_DIR=", 15) != 0 && std::strncmp(*e, "APNN_CACHE_MAX_BYTES=", 21) != 0 &&
        std::strncmp(*e, "APNN_TUNING_DB=", 15) != 0)
      env_store.emplace_back(*e);
  env_store.push_back("APNN_CACHE_DIR=" + cache.string());
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = {binary};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  for (auto& s : argv_store) argv.push_back(s.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || ::dup2(fo, 1) < 0 || ::dup2(fe, 2) < 0 || ::chdir(workdir.c_str()) != 0) ::_exit(127);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL(binary << " timed out after " << limit.count() << " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// The built `apnn`. APNN_CLI overrides the build's path: binaries carried to a GPU machine
// run from elsewhere. Made absolute here: the child runs in `workdir`.
inline CliResult run_apnn(const std::vector<std::string>& args, const std::filesystem::path& workdir,
                          const std::filesystem::path& cache, const std::filesystem::path& scratch,
                          std::chrono::seconds limit = kCliTimeLimit) {
  const char* cli = std::getenv("APNN_CLI");
  return run_program(cli && *cli ? std::filesystem::absolute(cli).string() : APNN_CLI_PATH, args, workdir, cache, scratch,
                     limit);
}

inline std::string describe(const std::vector<std::string>& args, const CliResult& r) {
  std::string s = "apnn";
  for (const auto& a : args) s += " " + a;
  return s + "\n  exit " + std::to_string(r.code) + "\n  stdout: " + r.out + "\n  stderr: " + r.err;
}
