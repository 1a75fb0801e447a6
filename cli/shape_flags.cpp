#include "cli/shape_flags.h"

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn::cli {

ShapeFlags::ShapeFlags(CLI::App* cmd)
    : mm_(std::make_shared<std::vector<Flag>>(std::vector<Flag>{{"--m"}, {"--n"}, {"--k"}})),
      cv_(std::make_shared<std::vector<Flag>>(
          std::vector<Flag>{{"--batch"}, {"--in-channels"}, {"--height"}, {"--width"}, {"--out-channels"}})) {
  const char* help[] = {"apmm: rows of W and Y", "apmm: rows of X, columns of Y", "apmm: reduction length"};
  for (size_t i = 0; i < mm_->size(); ++i) (*mm_)[i].option = cmd->add_option((*mm_)[i].name, (*mm_)[i].value, help[i]);
  for (Flag& f : *cv_) f.option = cmd->add_option(f.name, f.value, "apconv: input/output size");
}

void ShapeFlags::check(const std::vector<Flag>& needed, const std::vector<Flag>& foreign, const char* op) const {
  for (const Flag& f : foreign)
    if (f.option->count()) throw Error(ErrorKind::InvalidInput, fmt::format("{} does not apply to op {}", f.name, op));
  for (const Flag& f : needed)
    if (!f.option->count()) throw Error(ErrorKind::InvalidInput, fmt::format("{} is required for op {}", f.name, op));
}

ApmmShape ShapeFlags::apmm(const KernelSpec& spec) const {
  check(*mm_, *cv_, op_name(spec.op));
  const std::vector<Flag>& m = *mm_;
  return {m[0].value, m[1].value, m[2].value};
}

ConvShape ShapeFlags::conv(const KernelSpec& spec) const {
  check(*cv_, *mm_, op_name(spec.op));
  const std::vector<Flag>& c = *cv_;
  return {c[0].value, c[1].value, c[2].value, c[3].value, c[4].value};
}

}  // namespace apnn::cli
