#include <cstdio>
#include <ctime>

#include "apnn/cache.h"
#include "cli/commands.h"

namespace apnn::cli {

void add_cache(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("cache", "Inspect or clear the kernel disk cache ($APNN_CACHE_DIR)");
  cmd->require_subcommand(1);
  auto as_json = std::make_shared<bool>(false);

  auto* ls = cmd->add_subcommand("ls", "List cached kernels");
  ls->add_flag("--json", *as_json, "one JSON object per entry");
  ls->callback([=] {
    *action = [=] {
      DiskCache cache = DiskCache::from_environment();
      for (const CacheEntryInfo& e : cache.list()) {
        if (*as_json) {
          const nlohmann::json j = {{"arch", e.bucket}, {"key", e.key.hex()}, {"bytes", e.payload_bytes},
                                    {"label", e.label}, {"mtime", e.mtime_unix}, {"valid", e.valid}};
          std::printf("%s\n", j.dump().c_str());
        } else {
          std::printf("%-7s %s %8lu %s%s\n", e.bucket.c_str(), e.key.hex().c_str(),
                      static_cast<unsigned long>(e.payload_bytes), e.valid ? "" : "[corrupt] ", e.label.c_str());
        }
      }
      return 0;
    };
  });

  auto* stats = cmd->add_subcommand("stats", "Cache counters and size");
  stats->add_flag("--json", *as_json, "print as one JSON line");
  stats->callback([=] {
    *action = [=] {
      DiskCache cache = DiskCache::from_environment();
      nlohmann::json j = cache.persisted_counters().to_json();
      j["dir"] = cache.root().string();
      j["entries"] = cache.list().size();
      j["disk_bytes"] = cache.total_bytes();
      j["max_bytes"] = cache.max_bytes();
      j["persistent"] = cache.persistent();
      if (*as_json) {
        std::printf("%s\n", j.dump().c_str());
      } else {
        for (auto it = j.begin(); it != j.end(); ++it) std::printf("%-16s %s\n", it.key().c_str(), it.value().dump().c_str());
      }
      return 0;
    };
  });

  auto* clear = cmd->add_subcommand("clear", "Remove every cached kernel");
  clear->callback([=] {
    *action = [=] {
      DiskCache cache = DiskCache::from_environment();
      std::printf("removed %lu entries from %s\n", static_cast<unsigned long>(cache.clear()), cache.root().c_str());
      return 0;
    };
  });
}

}  // namespace apnn::cli
