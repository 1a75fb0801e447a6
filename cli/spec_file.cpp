#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "apnn/error.h"
#include "cli/commands.h"

namespace apnn::cli {

KernelSpec load_spec_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, fmt::format("{}: cannot read the spec file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_spec_text(ss.str(), path);
}

}  // namespace apnn::cli
