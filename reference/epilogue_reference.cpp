// CPU reference of epilogue chains: the float32 operations of include/apnn/epilogue.h in the
// order the generated kernels perform them (templates/epilogue.cuh).
#include "apnn/epilogue_reference.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn {

namespace {

// A value in the chain: int32 until an op makes it float32.
struct Value {
  bool is_float = false;
  int32_t i = 0;
  float f = 0;
  float as_float() const { return is_float ? f : static_cast<float>(i); }
};

Value apply(const EpilogueOp& op, Value v, int64_t o, const EpilogueParams& p) {
  switch (op.kind) {
    case EpilogueOpKind::ScaleBias:
      return {true, 0, std::fma(v.as_float(), p.scale[o], p.bias[o])};
    case EpilogueOpKind::Relu:
      if (v.is_float) v.f = v.f > 0.0f ? v.f : 0.0f;
      else v.i = v.i > 0 ? v.i : 0;
      return v;
    default:
      return v;  // pool and quantize are not element ops
  }
}

Value pool(const EpilogueOp& op, const Value* window, int count) {
  if (op.pool == PoolKind::Max) {
    Value v = window[0];
    for (int k = 1; k < count; ++k) {
      const Value& w = window[k];
      if (v.is_float ? w.f > v.f : w.i > v.i) v = w;
    }
    return v;
  }
  float s = window[0].as_float();
  for (int k = 1; k < count; ++k) s = s + window[k].as_float();
  return {true, 0, s / static_cast<float>(count)};
}

int16_t quantize(const EpilogueOp& op, float x, int64_t o, const EpilogueParams& p) {
  const size_t i = op.scale == QuantScale::PerChannel ? static_cast<size_t>(o) : 0;
  const int bits = op.out.bits;
  const bool is_signed = op.out.enc == Encoding::Signed;
  const float lo = is_signed ? -static_cast<float>(1 << (bits - 1)) : 0.0f;
  const float hi = is_signed ? static_cast<float>((1 << (bits - 1)) - 1) : static_cast<float>((1 << bits) - 1);
  float t = std::floor((x - p.q_zero[i]) / p.q_scale[i]);
  t = t < lo ? lo : (t > hi ? hi : t);
  const int k = static_cast<int>(t);
  return static_cast<int16_t>(op.out.enc == Encoding::Pm1 ? 2 * k - ((1 << bits) - 1) : k);
}

}  // namespace

int16_t quantized_element(const Epilogue& e, const EpilogueParams& p, int32_t y, int64_t o) {
  const EpilogueOp* q = e.quantize();
  if (!q || e.pool()) throw Error(ErrorKind::InvalidInput, "quantized_element: the chain needs a quantize and no pool");
  Value v{false, y, 0};
  for (const EpilogueOp& op : e.ops) v = apply(op, v, o, p);
  return quantize(*q, v.as_float(), o, p);
}

void pooled_size(const Epilogue& e, int64_t H, int64_t W, int64_t* Hp, int64_t* Wp) {
  const EpilogueOp* pool = e.pool();
  if (!pool) {
    *Hp = H;
    *Wp = W;
    return;
  }
  if (H < pool->size || W < pool->size)
    throw Error(ErrorKind::InvalidInput, fmt::format("shape: the {0}x{0} pool does not fit the {1}x{2} conv output", pool->size,
                                                     H, W));
  *Hp = (H - pool->size) / pool->stride + 1;
  *Wp = (W - pool->size) / pool->stride + 1;
}

EpilogueResult epilogue_reference(const Epilogue& e, const EpilogueParams& p, const int32_t* y, int64_t N, int64_t C,
                                  int64_t H, int64_t W) {
  check_epilogue_params(e, p, C);
  EpilogueResult r;
  r.type = e.output_type();
  r.N = N;
  r.C = C;
  pooled_size(e, H, W, &r.H, &r.W);
  std::vector<EpilogueOp> pre, post;
  bool after_pool = false;
  for (const EpilogueOp& op : e.ops) {
    if (op.kind == EpilogueOpKind::Pool) after_pool = true;
    else if (op.kind != EpilogueOpKind::Quantize) (after_pool ? post : pre).push_back(op);
  }
  const EpilogueOp* pool_op = e.pool();
  const EpilogueOp* q = e.quantize();
  const int size = pool_op ? pool_op->size : 1, stride = pool_op ? pool_op->stride : 1;
  const size_t count = static_cast<size_t>(N * C * r.H * r.W);
  if (r.type == OutputType::Int32 || r.type == OutputType::Int16) r.i32.resize(count);
  if (r.type == OutputType::Float32) r.f32.resize(count);
  if (r.type == OutputType::Packed) r.values.resize(count);
  std::vector<Value> window(static_cast<size_t>(size * size));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < r.H; ++h)
        for (int64_t w = 0; w < r.W; ++w) {
          for (int dy = 0; dy < size; ++dy)
            for (int dx = 0; dx < size; ++dx) {
              Value v{false, y[((n * C + c) * H + h * stride + dy) * W + w * stride + dx], 0};
              for (const EpilogueOp& op : pre) v = apply(op, v, c, p);
              window[static_cast<size_t>(dy * size + dx)] = v;
            }
          Value v = pool_op ? pool(*pool_op, window.data(), size * size) : window[0];
          for (const EpilogueOp& op : post) v = apply(op, v, c, p);
          const size_t at = static_cast<size_t>(((n * C + c) * r.H + h) * r.W + w);
          if (q) r.values[at] = quantize(*q, v.as_float(), c, p);
          else if (v.is_float) r.f32[at] = v.f;
          else r.i32[at] = v.i;
        }
  return r;
}

namespace {

std::vector<double> values_of(const EpilogueResult& r) {
  std::vector<double> v;
  if (r.type == OutputType::Float32) v.assign(r.f32.begin(), r.f32.end());
  else v.assign(r.i32.begin(), r.i32.end());
  return v;
}

}  // namespace

EpilogueParams fitted_epilogue_params(const Epilogue& e, const int32_t* y, int64_t N, int64_t C, int64_t H, int64_t W,
                                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  EpilogueParams p;
  Epilogue before_sb, before_q;
  bool seen_sb = false;
  for (const EpilogueOp& op : e.ops) {
    if (op.kind == EpilogueOpKind::ScaleBias) seen_sb = true;
    if (!seen_sb) before_sb.ops.push_back(op);
    if (op.kind != EpilogueOpKind::Quantize) before_q.ops.push_back(op);
  }
  if (seen_sb) {
    const std::vector<double> v = values_of(epilogue_reference(before_sb, {}, y, N, C, H, W));
    double mean = 0, sq = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(std::max<size_t>(v.size(), 1));
    for (double x : v) sq += (x - mean) * (x - mean);
    const double spread = v.empty() || sq == 0 ? 1.0 : std::sqrt(sq / static_cast<double>(v.size()));
    for (int64_t o = 0; o < C; ++o) {
      // Every fourth channel negated: a layer's folded batch norm can flip a channel, and the
      // kernels' quantize thresholds then count down (engine/quantize_thresholds.h).
      const double s = (o % 4 == 3 ? -1 : 1) * uniform(0.5, 1.5) / spread;
      p.scale.push_back(static_cast<float>(s));
      p.bias.push_back(static_cast<float>(-mean * s + uniform(-0.5, 0.5)));
    }
  }
  if (const EpilogueOp* q = e.quantize()) {
    std::vector<double> v = values_of(epilogue_reference(before_q, p, y, N, C, H, W));
    std::sort(v.begin(), v.end());
    double lo = v.empty() ? 0 : v[v.size() * 2 / 100], hi = v.empty() ? 1 : v[v.size() * 98 / 100];
    if (!(hi > lo)) hi = lo + 1;
    const double range = hi - lo, levels = static_cast<double>(1 << q->out.bits);
    const int64_t n = q->scale == QuantScale::PerChannel ? C : 1;
    for (int64_t i = 0; i < n; ++i) {
      p.q_scale.push_back(static_cast<float>(range / levels * uniform(0.8, 1.0)));
      const double zero = q->out.enc == Encoding::Signed ? (lo + hi) / 2 : lo;
      p.q_zero.push_back(static_cast<float>(zero + uniform(-0.05, 0.05) * range));
    }
  }
  return p;
}

}  // namespace apnn
