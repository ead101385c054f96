// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/identity.h"

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/net/openssl_util.h"

namespace rookery::net {

std::string publicKeyFingerprint(std::string_view publicKeyPem)
{
    return ossl::keyFingerprint(ossl::publicKeyFromPem(publicKeyPem, "the public key").get());
}

std::string certificateFingerprint(std::string_view certificatePem)
{
    return ossl::certFingerprint(ossl::certificateFromPem(certificatePem, "the certificate").get());
}

std::string certificateNodeId(std::string_view certificatePem)
{
    auto cert = ossl::certificateFromPem(certificatePem, "the certificate");
    return ossl::keyFingerprint(X509_get0_pubkey(cert.get()));
}

std::filesystem::path Identity::keyPath(const std::filesystem::path &dataDir) { return dataDir / "identity.key"; }

Identity Identity::loadOrCreate(const std::filesystem::path &dataDir)
{
    ensurePrivateDirectory(dataDir);
    const auto path = keyPath(dataDir);
    if (std::filesystem::exists(path)) {
        std::string pem = readPrivateFile(path);
        try {
            return fromPrivateKeyPem(std::move(pem));
        } catch (const Error &e) {
            throw Error("the identity key " + path.string() + " is damaged (" + e.what() +
                        "); move it away to create a new identity");
        }
    }
    Identity id = generate();
    writePrivateFile(path, id.m_privateKeyPem);
    return id;
}

Identity Identity::generate()
{
    auto key = ossl::generateEd25519();
    return fromPrivateKeyPem(ossl::privateKeyPem(key.get()));
}

Identity Identity::fromPrivateKeyPem(std::string privateKeyPem)
{
    auto key = ossl::privateKeyFromPem(privateKeyPem, "the identity key");
    Identity id;
    id.m_nodeId = ossl::keyFingerprint(key.get());
    id.m_publicKeyPem = ossl::publicKeyPem(key.get());
    id.m_privateKeyPem = std::move(privateKeyPem);
    return id;
}

std::string Identity::selfSignedCertificate(std::chrono::hours validity) const
{
    auto key = ossl::privateKeyFromPem(m_privateKeyPem, "the identity key");
    const auto now = std::chrono::system_clock::now();
    auto cert = ossl::makeCertificate(key.get(), m_nodeId, nullptr, key.get(), now - std::chrono::minutes(5),
                                      now + validity, false);
    return ossl::certificatePem(cert.get());
}

} // namespace rookery::net
