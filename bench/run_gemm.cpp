// The GEMM section: per shape the three cuBLASLt paths, then ours at each precision.
#include <cstdio>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/cublaslt_gemm.h"
#include "bench/ours.h"
#include "bench/sections.h"
#include "engine/apmm_runner.h"
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
        time_best_candidate(s, r, g.candidates(), g.sets(), [&](int i) { g.use(i); }, [&](int set) { g.launch(set); },
                            &chosen);
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
      spec.epilogue.int16_out = p.int16_out;
      if (const int64_t kmax = apmm_max_k(spec); c.shape.K > kmax) {  // an int16 row only where K keeps |y| within int16
        std::fprintf(stderr, "gemm %-16s %-14s skipped: K=%lld past the int16 output's %lld\n", c.label.c_str(),
                     p.name().c_str(), static_cast<long long>(c.shape.K), static_cast<long long>(kmax));
        continue;
      }
      TileSource from;
      spec = resolve_tile(spec, apmm_problem(c.shape), current_target(), &from);
      run_ours<OursGemm>(s, "gemm", c.label, dims, ops, p, spec, c.shape, from);
    }
  }
}

}  // namespace apnn::bench
