// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/participant/dataset_fetcher.h"

#include <algorithm>
#include <set>
#include <thread>

#include "engine/common/error.h"
#include "engine/common/format.h"

namespace rookery::participant {

using Clock = std::chrono::steady_clock;

DatasetFetcher::DatasetFetcher(Config config)
    : m_config(std::move(config))
{ }

void DatasetFetcher::onPiece(const net::DataPiece &piece)
{
    std::lock_guard lock(m_mutex);
    m_piece = piece;
    m_arrived.notify_all();
}

std::optional<net::DataPiece> DatasetFetcher::awaitPiece(const std::string &sha256, uint64_t offset)
{
    const auto deadline = Clock::now() + m_config.pieceTimeout;
    std::unique_lock lock(m_mutex);
    while (Clock::now() < deadline) {
        if (m_config.stop && m_config.stop->load())
            throw Error("the node is stopping");
        if (m_piece && m_piece->sha256 == sha256 && m_piece->offset == offset) {
            auto piece = std::move(*m_piece);
            m_piece.reset();
            return piece;
        }
        m_piece.reset(); // an answer to an earlier request, re-sent after a timeout
        m_arrived.wait_for(lock, std::chrono::milliseconds(200));
    }
    return std::nullopt;
}

std::string DatasetFetcher::file(const std::string &sha256, uint64_t expectedBytes, const std::string &what)
{
    auto &cache = *m_config.cache;
    if (auto held = cache.readVerified(sha256))
        return std::move(*held);
    const uint64_t limit = expectedBytes ? expectedBytes : data::kMaxManifestBytes;
    uint64_t offset = cache.partialSize(sha256);
    if (offset > limit)
        offset = 0; // longer than it can be: start over
    if (offset > 0)
        m_config.say("resuming " + what + " at " + format::bytes(double(offset)));
    auto lastSaid = Clock::now();
    std::optional<Clock::time_point> unlinkedSince; // since when no request could be sent
    int timeouts = 0;
    uint64_t total = expectedBytes;
    while (total == 0 || offset < total) {
        if (m_config.stop && m_config.stop->load())
            throw Error("the node is stopping");
        const net::DataRequest request{sha256, offset, net::kMaxDataPieceBytes};
        if (!m_config.send(request)) { // not registered just now: the link comes back by itself
            if (!unlinkedSince)
                unlinkedSince = Clock::now();
            if (Clock::now() - *unlinkedSince > m_config.pieceTimeout * m_config.attempts)
                throw Error("cannot fetch " + what + ": no link to the coordinator");
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            continue;
        }
        unlinkedSince.reset();
        auto piece = awaitPiece(sha256, offset);
        if (!piece) {
            if (++timeouts >= m_config.attempts)
                throw Error("cannot fetch " + what + ": the coordinator did not answer " + std::to_string(timeouts) +
                            " requests");
            continue;
        }
        if (!piece->reason.empty())
            throw Error("the coordinator refused " + what + ": " + piece->reason);
        if (piece->total == 0 || piece->total > limit || (expectedBytes && piece->total != expectedBytes))
            throw Error("the coordinator says " + what + " has " + std::to_string(piece->total) + " bytes, expected " +
                        (expectedBytes ? std::to_string(expectedBytes) : "at most " + std::to_string(limit)));
        total = piece->total;
        const auto bytes = piece->data.span();
        if (bytes.empty() || offset + bytes.size() > total)
            throw Error("the coordinator sent a piece of " + what + " that does not fit it");
        cache.appendPartial(sha256, offset,
                            std::string_view(reinterpret_cast<const char *>(bytes.data()), bytes.size()));
        offset += bytes.size();
        if (Clock::now() - lastSaid > std::chrono::seconds(2) || offset == total) {
            m_config.say("fetching " + what + ": " + format::bytes(double(offset)) + " of " +
                         format::bytes(double(total)));
            lastSaid = Clock::now();
        }
    }
    return cache.commitPartial(sha256, what); // throws, naming the hashes, when it does not match
}

StageData DatasetFetcher::rootData(const std::string &manifestSha256, data::Shard shard, int64_t testSamples)
{
    const auto manifest =
        data::parseManifest(file(manifestSha256, 0, "the manifest of the run's dataset (" + manifestSha256 + ")"));
    const auto choice = data::trainShardsFor(manifest, shard);
    std::set<std::string> inUse{manifestSha256};
    uint64_t bytes = 0;
    for (size_t i : choice.train)
        bytes += manifest.train[i].bytes;
    m_config.say("this root stage reads " + std::to_string(choice.train.size()) + " of the " +
                 std::to_string(manifest.train.size()) + " training shards of " + manifest.name + " (" +
                 format::bytes(double(bytes)) + ")");
    const auto fetch = [&](const data::ShardRef &ref, const std::string &what) {
        inUse.insert(ref.sha256);
        return data::decodeShard(manifest, ref, file(ref.sha256, ref.bytes, what));
    };
    std::vector<data::ImageDataset> train, test;
    for (size_t n = 0; n < choice.train.size(); ++n) {
        const size_t i = choice.train[n];
        train.push_back(fetch(manifest.train[i], "training shard " + std::to_string(i + 1) + " of " + manifest.name +
                                                     " (" + manifest.train[i].sha256 + ")"));
    }
    int64_t testHeld = 0;
    for (size_t i = 0; i < manifest.test.size() && (testSamples <= 0 || testHeld < testSamples); ++i) {
        test.push_back(fetch(manifest.test[i], "test shard " + std::to_string(i + 1) + " of " + manifest.name + " (" +
                                                   manifest.test[i].sha256 + ")"));
        testHeld += test.back().count;
    }
    m_config.cache->evict(inUse);
    StageData out;
    out.train = std::make_shared<data::ImageDataset>(data::concatenate(manifest.name + "/train", train));
    auto whole = data::concatenate(manifest.name + "/test", test);
    out.test = std::make_shared<data::ImageDataset>(testSamples > 0 ? data::headOf(whole, testSamples) : whole);
    out.within = choice.within;
    return out;
}

} // namespace rookery::participant
