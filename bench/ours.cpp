#include "bench/ours.h"

#include <algorithm>

#include <fmt/format.h>

#include "apnn/error.h"
#include "apnn/reference.h"
#include "bench/timing.h"
#include "engine/verify.h"
#include "runtime/device.h"

namespace apnn::bench {

namespace {

// Set i reads the operands from element i * kShift on: distinct data per set at the cost of
// one random draw.
constexpr size_t kShift = 1031, kMaxSets = 32;
constexpr uint32_t kPoison = 0xdeadbeefu;  // an element the kernel does not write cannot pass

void compare(const int32_t* got, const int32_t* want, size_t n, uint64_t base, CheckResult* r) {
  r->checked += n;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != want[i] && r->mismatches++ == 0)
      r->first_mismatch = fmt::format("element {}: gpu {}, cpu {}", base + i, got[i], want[i]);
}

void upload_slice(DeviceBuffer& staging, const std::vector<int16_t>& v, size_t offset, size_t count) {
  staging.upload(v.data() + offset, count * sizeof(int16_t));
}

}  // namespace

std::vector<int64_t> rows_to_check(int64_t rows, int64_t work_per_row) {
  const int64_t budget = int64_t{1} << 31;
  const int64_t n = std::clamp<int64_t>(budget / std::max<int64_t>(work_per_row, 1), std::min<int64_t>(rows, 8), rows);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(n == 1 ? 0 : i * (rows - 1) / (n - 1));
  return out;
}

OursGemm::OursGemm(Engine& engine, const KernelSpec& spec, const ApmmShape& s, size_t l2) : s_(s) {
  if (!spec.epilogue.empty()) throw Error(ErrorKind::InvalidInput, "bench: GEMM rows time int32 outputs (no epilogue chain)");
  check_apmm_shape(spec, s);
  runner_ = std::make_unique<ApmmRunner>(engine.kernel(spec));
  const size_t wn = static_cast<size_t>(s.M * s.K), xn = static_cast<size_t>(s.N * s.K);
  W_ = random_operand(spec.w, wn + kMaxSets * kShift, 7);
  X_ = random_operand(spec.x, xn + kMaxSets * kShift, 8);
  DeviceBuffer ws(wn * 2), xs(xn * 2);
  auto add_set = [&](size_t i) {
    upload_slice(ws, W_, i * kShift, wn);
    upload_slice(xs, X_, i * kShift, xn);
    w_.push_back(runner_->pack_w(ws, s.M, s.K));
    x_.push_back(runner_->pack_x(xs, s.N, s.K));
    y_.push_back(EpilogueDevice::allocate(spec.epilogue, ApmmRunner::dims(s.M, s.N)));
  };
  add_set(0);
  const int n = rotation_sets(w_[0].planes.bytes() + x_[0].planes.bytes() + y_[0].values.bytes(), l2);
  for (int i = 1; i < n; ++i) add_set(i);
  synchronize(runner_->kernel().module->context());
}

CheckResult OursGemm::check() {
  y_[0].values.fill_u32(kPoison);
  launch(0);
  synchronize(runner_->kernel().module->context());
  const std::vector<int32_t> y = y_[0].values.to_vector<int32_t>(static_cast<size_t>(s_.M * s_.N));
  const std::vector<int64_t> rows = rows_to_check(s_.M, s_.N * s_.K);
  std::vector<int16_t> wsub(rows.size() * s_.K);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(W_.begin() + rows[i] * s_.K, s_.K, wsub.begin() + i * s_.K);
  const std::vector<int32_t> want = reference_apmm(wsub, X_, {static_cast<int64_t>(rows.size()), s_.N, s_.K});
  CheckResult r;
  for (size_t i = 0; i < rows.size(); ++i)
    compare(y.data() + rows[i] * s_.N, want.data() + i * s_.N, s_.N, rows[i] * s_.N, &r);
  return r;
}

void OursGemm::launch(int set) { runner_->gemm(w_[set], x_[set], none_, y_[set]); }

OursConv::OursConv(Engine& engine, const KernelSpec& spec, const ConvShape& s, size_t l2) {
  if (!spec.epilogue.empty()) throw Error(ErrorKind::InvalidInput, "bench: conv rows time int32 outputs (no epilogue chain)");
  g_ = conv_geometry(spec, s);
  runner_ = std::make_unique<ConvRunner>(engine.kernel(spec));
  const size_t wn = static_cast<size_t>(g_.O * g_.C * g_.kh * g_.kw), xn = static_cast<size_t>(g_.N * g_.C * g_.H * g_.W);
  const size_t pixels = static_cast<size_t>(g_.N * g_.Ho() * g_.Wo());
  W_ = random_operand(spec.w, wn + kMaxSets * kShift, 7);
  X_ = random_operand(spec.x, xn + kMaxSets * kShift, 8);
  DeviceBuffer ws(wn * 2), xs(xn * 2);
  auto add_set = [&](size_t i) {
    upload_slice(ws, W_, i * kShift, wn);
    upload_slice(xs, X_, i * kShift, xn);
    w_.push_back(runner_->pack_w(ws, g_));
    x_.push_back(runner_->pack_x(xs, g_));
    y_.push_back(EpilogueDevice::allocate(spec.epilogue, ConvRunner::dims(spec, g_)));
    colsum_.emplace_back(pixels * 4);
    nvalid_.emplace_back(pixels * 4);
  };
  add_set(0);
  const int n = rotation_sets(w_[0].planes.bytes() + x_[0].planes.bytes() + y_[0].values.bytes(), l2);
  for (int i = 1; i < n; ++i) add_set(i);
  synchronize(runner_->kernel().module->context());
}

CheckResult OursConv::check() {
  y_[0].values.fill_u32(kPoison);
  launch(0);
  synchronize(runner_->kernel().module->context());
  const int64_t image_in = g_.C * g_.H * g_.W, image_out = g_.O * g_.Ho() * g_.Wo();
  const std::vector<int32_t> y = y_[0].values.to_vector<int32_t>(static_cast<size_t>(g_.N * image_out));
  ConvGeometry one = g_;
  one.N = 1;
  CheckResult r;
  for (int64_t n : g_.N > 1 ? std::vector<int64_t>{0, g_.N - 1} : std::vector<int64_t>{0}) {
    const std::vector<int16_t> x(X_.begin() + n * image_in, X_.begin() + (n + 1) * image_in);
    const std::vector<int32_t> want = reference_conv(one, W_, x);
    compare(y.data() + n * image_out, want.data(), want.size(), n * image_out, &r);
  }
  return r;
}

void OursConv::launch(int set) { runner_->conv(w_[set], x_[set], g_, none_, y_[set], colsum_[set], nvalid_[set]); }

}  // namespace apnn::bench
