#include "engine/prewarm.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "apnn/error.h"

namespace apnn {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

}  // namespace

nlohmann::json PrewarmKernel::to_json() const {
  return {{"spec", nlohmann::json::parse(canonical)},
          {"layers", layers},
          {"key", key},
          {"cache", hit ? "hit" : "miss"},
          {"compile_ms", compile_ms},
          {"wall_ms", wall_ms}};
}

nlohmann::json PrewarmReport::to_json() const {
  nlohmann::json per_kernel = nlohmann::json::array();
  for (const auto& r : rows) per_kernel.push_back(r.to_json());
  return {{"model", model},     {"arch", arch}, {"device", device}, {"threads", threads}, {"layers", layers},
          {"kernels", kernels}, {"hits", hits}, {"misses", misses}, {"seconds", seconds}, {"per_kernel", per_kernel}};
}

PrewarmReport prewarm(Engine& engine, const Model& model, const Target& target, unsigned threads,
                      const PrewarmProgress& progress) {
  const auto t0 = Clock::now();
  PrewarmReport rep;
  rep.model = model.name;
  rep.arch = target.arch;
  rep.device = target.device;
  rep.layers = model.layers.size();

  // Resolve every layer's tile (cheap, serial) and group the layers by kernel.
  std::unordered_map<std::string, size_t> row_of;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const ModelLayer& l = model.layers[i];
    KernelSpec resolved;
    try {
      const Problem p = l.spec.op == Op::Apconv ? conv_problem(l.spec, l.conv) : apmm_problem(l.apmm);
      resolved = resolve_tile(l.spec, p, target);
    } catch (const Error& e) {
      throw Error(e.kind(),
                  fmt::format("{}: layer {} '{}': choosing the tile: {}", model.name, i + 1, l.name, e.what()));
    }
    const std::string canonical = canonical_json(resolved);
    auto [it, fresh] = row_of.emplace(canonical, rep.rows.size());
    if (fresh) {
      PrewarmKernel k;
      k.spec = canonicalize(resolved);
      k.canonical = canonical;
      rep.rows.push_back(std::move(k));
    }
    rep.rows[it->second].layers.push_back(l.name);
  }
  rep.kernels = rep.rows.size();

  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  rep.threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(rep.kernels, 1)));

  std::vector<std::exception_ptr> errors(rep.rows.size());
  std::exception_ptr progress_error;
  std::mutex mu;  // serialises progress calls and `done`
  size_t done = 0;
  std::atomic<size_t> next{0};
  auto notify = [&](PrewarmEvent::Kind kind, size_t i, bool failed) {
    if (!progress) return;
    std::lock_guard<std::mutex> lock(mu);
    if (kind == PrewarmEvent::Kind::Finished) ++done;
    if (progress_error) return;
    try {
      progress(PrewarmEvent{kind, i, done, rep.rows.size(), &rep.rows[i], failed});
    } catch (...) {
      progress_error = std::current_exception();
    }
  };
  auto work = [&] {
    for (size_t i = next++; i < rep.rows.size(); i = next++) {
      PrewarmKernel& k = rep.rows[i];
      notify(PrewarmEvent::Kind::Started, i, false);
      const auto start = Clock::now();
      bool failed = false;
      try {
        const CompileResult r = engine.compile(k.spec, target.arch);
        k.key = r.key.hex();
        k.hit = r.source != CompileResult::Source::Compiled;
        k.compile_ms = r.compile_ms;
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
      k.wall_ms = ms_since(start);
      notify(PrewarmEvent::Kind::Finished, i, failed);
    }
  };
  if (rep.threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(rep.threads);
    for (unsigned t = 0; t < rep.threads; ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }

  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    const std::string who = fmt::format("{}: kernel of layer{} {}", model.name,
                                        rep.rows[i].layers.size() > 1 ? "s" : "", quoted_list(rep.rows[i].layers));
    try {
      std::rethrow_exception(errors[i]);
    } catch (const Error& e) {
      throw Error(e.kind(), fmt::format("{}: {}", who, e.what()));
    } catch (const std::exception& e) {
      throw Error(ErrorKind::Compile, fmt::format("{}: {}", who, e.what()));
    }
  }
  if (progress_error) std::rethrow_exception(progress_error);
  for (const auto& r : rep.rows) (r.hit ? rep.hits : rep.misses)++;
  rep.seconds = ms_since(t0) / 1000.0;
  return rep;
}

}  // namespace apnn
