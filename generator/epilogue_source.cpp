// The struct Epi of a generated kernel: a validated chain turned into straight-line code
// (templates/epilogue.cuh documents the contract; include/apnn/epilogue.h the arithmetic).
#include "generator/epilogue_source.h"

#include <fmt/format.h>

#include "spec/epilogue.h"

namespace apnn {

namespace {

const char* type_name(bool is_float) { return is_float ? "float" : "apnn::i32"; }

// Where the ops read channel o's parameters: the chain's arrays, or a RowParams a kernel
// keeps per row (templates/epilogue.cuh).
struct ParamSource {
  const char* scale;
  const char* bias;
};
constexpr ParamSource kFromArgs{"a.scale[o]", "a.bias[o]"}, kFromRow{"p.scale", "p.bias"};

// Body lines for `ops` applied to x0 of type `in_float`; returns the last variable's index.
int emit_ops(const std::vector<EpilogueOp>& ops, bool in_float, const ParamSource& src, std::string* body) {
  int v = 0;
  bool is_float = in_float;
  for (const EpilogueOp& op : ops) {
    const int n = v + 1;
    if (op.kind == EpilogueOpKind::ScaleBias) {
      *body += fmt::format("    const float x{} = fmaf({}, {}, {});\n", n,
                           is_float ? fmt::format("x{}", v) : fmt::format("static_cast<float>(x{})", v), src.scale,
                           src.bias);
      is_float = true;
    } else if (op.kind == EpilogueOpKind::Relu) {
      *body += is_float ? fmt::format("    const float x{0} = x{1} > 0.0f ? x{1} : 0.0f;\n", n, v)
                        : fmt::format("    const apnn::i32 x{0} = x{1} > 0 ? x{1} : 0;\n", n, v);
    } else {
      continue;
    }
    v = n;
  }
  return v;
}

}  // namespace

std::string epilogue_source(const Epilogue& e) {
  const EpilogueTypes types = epilogue_types(e);
  std::vector<EpilogueOp> pre, post;
  bool after_pool = false;
  for (const EpilogueOp& op : e.ops) {
    if (op.kind == EpilogueOpKind::Pool) after_pool = true;
    else if (op.kind != EpilogueOpKind::Quantize) (after_pool ? post : pre).push_back(op);
  }
  std::string pre_body, post_body, pre_row_body, post_row_body;
  const int pre_last = emit_ops(pre, false, kFromArgs, &pre_body);
  const int post_last = emit_ops(post, types.pooled_float, kFromArgs, &post_body);
  emit_ops(pre, false, kFromRow, &pre_row_body);
  emit_ops(post, types.pooled_float, kFromRow, &post_row_body);
  const EpilogueOp* pool = e.pool();
  const EpilogueOp* q = e.quantize();
  const char* chain = e.empty() ? (e.int16_out ? "none: int16 output" : "none: int32 output") : "compiled in";
  return fmt::format(
      R"(// epilogue chain: {chain}
struct Epi {{
  typedef {staged} Staged;
  typedef {pooled} Pooled;
  typedef {final_t} Final;
  typedef {out_t} Out;
  static constexpr bool kPlain = {plain}, kStaged = {staged_path}, kPool = {has_pool}, kPoolMax = {pool_max};
  static constexpr int kPoolSize = {pool_size}, kPoolStride = {pool_stride};
  static constexpr bool kQuantize = {has_q}, kQPerChannel = {q_per_channel}, kQThresholds = {q_thresholds};
  static constexpr bool kScaleBias = {has_sb};
  static constexpr int kQBits = {q_bits}, kQEnc = {q_enc};
  __device__ static __forceinline__ Staged pre(apnn::i32 x0, int o, const apnn::EpilogueArgs& a) {{
{pre_body}    return x{pre_last};
  }}
  __device__ static __forceinline__ Final post(Pooled x0, int o, const apnn::EpilogueArgs& a) {{
{post_body}    return x{post_last};
  }}
  // The same with the parameters of channel o from a RowParams (apnn::row_params).
  __device__ static __forceinline__ Staged pre_row(apnn::i32 x0, const apnn::RowParams& p) {{
{pre_row_body}    return x{pre_last};
  }}
  __device__ static __forceinline__ Final post_row(Pooled x0, const apnn::RowParams& p) {{
{post_row_body}    return x{post_last};
  }}
}};
)",
      fmt::arg("chain", chain), fmt::arg("staged", type_name(types.staged_float)),
      fmt::arg("pooled", type_name(types.pooled_float)), fmt::arg("final_t", type_name(types.final_float)),
      fmt::arg("out_t", e.int16_out ? "apnn::i16" : type_name(types.final_float)),
      fmt::arg("plain", e.empty() ? "true" : "false"), fmt::arg("staged_path", e.staged() ? "true" : "false"),
      fmt::arg("has_pool", pool ? "true" : "false"),
      fmt::arg("pool_max", pool && pool->pool == PoolKind::Max ? "true" : "false"),
      fmt::arg("pool_size", pool ? pool->size : 1), fmt::arg("pool_stride", pool ? pool->stride : 1),
      fmt::arg("has_q", q ? "true" : "false"), fmt::arg("has_sb", e.has(EpilogueOpKind::ScaleBias) ? "true" : "false"),
      fmt::arg("q_per_channel", q && q->scale == QuantScale::PerChannel ? "true" : "false"),
      fmt::arg("q_thresholds", quantize_by_thresholds(e) ? "true" : "false"),
      fmt::arg("q_bits", q ? q->out.bits : 1), fmt::arg("q_enc", q ? static_cast<int>(q->out.enc) : 0),
      fmt::arg("pre_body", pre_body), fmt::arg("pre_last", pre_last), fmt::arg("post_body", post_body),
      fmt::arg("post_last", post_last), fmt::arg("pre_row_body", pre_row_body), fmt::arg("post_row_body", post_row_body));
}

}  // namespace apnn
