// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/nickname.h"

#include <array>
#include <cstdint>
#include <string_view>

namespace rookery::net {
namespace {

constexpr std::array<std::string_view, 32> kAdjectives = {
    "amber",  "azure",  "bold",   "brisk", "calm",   "clever", "copper", "crisp", "dusky",   "eager", "fair",
    "gentle", "golden", "hardy",  "jolly", "keen",   "lively", "lucky",  "merry", "misty",   "noble", "quick",
    "quiet",  "rusty",  "silver", "sleek", "steady", "sunny",  "swift",  "tawny", "valiant", "witty"};
constexpr std::array<std::string_view, 32> kBirds = {
    "auk",    "bittern", "bunting", "chough", "crane",   "crow",    "curlew", "dipper",  "dunlin",  "egret",  "finch",
    "gannet", "grebe",   "heron",   "ibis",   "jackdaw", "kestrel", "kite",   "lapwing", "linnet",  "magpie", "merlin",
    "osprey", "petrel",  "plover",  "raven",  "rook",    "shrike",  "swift",  "tern",    "wagtail", "wren"};

} // namespace

std::string nicknameFor(const std::string &nodeId)
{
    // FNV-1a over the whole id, so that ids sharing a prefix still differ.
    uint64_t h = 1469598103934665603ull;
    for (char c : nodeId)
        h = (h ^ uint8_t(c)) * 1099511628211ull;
    std::string name =
        std::string(kAdjectives[h % kAdjectives.size()]) + "-" + std::string(kBirds[(h >> 8) % kBirds.size()]) + "-";
    static constexpr char kHex[] = "0123456789abcdef";
    name += kHex[(h >> 16) & 15];
    name += kHex[(h >> 20) & 15];
    return name;
}

} // namespace rookery::net
