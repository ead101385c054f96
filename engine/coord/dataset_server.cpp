// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/dataset_server.h"

#include <algorithm>
#include <vector>

#include "engine/common/error.h"

namespace rookery::coord {

DatasetServer::DatasetServer(const std::filesystem::path &store, const std::string &manifestSha256)
    : m_store(store)
    , m_manifestSha(manifestSha256)
{
    const auto howToAdd = " (rookery-coordinator dataset add puts a dataset there)";
    const auto bytes = m_store.readVerified(manifestSha256);
    if (!bytes)
        throw Error("the run's dataset manifest " + manifestSha256 + " is not in " + store.string() + howToAdd);
    m_manifest = data::parseManifest(*bytes);
    m_files.insert(manifestSha256);
    for (const auto *refs : {&m_manifest.train, &m_manifest.test})
        for (const auto &r : *refs) {
            std::error_code ec;
            const auto size = std::filesystem::file_size(m_store.pathOf(r.sha256), ec);
            if (ec || size != r.bytes)
                throw Error("shard " + r.sha256 + " of dataset " + m_manifest.name + " is " +
                            (ec ? "missing from " + store.string() : "the wrong size in " + store.string()) + howToAdd);
            m_files.insert(r.sha256);
        }
}

net::DataPiece DatasetServer::serve(const net::DataRequest &request) const
{
    net::DataPiece piece{request.sha256, request.offset, 0, {}, {}};
    if (!m_files.count(request.sha256)) {
        piece.reason = "this coordinator serves no file " + request.sha256.substr(0, 64) + " for this run";
        return piece;
    }
    try {
        const uint32_t length = std::clamp<uint32_t>(request.length, 1, net::kMaxDataPieceBytes);
        auto range = m_store.readRange(request.sha256, request.offset, length);
        piece.total = range.total;
        std::vector<uint8_t> bytes(range.bytes.begin(), range.bytes.end());
        const auto n = int64_t(bytes.size());
        piece.data = tensorBufferFromBytes(DType::UInt8, {n}, std::move(bytes));
        m_served += uint64_t(n);
    } catch (const Error &e) {
        piece.reason = e.what();
    }
    return piece;
}

} // namespace rookery::coord
