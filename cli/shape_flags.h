// The problem-shape flags shared by `verify` and `tune`: --m/--n/--k for apmm,
// --batch/--in-channels/--height/--width/--out-channels for apconv. The flags of the
// spec's op must all be given, and none of the other op's.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <vector>

#include "apnn/engine.h"
#include "apnn/spec.h"

namespace apnn::cli {

class ShapeFlags {
 public:
  explicit ShapeFlags(CLI::App* cmd);
  ApmmShape apmm(const KernelSpec& spec) const;  // Error(InvalidInput) on a flag mismatch
  ConvShape conv(const KernelSpec& spec) const;

 private:
  struct Flag {
    const char* name;
    int64_t value = 0;
    CLI::Option* option = nullptr;
  };
  void check(const std::vector<Flag>& needed, const std::vector<Flag>& foreign, const char* op) const;
  // Held by pointer: CLI11 keeps the address of each value.
  std::shared_ptr<std::vector<Flag>> mm_, cv_;
};

}  // namespace apnn::cli
