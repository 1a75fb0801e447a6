// Grouped bar charts as hand-written SVG text (the paper's figures 5-8): one group of bars
// per shape, one bar per precision, heights on a log2 axis around a baseline of 1 so that
// "ours faster" bars rise and "ours slower" bars hang. No plotting library.
#pragma once
#include <cmath>
#include <string>
#include <vector>

namespace apnn::bench {

struct ChartPanel {
  std::string title;
  std::string y_label;                      // e.g. "speedup over the best vendor path"
  std::vector<std::string> groups;          // x axis: one label per group
  std::vector<std::string> series;          // legend: one name per bar in a group
  std::vector<std::vector<double>> values;  // values[group][series]; NaN or <= 0: no bar
};

// Panels stacked top to bottom in one document. Labels are XML-escaped.
std::string chart_svg(const std::vector<ChartPanel>& panels);

std::string xml_escape(const std::string& s);

}  // namespace apnn::bench
