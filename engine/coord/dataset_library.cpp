// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/dataset_library.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/paths.h"
#include "engine/coord/coordinator.h"
#include "engine/data/idx_file.h"
#include "engine/data/shard_store.h"

namespace rookery::coord {
namespace fs = std::filesystem;
namespace {

fs::path nameFile(const fs::path &dataDir, const std::string &name)
{
    if (name.empty() || name.size() > 64 ||
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") != std::string::npos || name[0] == '.')
        throw Error("the dataset name '" + name.substr(0, 80) + "' is not 1 to 64 of a-z, 0-9, '.', '_' and '-'");
    return datasetStoreOf(dataDir) / "names" / name;
}

std::string describe(const StoredDataset &d)
{
    return d.manifest.name + ": " + std::to_string(d.manifest.trainSamples()) + " training samples in " +
           std::to_string(d.manifest.train.size()) + " shards, " + format::bytes(double(d.bytes)) + ", sha256 " +
           d.sha256;
}

} // namespace

fs::path datasetStoreOf(const fs::path &dataDir) { return dataDir / "datasets"; }

StoredDataset addDataset(const fs::path &dataDir, const std::string &name, const data::ImageDataset &train,
                         const data::ImageDataset &test, int64_t shardSamples)
{
    const fs::path names = nameFile(dataDir, name);
    if (!fs::exists(dataDir)) // a new coordinator's: private, as the coordinator makes it
        ensurePrivateDirectory(dataDir);
    data::ShardStore store(datasetStoreOf(dataDir));
    StoredDataset out;
    out.manifest = data::cutIntoShards(name, train, test, shardSamples, [&](std::string_view shard) {
        store.put(shard); // one shard held at a time
        out.bytes += shard.size();
    });
    out.sha256 = store.put(data::manifestBytes(out.manifest));
    fs::create_directories(names.parent_path());
    const fs::path tmp = names.string() + ".new";
    {
        std::ofstream f(tmp, std::ios::trunc);
        f << out.sha256 << "\n";
        if (!f.flush())
            throw Error("cannot write " + tmp.string());
    }
    fs::rename(tmp, names);
    return out;
}

std::optional<std::string> datasetNamed(const fs::path &dataDir, const std::string &name)
{
    std::ifstream f(nameFile(dataDir, name));
    std::string sha;
    if (!(f >> sha) || !data::isSha256(sha))
        return std::nullopt;
    return sha;
}

data::ImageDataset readIdxPair(const fs::path &images, const fs::path &labels, const std::string &name)
{
    auto x = data::readIdxFile(images, 3);
    auto y = data::readIdxFile(labels, 1);
    if (x.dims[0] != y.dims[0])
        throw Error(images.string() + " holds " + std::to_string(x.dims[0]) + " images but " + labels.string() +
                    " holds " + std::to_string(y.dims[0]) + " labels");
    if (x.dims[1] > 4096 || x.dims[2] > 4096)
        throw Error(images.string() + ": images larger than 4096x4096");
    data::ImageDataset d;
    d.name = name;
    d.count = x.dims[0];
    d.rows = int(x.dims[1]);
    d.cols = int(x.dims[2]);
    d.classes = std::max(2, int(*std::max_element(y.values.begin(), y.values.end())) + 1);
    double sum = 0, squares = 0;
    for (uint8_t p : x.values) {
        sum += p / 255.0;
        squares += (p / 255.0) * (p / 255.0);
    }
    const double n = double(x.values.size()), mean = sum / n;
    const double deviation = std::sqrt(std::max(1e-8, squares / n - mean * mean));
    d.mean = float(std::round(mean * 1e4) / 1e4); // rounded: the manifest stays the same across machines
    d.stddev = float(std::max(1e-4, std::round(deviation * 1e4) / 1e4));
    d.pixels = std::move(x.values);
    d.labels = std::move(y.values);
    return d;
}

std::string settleServedDataset(RunConfig &run, const std::string &jobSha256, const fs::path &dataDir,
                                const fs::path &fashionMnistDir)
{
    const bool fashion = run.dataset == "fashion-mnist";
    const bool haveCopy = fashion && fs::exists(fashionMnistDir / "train-images-idx3-ubyte.gz");
    ensurePrivateDirectory(dataDir);
    data::ShardStore store(datasetStoreOf(dataDir));
    if (!jobSha256.empty() && store.has(jobSha256)) {
        run.datasetSha256 = jobSha256;
        return "serving dataset " + run.dataset + " (sha256 " + jobSha256 + ") to nodes without a copy";
    }
    if (haveCopy) {
        const auto train = data::loadFashionMnist(fashionMnistDir, data::Split::Train);
        const auto test = data::loadFashionMnist(fashionMnistDir, data::Split::Test);
        const auto added = addDataset(dataDir, run.dataset, train, test);
        if (!jobSha256.empty() && added.sha256 != jobSha256)
            throw Error("the dataset '" + run.dataset + "' in " + fashionMnistDir.string() + " has content hash " +
                        added.sha256 + ", not the job's dataset.sha256 " + jobSha256 + ": a different or damaged copy");
        run.datasetSha256 = added.sha256;
        return "serving dataset " + describe(added) + ", to nodes without a copy";
    }
    if (!jobSha256.empty())
        throw Error("the job's dataset '" + run.dataset + "' (sha256 " + jobSha256 + ") is not in " +
                    datasetStoreOf(dataDir).string() + ": add it with rookery-coordinator dataset add");
    if (fashion) {
        run.datasetSha256.clear();
        return "not serving Fashion-MNIST (no copy at " + fashionMnistDir.string() +
               "): every root-stage node needs its own";
    }
    const auto named = datasetNamed(dataDir, run.dataset);
    if (!named || !store.has(*named))
        throw Error("no dataset named '" + run.dataset + "' in " + datasetStoreOf(dataDir).string() +
                    ": add it with rookery-coordinator dataset add");
    run.datasetSha256 = *named;
    return "serving dataset " + run.dataset + " (sha256 " + *named + ") to nodes without a copy";
}

} // namespace rookery::coord
