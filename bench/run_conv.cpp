// The convolution section: per shape cuDNN fp16 and int8 (NHWC), then ours at each precision.
#include <cstdio>

#include <fmt/format.h>

#include "apnn/error.h"
#include "bench/cudnn_conv.h"
#include "bench/ours.h"
#include "bench/sections.h"
#include "engine/conv_runner.h"
#include "engine/tile_choice.h"
#include "spec/kernel_rules.h"

namespace apnn::bench {

void run_conv_section(Section& s, const Plan& plan) {
  for (const ConvCase& c : plan.conv) {
    KernelSpec base;
    base.op = Op::Apconv;
    base.conv = c.params;
    const ConvGeometry g = conv_geometry(base, c.shape);
    const nlohmann::json dims = {{"batch", g.N},  {"in_channels", g.C}, {"height", g.H},
                                 {"width", g.W},  {"out_channels", g.O}, {"kernel", {g.kh, g.kw}},
                                 {"stride", {g.sh, g.sw}}, {"pad", {g.ph, g.pw}}, {"out_height", g.Ho()},
                                 {"out_width", g.Wo()}};
    const double ops = conv_ops(g.N, g.O, g.Ho(), g.Wo(), g.C, g.kh, g.kw);
    for (ConvType t : {ConvType::Fp16, ConvType::Int8}) {
      Row r = make_row("conv", c.label, dims, ops, conv_impl(t), conv_prec(t));
      try {
        CudnnConv v(t, g, s.l2);
        if (v.available()) {
          int chosen = 0;
          time_best_candidate(s, r, v.candidates(), v.sets(), [&](int i) { v.use(i); }, [&](int set) { v.launch(set); },
                              &chosen);
          r.note = v.describe();
        } else {
          r.available = false;
          r.note = v.why();
        }
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::Driver) throw;
        r.available = false;  // a cuDNN call failed for this shape: the row says which
        r.note = e.what();
      }
      std::fprintf(stderr, "conv %-24s %-16s %s\n", c.label.c_str(), r.impl.c_str(),
                   r.available ? fmt::format("{:.2f} us", r.t.us).c_str() : r.note.c_str());
      s.report.rows.push_back(std::move(r));
    }
    for (const Precision& p : plan.conv_prec) {
      KernelSpec spec = base;
      spec.w = p.w;
      spec.x = p.x;
      spec.epilogue.int16_out = p.int16_out;
      // An int16 row only where in-channels x kernel keeps |y| within int16.
      if (const int64_t kmax = rules::max_reduction(spec); g.C * g.kh * g.kw > kmax) {
        std::fprintf(stderr, "conv %-24s %-16s skipped: in-channels x kernel %lld past the int16 output's %lld\n",
                     c.label.c_str(), p.name().c_str(), static_cast<long long>(g.C * g.kh * g.kw),
                     static_cast<long long>(kmax));
        continue;
      }
      TileSource from;
      spec = resolve_tile(spec, conv_problem(spec, c.shape), current_target(), &from);
      run_ours<OursConv>(s, "conv", c.label, dims, ops, p, spec, c.shape, from);
    }
  }
}

}  // namespace apnn::bench
