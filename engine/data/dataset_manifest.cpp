// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/dataset_manifest.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/common/secret_token.h"

namespace rookery::data {
namespace {

using json = nlohmann::json;

void putBigEndian32(std::string &out, uint32_t v)
{
    out += char(v >> 24);
    out += char(v >> 16 & 0xff);
    out += char(v >> 8 & 0xff);
    out += char(v & 0xff);
}

uint32_t bigEndian32(std::string_view s, size_t at)
{
    const auto *p = reinterpret_cast<const uint8_t *>(s.data() + at);
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// The header bytes of a shard of `samples` images.
constexpr uint64_t kHeaderBytes = 16 + 8;

uint64_t shardBytes(int rows, int cols, int64_t samples)
{
    return kHeaderBytes + uint64_t(samples) * (uint64_t(rows) * uint64_t(cols) + 1);
}

std::string encodeShard(const ImageDataset &d, int64_t begin, int64_t end)
{
    const int64_t n = end - begin;
    const auto per = size_t(d.pixelsPerImage());
    std::string out;
    out.reserve(size_t(shardBytes(d.rows, d.cols, n)));
    putBigEndian32(out, 0x803);
    putBigEndian32(out, uint32_t(n));
    putBigEndian32(out, uint32_t(d.rows));
    putBigEndian32(out, uint32_t(d.cols));
    out.append(reinterpret_cast<const char *>(d.pixels.data()) + size_t(begin) * per, size_t(n) * per);
    putBigEndian32(out, 0x801);
    putBigEndian32(out, uint32_t(n));
    out.append(reinterpret_cast<const char *>(d.labels.data()) + begin, size_t(n));
    return out;
}

json refsJson(const std::vector<ShardRef> &refs)
{
    json out = json::array();
    for (const auto &r : refs)
        out.push_back({{"sha256", r.sha256}, {"bytes", r.bytes}, {"samples", r.samples}});
    return out;
}

[[noreturn]] void bad(const std::string &field, const std::string &what)
{
    throw Error("dataset manifest: " + field + ": " + what);
}

int64_t integerField(const json &j, const std::string &where, const char *key, int64_t low, int64_t high)
{
    const auto it = j.find(key);
    if (it == j.end())
        bad(where + key, "missing");
    if (!it->is_number_integer())
        bad(where + key, "not an integer");
    const auto v = it->get<int64_t>();
    if (v < low || v > high)
        bad(where + key, std::to_string(v) + " is outside " + std::to_string(low) + ".." + std::to_string(high));
    return v;
}

std::vector<ShardRef> readRefs(const json &j, const char *key, const DatasetManifest &m)
{
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->empty())
        bad(key, "missing or empty: a list of shards");
    if (it->size() > 100'000)
        bad(key, "more than 100000 shards");
    std::vector<ShardRef> out;
    for (size_t i = 0; i < it->size(); ++i) {
        const auto &e = (*it)[i];
        const std::string where = std::string(key) + "[" + std::to_string(i) + "].";
        if (!e.is_object())
            bad(where, "not an object");
        ShardRef r;
        const auto sha = e.find("sha256");
        if (sha == e.end() || !sha->is_string() || !isSha256(sha->get<std::string>()))
            bad(where + "sha256", "must be 64 lowercase hex digits");
        r.sha256 = sha->get<std::string>();
        r.samples = integerField(e, where, "samples", 1, 1 << 24);
        r.bytes = uint64_t(integerField(e, where, "bytes", 1, int64_t(kMaxShardBytes)));
        if (r.bytes != shardBytes(m.rows, m.cols, r.samples))
            bad(where + "bytes", std::to_string(r.bytes) + " is not what " + std::to_string(r.samples) + " images of " +
                                     std::to_string(m.rows) + "x" + std::to_string(m.cols) + " take (" +
                                     std::to_string(shardBytes(m.rows, m.cols, r.samples)) + ")");
        out.push_back(std::move(r));
    }
    return out;
}

} // namespace

int64_t DatasetManifest::trainSamples() const
{
    int64_t n = 0;
    for (const auto &r : train)
        n += r.samples;
    return n;
}

uint64_t DatasetManifest::trainBytes() const
{
    uint64_t n = 0;
    for (const auto &r : train)
        n += r.bytes;
    return n;
}

bool isSha256(std::string_view text)
{
    return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

DatasetManifest cutIntoShards(const std::string &name, const ImageDataset &train, const ImageDataset &test,
                              int64_t shardSamples, const std::function<void(std::string_view)> &each)
{
    if (shardSamples < 1)
        throw Error("a shard holds at least one sample");
    if (train.rows != test.rows || train.cols != test.cols || train.channels != 1 || test.channels != 1)
        throw Error("the train and test images of " + name + " differ in shape, or have more than one channel");
    DatasetManifest m;
    m.name = name;
    m.rows = train.rows;
    m.cols = train.cols;
    m.classes = std::max(train.classes, test.classes);
    m.mean = train.mean;
    m.stddev = train.stddev;
    for (auto [split, refs] : {std::pair{&train, &m.train}, std::pair{&test, &m.test}})
        for (int64_t begin = 0; begin < split->count; begin += shardSamples) {
            const int64_t end = std::min(split->count, begin + shardSamples);
            const std::string bytes = encodeShard(*split, begin, end);
            refs->push_back({sha256Hex(bytes), bytes.size(), end - begin});
            if (each)
                each(bytes);
        }
    return m;
}

ShardedDataset cutIntoShards(const std::string &name, const ImageDataset &train, const ImageDataset &test,
                             int64_t shardSamples)
{
    ShardedDataset out;
    out.manifest =
        cutIntoShards(name, train, test, shardSamples, [&](std::string_view bytes) { out.shards.emplace_back(bytes); });
    return out;
}

std::string manifestBytes(const DatasetManifest &m)
{
    const json j{{"rookery_dataset", kManifestFormat},
                 {"name", m.name},
                 {"rows", m.rows},
                 {"cols", m.cols},
                 {"classes", m.classes},
                 {"mean", double(m.mean)},
                 {"stddev", double(m.stddev)},
                 {"train", refsJson(m.train)},
                 {"test", refsJson(m.test)}};
    return j.dump(1) + "\n";
}

DatasetManifest parseManifest(std::string_view bytes)
{
    if (bytes.size() > kMaxManifestBytes)
        throw Error("dataset manifest: larger than " + std::to_string(kMaxManifestBytes) + " bytes");
    json j;
    try {
        j = json::parse(bytes);
    } catch (const json::exception &e) {
        throw Error(std::string("dataset manifest: not valid JSON: ") + e.what());
    }
    if (!j.is_object())
        bad("", "not a JSON object");
    DatasetManifest m;
    if (integerField(j, "", "rookery_dataset", 1, 1000) > kManifestFormat)
        bad("rookery_dataset", "a newer format than this version reads; update Rookery");
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string() || name->get<std::string>().empty() ||
        name->get<std::string>().size() > 64)
        bad("name", "must be a text of 1 to 64 characters");
    m.name = name->get<std::string>();
    m.rows = int(integerField(j, "", "rows", 1, 4096));
    m.cols = int(integerField(j, "", "cols", 1, 4096));
    m.classes = int(integerField(j, "", "classes", 2, 256));
    for (auto [key, field] : {std::pair{"mean", &m.mean}, std::pair{"stddev", &m.stddev}}) {
        const auto it = j.find(key);
        if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()))
            bad(key, "missing or not a number");
        *field = float(it->get<double>());
    }
    if (m.stddev <= 0.f)
        bad("stddev", "must be positive");
    m.train = readRefs(j, "train", m);
    m.test = readRefs(j, "test", m);
    return m;
}

ImageDataset decodeShard(const DatasetManifest &m, const ShardRef &ref, std::string_view bytes)
{
    const std::string what = "shard " + ref.sha256 + " of " + m.name + ": ";
    if (bytes.size() != shardBytes(m.rows, m.cols, ref.samples))
        throw Error(what + std::to_string(bytes.size()) + " bytes, expected " +
                    std::to_string(shardBytes(m.rows, m.cols, ref.samples)));
    const uint64_t pixels = uint64_t(ref.samples) * uint64_t(m.rows) * uint64_t(m.cols);
    if (bigEndian32(bytes, 0) != 0x803 || bigEndian32(bytes, 4) != uint32_t(ref.samples) ||
        bigEndian32(bytes, 8) != uint32_t(m.rows) || bigEndian32(bytes, 12) != uint32_t(m.cols))
        throw Error(what + "its image header is not IDX " + std::to_string(ref.samples) + "x" + std::to_string(m.rows) +
                    "x" + std::to_string(m.cols));
    const size_t labelsAt = 16 + size_t(pixels);
    if (bigEndian32(bytes, labelsAt) != 0x801 || bigEndian32(bytes, labelsAt + 4) != uint32_t(ref.samples))
        throw Error(what + "its label header is not IDX " + std::to_string(ref.samples));
    ImageDataset d;
    d.name = m.name;
    d.count = ref.samples;
    d.rows = m.rows;
    d.cols = m.cols;
    d.classes = m.classes;
    d.mean = m.mean;
    d.stddev = m.stddev;
    d.pixels.assign(bytes.begin() + 16, bytes.begin() + ptrdiff_t(labelsAt));
    d.labels.assign(bytes.begin() + ptrdiff_t(labelsAt) + 8, bytes.end());
    const auto high = std::find_if(d.labels.begin(), d.labels.end(), [&](uint8_t l) { return l >= m.classes; });
    if (high != d.labels.end())
        throw Error(what + "label " + std::to_string(*high) + " at index " + std::to_string(high - d.labels.begin()) +
                    " is not below the " + std::to_string(m.classes) + " classes");
    return d;
}

ImageDataset concatenate(const std::string &name, const std::vector<ImageDataset> &parts)
{
    if (parts.empty())
        throw Error("no data for " + name);
    ImageDataset out = parts.front();
    out.name = name;
    for (size_t i = 1; i < parts.size(); ++i) {
        out.pixels.insert(out.pixels.end(), parts[i].pixels.begin(), parts[i].pixels.end());
        out.labels.insert(out.labels.end(), parts[i].labels.begin(), parts[i].labels.end());
        out.count += parts[i].count;
    }
    return out;
}

ShardChoice trainShardsFor(const DatasetManifest &m, Shard shard)
{
    const int count = std::max(1, shard.count);
    const int index = std::clamp(shard.index, 0, count - 1);
    const auto shards = int(m.train.size());
    ShardChoice out;
    if (count <= shards) {
        for (int i = index; i < shards; i += count)
            out.train.push_back(size_t(i));
        return out;
    }
    const int mine = index % shards; // clusters index, index + shards, ... share it
    out.train.push_back(size_t(mine));
    out.within = {index / shards, (count - 1 - mine) / shards + 1};
    return out;
}

} // namespace rookery::data
