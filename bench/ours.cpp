#include "bench/ours.h"

#include <algorithm>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/reference.h"
#include "runtime/steady_timing.h"
#include "engine/layer_result.h"
#include "engine/verify.h"
#include "runtime/device.h"

namespace apnn::bench {

namespace {

void compare(const int32_t* got, const int32_t* want, size_t n, uint64_t base, CheckResult* r) {
  r->checked += n;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && r->mismatches++ == 0)
      r->first_mismatch = fmt::format("element {}: gpu {}, cpu {}", base + i, got[i], want[i]);
}

}  // namespace

std::vector<int64_t> rows_to_check(int64_t rows, int64_t work_per_row) {
  const int64_t budget = int64_t{1} << 31;
  const int64_t n = std::clamp<int64_t>(budget / std::max<int64_t>(work_per_row, 1), std::min<int64_t>(rows, 8), rows);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(n == 1 ? 0 : i * (rows - 1) / (n - 1));
  return out;
}

OursGemm::OursGemm(Engine& engine, const KernelSpec& spec, const ApmmShape& s) : s_(s), out_(spec.epilogue) {
  if (!spec.epilogue.empty())
    throw Error(ErrorKind::InvalidInput, "bench: GEMM rows time int32 or int16 outputs (no epilogue chain)");
  check_apmm_shape(spec, s);
  runner_ = std::make_unique<ApmmRunner>(engine.kernel(spec));
  in_ = std::make_unique<ApmmInputSets>(*runner_, spec, s, 0, 7);
}

CheckResult OursGemm::check() {
  in_->y[0].values.fill_u32(kPoison);
  launch(0);
  synchronize(runner_->kernel().module->context());
  const std::vector<int32_t> y = download_layer(out_, ApmmRunner::dims(s_.M, s_.N), in_->y[0], {}).i32;
  const std::vector<int64_t> rows = rows_to_check(s_.M, s_.N * s_.K);
  std::vector<int16_t> wsub(rows.size() * s_.K);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(in_->W.begin() + rows[i] * s_.K, s_.K, wsub.begin() + i * s_.K);
  const std::vector<int32_t> want = reference_apmm(wsub, in_->X, {static_cast<int64_t>(rows.size()), s_.N, s_.K});
  CheckResult r;
  for (size_t i = 0; i < rows.size(); ++i)
    compare(y.data() + rows[i] * s_.N, want.data() + i * s_.N, s_.N, rows[i] * s_.N, &r);
  return r;
}

void OursGemm::launch(int set) { runner_->gemm(in_->w[set], in_->x[set], none_, in_->y[set]); }

OursConv::OursConv(Engine& engine, const KernelSpec& spec, const ConvShape& s) : out_(spec.epilogue) {
  if (!spec.epilogue.empty())
    throw Error(ErrorKind::InvalidInput, "bench: conv rows time int32 or int16 outputs (no epilogue chain)");
  g_ = conv_geometry(spec, s);
  runner_ = std::make_unique<ConvRunner>(engine.kernel(spec));
  in_ = std::make_unique<ConvInputSets>(*runner_, spec, g_, 0, 7);
}

CheckResult OursConv::check() {
  in_->y[0].values.fill_u32(kPoison);
  launch(0);
  synchronize(runner_->kernel().module->context());
  const int64_t image_in = g_.C * g_.H * g_.W, image_out = g_.O * g_.Ho() * g_.Wo();
  const std::vector<int32_t> y = download_layer(out_, {g_.N, g_.O, g_.Ho(), g_.Wo()}, in_->y[0], {}).i32;
  ConvGeometry one = g_;
  one.N = 1;
  CheckResult r;
  for (int64_t n : g_.N > 1 ? std::vector<int64_t>{0, g_.N - 1} : std::vector<int64_t>{0}) {
    const std::vector<int16_t> x(in_->X.begin() + n * image_in, in_->X.begin() + (n + 1) * image_in);
    const std::vector<int32_t> want = reference_conv(one, in_->W, x);
    compare(y.data() + n * image_out, want.data(), want.size(), n * image_out, &r);
  }
  return r;
}

void OursConv::launch(int set) {
  runner_->conv(in_->w[set], in_->x[set], g_, none_, in_->y[set]);
}

}  // namespace apnn::bench
