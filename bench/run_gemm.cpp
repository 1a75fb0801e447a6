// The GEMM section: per shape the three cuBLASLt paths, then ours at each precision.
#include <cstdio>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/cublaslt_gemm.h"
#include "bench/ours.h"
#include "bench/sections.h"
#include "engine/tile_choice.h"

namespace apnn::bench {

void run_gemm_section(Section& s, const Plan& plan) {
  for (const GemmCase& c : plan.gemm) {
    const nlohmann::json dims = {{"m", c.shape.M}, {"n", c.shape.N}, {"k", c.shape.K}};
    const double ops = gemm_ops(c.shape.M, c.shape.N, c.shape.K);
    for (VendorType t : {VendorType::Int8, VendorType::Fp8, VendorType::Fp16}) {
      Row r = make_row("gemm", c.label, dims, ops, vendor_impl(t), vendor_prec(t));
      try {
        CublasLtGemm g(t, c.shape, s.l2);
        int chosen = 0;
        r.t = time_best_candidate(s.rule, g.candidates(), g.sets(), [&](int i) { g.use(i); },
                                  [&](int set) { g.launch(set); }, &chosen);
        r.note = g.describe();
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Driver) throw;
        r.available = false;  // e.g. no algorithm for this shape
        r.note = e.what();
      }
      std::fprintf(stderr, "gemm %-16s %-14s %s\n", c.label.c_str(), r.impl.c_str(),
                   r.available ? fmt::format("{:.2f} us", r.t.us).c_str() : r.note.c_str());
      s.report.rows.push_back(std::move(r));
    }
    for (const Precision& p : plan.gemm_prec) {
      KernelSpec spec;
      spec.w = p.w;
      spec.x = p.x;
      spec = with_tile_for(spec, apmm_problem(c.shape));
      Row r = make_row("gemm", c.label, dims, ops, "apnn", p.name());
      r.p = p.w.bits;
      r.q = p.x.bits;
      r.spec = nlohmann::json::parse(canonical_json(spec));
      OursGemm ours(s.engine, spec, c.shape, s.l2);
      const CheckResult check = ours.check();
      r.checked = check.checked;
      r.mismatches = check.mismatches;
      if (check.mismatches) {
        s.mismatch = true;
        r.note = "MISMATCH " + check.first_mismatch;
      }
      r.t = time_rotated(s.rule, ours.sets(), [&](int set) { ours.launch(set); });
      std::fprintf(stderr, "gemm %-16s %-14s %.2f us, %llu checked, %llu mismatches\n", c.label.c_str(), r.prec.c_str(),
                   r.t.us, static_cast<unsigned long long>(r.checked), static_cast<unsigned long long>(r.mismatches));
      s.report.rows.push_back(std::move(r));
    }
  }
}

}  // namespace apnn::bench
