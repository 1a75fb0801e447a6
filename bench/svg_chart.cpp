#include "bench/svg_chart.h"

#include <algorithm>

#include <fmt/format.h>

namespace apnn::bench {

namespace {

// Colours that stay distinct in print (Tableau 10).
const char* const kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

constexpr double kBar = 7, kGroupGap = 14, kLeft = 70, kRight = 20, kPlotH = 260, kTop = 50, kBottom = 110;

bool has_bar(double v) { return std::isfinite(v) && v > 0; }

double panel_width(const ChartPanel& p) {
  return kLeft + kRight + p.groups.size() * (p.series.size() * kBar + kGroupGap) + kGroupGap;
}

// The log2 range of the axis: whole powers of two covering every bar and 1.
std::pair<int, int> log2_range(const ChartPanel& p) {
  int lo = 0, hi = 0;
  for (const auto& g : p.values)
    for (double v : g)
      if (has_bar(v)) {
        lo = std::min(lo, static_cast<int>(std::floor(std::log2(v))));
        hi = std::max(hi, static_cast<int>(std::ceil(std::log2(v))));
      }
  if (lo == hi) ++hi;
  return {lo, hi};
}

std::string tick_label(int e) { return e >= 0 ? fmt::format("{}x", 1 << e) : fmt::format("1/{}x", 1 << -e); }

std::string panel_svg(const ChartPanel& p, double y0, double width) {
  const auto [lo, hi] = log2_range(p);
  auto y_of = [&](double v) { return y0 + kTop + kPlotH * (hi - std::log2(v)) / (hi - lo); };
  const double base = y_of(1.0), right = width - kRight;
  std::string s = fmt::format("<g class=\"panel\">\n<text x=\"{}\" y=\"{}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
                              kLeft, y0 + 22, xml_escape(p.title));
  for (int e = lo; e <= hi; ++e) {
    const double y = y_of(std::ldexp(1.0, e));
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kLeft, y, right, y);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y + 4,
                     tick_label(e));
  }
  s += fmt::format("<text transform=\"translate(16,{:.1f}) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                   y0 + kTop + kPlotH / 2, xml_escape(p.y_label));
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const double gx = kLeft + kGroupGap + g * (p.series.size() * kBar + kGroupGap);
    for (size_t k = 0; k < p.series.size(); ++k) {
      const double v = g < p.values.size() && k < p.values[g].size() ? p.values[g][k] : NAN;
      if (!has_bar(v)) continue;
      const double y = y_of(v), top = std::min(y, base), h = std::max(std::abs(y - base), 0.5);
      s += fmt::format(
          "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{:.1f}\" fill=\"{}\"><title>{} {}: "
          "{:.2f}x</title></rect>\n",
          gx + k * kBar, top, kBar - 1, h, kColours[k % 10], xml_escape(p.groups[g]), xml_escape(p.series[k]), v);
    }
    const double cx = gx + p.series.size() * kBar / 2, ly = y0 + kTop + kPlotH + 12;
    s += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(-40)\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
                     cx, ly, xml_escape(p.groups[g]));
  }
  s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#000\" stroke-width=\"1.5\"/>\n", kLeft,
                   base, right, base);
  for (size_t k = 0; k < p.series.size(); ++k) {
    const double lx = kLeft + k * 60;  // a line of its own under the title
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n",
                     lx, y0 + 29, kColours[k % 10], lx + 14, y0 + 38, xml_escape(p.series[k]));
  }
  return s + "</g>\n";
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string chart_svg(const std::vector<ChartPanel>& panels) {
  double width = 400;
  for (const ChartPanel& p : panels) width = std::max(width, panel_width(p));
  const double panel_h = kTop + kPlotH + kBottom;
  std::string body;
  for (size_t i = 0; i < panels.size(); ++i) body += panel_svg(panels[i], i * panel_h, width);
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{}</svg>\n",
      width, std::max(1.0, panels.size() * panel_h), body);
}

}  // namespace apnn::bench
