#include "cache/entry_format.h"

#include <cstring>

namespace apnn::cache_format {
namespace {

constexpr char kMagic[8] = {'A', 'P', 'N', 'N', 'C', 'A', 'C', 'H'};

void put_le(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

std::optional<uint64_t> parse_hex64(std::string_view s) {
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return std::nullopt;  // hex() writes lowercase only
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace

std::string entry_file_name(const CacheKey& key) { return key.hex() + std::string(kEntrySuffix); }

std::optional<CacheKey> parse_entry_file_name(std::string_view name) {
  if (name.size() != 32 + kEntrySuffix.size() || name.substr(32) != kEntrySuffix) return std::nullopt;
  auto hi = parse_hex64(name.substr(0, 16)), lo = parse_hex64(name.substr(16, 16));
  if (!hi || !lo) return std::nullopt;
  return CacheKey{*hi, *lo};
}

std::vector<char> encode(const CacheKey& key, std::string_view label, const std::vector<char>& payload) {
  std::vector<char> out(kHeaderBytes + label.size() + payload.size());
  char* h = out.data();
  std::memcpy(h, kMagic, sizeof kMagic);
  put_le(h + 8, kVersion, 4);
  put_le(h + 12, label.size(), 4);
  put_le(h + 16, key.hi, 8);
  put_le(h + 24, key.lo, 8);
  put_le(h + 32, payload.size(), 8);
  put_le(h + 40, checksum64(payload.data(), payload.size()), 8);
  std::memcpy(h + kHeaderBytes, label.data(), label.size());
  if (!payload.empty()) std::memcpy(h + kHeaderBytes + label.size(), payload.data(), payload.size());
  return out;
}

std::optional<Decoded> decode(const std::vector<char>& file, const CacheKey& expected, std::string* why) {
  const char* h = file.data();
  if (file.size() < kHeaderBytes) {
    *why = "truncated header";
    return std::nullopt;
  }
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) {
    *why = "bad magic";
    return std::nullopt;
  }
  if (uint64_t version = get_le(h + 8, 4); version != kVersion) {
    *why = "format version " + std::to_string(version) + ", expected " + std::to_string(kVersion);
    return std::nullopt;
  }
  Decoded d;
  const uint64_t label_bytes = get_le(h + 12, 4);
  if (const CacheKey key{get_le(h + 16, 8), get_le(h + 24, 8)}; key != expected) {
    *why = "header holds key " + key.hex();
    return std::nullopt;
  }
  d.payload_bytes = get_le(h + 32, 8);
  // Compared by subtraction: a corrupt payload size must not overflow the sum.
  const uint64_t body = file.size() - kHeaderBytes;
  if (label_bytes > body || d.payload_bytes != body - label_bytes) {
    *why = "size " + std::to_string(file.size()) + " does not match header";
    return std::nullopt;
  }
  d.payload_offset = kHeaderBytes + label_bytes;
  if (checksum64(h + d.payload_offset, d.payload_bytes) != get_le(h + 40, 8)) {
    *why = "payload checksum mismatch";
    return std::nullopt;
  }
  d.label.assign(h + kHeaderBytes, label_bytes);
  return d;
}

}  // namespace apnn::cache_format
