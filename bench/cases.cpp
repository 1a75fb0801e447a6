#include "bench/cases.h"

#include <algorithm>

#include <fmt/format.h>

#include "apnn/error.h"

namespace apnn::bench {

std::string Precision::name() const { return fmt::format("w{}a{}{}", w.bits, x.bits, int16_out ? "-i16" : ""); }

Precision make_precision(int p, int q) {
  const Encoding we = p > 1 ? Encoding::Signed : (q == 1 ? Encoding::Unsigned : Encoding::Pm1);
  return {{p, we}, {q, Encoding::Unsigned}};
}

std::vector<Precision> gemm_precisions() {
  std::vector<Precision> v;
  for (auto [p, q] : {std::pair{1, 1}, {1, 2}, {1, 3}, {1, 4}, {2, 2}, {2, 4}, {4, 4}, {2, 8}, {8, 8}})
    v.push_back(make_precision(p, q));
  // The int16 output: the same products in half the output bytes, as the fp8 and fp16 paths
  // write 2-byte outputs.
  for (auto [p, q] : {std::pair{1, 1}, {1, 2}, {2, 2}}) {
    v.push_back(make_precision(p, q));
    v.back().int16_out = true;
  }
  return v;
}

std::vector<Precision> conv_precisions() {
  std::vector<Precision> v;
  for (auto [p, q] : {std::pair{1, 2}, {2, 2}, {1, 4}, {2, 8}}) v.push_back(make_precision(p, q));
  for (auto [p, q] : {std::pair{1, 2}, {2, 2}}) {  // the int16 output, as cuDNN's fp16 writes 2 bytes
    v.push_back(make_precision(p, q));
    v.back().int16_out = true;
  }
  return v;
}

std::string gemm_label(const ApmmShape& s) { return fmt::format("{}x{}x{}", s.M, s.N, s.K); }

std::string conv_label(const ConvShape& s, const ConvParams& p) {
  return fmt::format("n{}-{}x{}x{}-o{}-k{}s{}", s.N, s.H, s.W, s.C, s.O, p.kh, p.sh);
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> v;
  for (int64_t m : {64, 1024, 8192})
    for (int64_t nk : {128, 256, 512, 1024, 2048, 4096}) v.push_back({"", {m, nk, nk}});
  v.push_back({"", {8192, 8192, 8192}});
  for (GemmCase& c : v) c.label = gemm_label(c.shape);
  return v;
}

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> v;
  const ConvParams k3s1{3, 3, 1, 1, 1, 1}, k3s2{3, 3, 2, 2, 1, 1}, k1s2{1, 1, 2, 2, 0, 0};
  for (int64_t c : {128, 256, 512, 1024}) v.push_back({"", {1, c, 16, 16, c}, k3s1});
  for (int64_t n : {8, 128}) {
    // (input size, channels): each stage's 3x3/1 layer, then the strided entry into the next stage.
    const std::pair<int64_t, int64_t> stages[] = {{56, 64}, {28, 128}, {14, 256}, {7, 512}};
    for (auto [hw, c] : stages) v.push_back({"", {n, c, hw, hw, c}, k3s1});
    for (int i = 0; i < 3; ++i) {
      const auto [hw, c] = stages[i];
      v.push_back({"", {n, c, hw, hw, 2 * c}, k3s2});
      v.push_back({"", {n, c, hw, hw, 2 * c}, k1s2});
    }
  }
  for (ConvCase& c : v) c.label = conv_label(c.shape, c.params);
  return v;
}

bool glob_match(const std::string& pattern, const std::string& text) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p, ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = t;
    } else if (star != std::string::npos) {
      p = star + 1, t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<std::string> split_list(const std::string& csv) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= csv.size()) {
    const size_t end = std::min(csv.find(',', start), csv.size());
    if (end > start) out.push_back(csv.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

namespace {

bool any_match(const std::vector<std::string>& patterns, const std::string& label) {
  if (patterns.empty()) return true;
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return glob_match(p, label); });
}

template <class Case>
std::vector<Case> keep(std::vector<Case> all, const std::vector<std::string>& quick, const Selection& sel) {
  std::vector<Case> out;
  for (Case& c : all)
    if ((!sel.quick || std::find(quick.begin(), quick.end(), c.label) != quick.end()) && any_match(sel.shapes, c.label))
      out.push_back(std::move(c));
  return out;
}

std::vector<Precision> keep_prec(const std::vector<Precision>& all, const std::vector<std::string>& quick,
                                 const Selection& sel) {
  std::vector<Precision> out;
  for (const Precision& p : all) {
    const std::string n = p.name();
    const bool named = sel.precisions.empty() || std::count(sel.precisions.begin(), sel.precisions.end(), n);
    if (named && (!sel.quick || !sel.precisions.empty() || std::count(quick.begin(), quick.end(), n))) out.push_back(p);
  }
  return out;
}

}  // namespace

Plan select(const Selection& sel, bool gemm, bool conv) {
  std::vector<std::string> known;
  for (const Precision& p : gemm_precisions()) known.push_back(p.name());
  for (const std::string& name : sel.precisions)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error(ErrorKind::InvalidInput,
                  fmt::format("--prec: unknown precision '{}' (one of {})", name, fmt::join(known, ", ")));
  // The fusion section runs a fixed set of layers: --shapes has nothing to select there.
  if (!gemm && !conv && !sel.shapes.empty())
    throw Error(ErrorKind::InvalidInput,
                "--shapes selects GEMM and convolution rows; the fusion section runs a fixed set of layers (drop "
                "--shapes, or run the conv section)");
  Plan plan;
  if (gemm) {
    plan.gemm = keep(gemm_cases(), {"64x1024x1024", "1024x4096x4096"}, sel);
    plan.gemm_prec = keep_prec(gemm_precisions(), {"w1a1", "w1a2", "w2a2", "w1a2-i16"}, sel);
  }
  if (conv) {
    plan.conv = keep(conv_cases(), {"n1-16x16x128-o128-k3s1", "n8-28x28x128-o128-k3s1"}, sel);
    plan.conv_prec = keep_prec(conv_precisions(), {"w1a2", "w2a2", "w1a2-i16"}, sel);
  }
  for (const std::string& pattern : sel.shapes) {
    const bool used = std::any_of(plan.gemm.begin(), plan.gemm.end(), [&](auto& c) { return glob_match(pattern, c.label); }) ||
                      std::any_of(plan.conv.begin(), plan.conv.end(), [&](auto& c) { return glob_match(pattern, c.label); });
    if (!used) throw Error(ErrorKind::InvalidInput, fmt::format("--shapes: '{}' matches no shape of this run", pattern));
  }
  return plan;
}

}  // namespace apnn::bench
