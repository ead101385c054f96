// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/coord/coordinator_identity.h"

#include <fstream>

#include <openssl/x509.h>

#include "engine/common/error.h"
#include "engine/common/log.h"
#include "engine/net/openssl_util.h"

namespace rookery::coord {
namespace {

constexpr std::chrono::hours kValidity{24 * 730};
constexpr std::chrono::hours kRenewBefore{24 * 30};

// Why `pem` cannot serve as the coordinator's certificate; "" when it can.
std::string unusable(const std::string &pem, const CoordinatorIdentity &id)
{
    try {
        auto cert = net::ossl::certificateFromPem(pem, "the coordinator certificate");
        if (net::ossl::keyFingerprint(X509_get0_pubkey(cert.get())) != id.key.nodeId())
            return "it is not for the coordinator's key";
        auto caCert = net::ossl::certificateFromPem(id.ca.certificatePem(), "the CA certificate");
        if (X509_verify(cert.get(), X509_get0_pubkey(caCert.get())) != 1)
            return "it is not signed by this swarm's CA";
        const time_t renewAt = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now() + kRenewBefore);
        if (X509_cmp_time(X509_get0_notAfter(cert.get()), const_cast<time_t *>(&renewAt)) < 0)
            return "it expires within 30 days";
        return {};
    } catch (const Error &e) {
        return e.what();
    }
}

} // namespace

CoordinatorIdentity CoordinatorIdentity::loadOrCreate(const std::filesystem::path &dataDir, const std::string &swarm)
{
    CoordinatorIdentity id{
        net::CertificateAuthority::loadOrCreate(dataDir, swarm), net::Identity::loadOrCreate(dataDir), {}, {}};
    const auto path = dataDir / "coordinator.crt";
    std::string why = "there is none yet";
    if (std::filesystem::exists(path)) {
        id.certificatePem = net::ossl::readFile(path);
        why = unusable(id.certificatePem, id);
    }
    if (!why.empty()) {
        if (std::filesystem::exists(path))
            log::warning("coord", "issuing a new coordinator certificate (" + why +
                                      "); the join string pins the key, so it stays the same");
        id.certificatePem = id.ca.issue(id.key.publicKeyPem(), kValidity);
        const auto tmp = path.string() + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out << id.certificatePem;
            if (!out.flush())
                throw Error("cannot write " + tmp);
        }
        std::filesystem::rename(tmp, path);
    }
    id.fingerprint = id.key.nodeId(); // the pin: SHA-256 of the key (SPKI), kept across renewals
    return id;
}

} // namespace rookery::coord
