// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/certificate_authority.h"

#include <openssl/x509.h>

#include "engine/common/error.h"
#include "engine/common/paths.h"
#include "engine/net/openssl_util.h"

namespace rookery::net {

CertificateAuthority CertificateAuthority::create(const std::string &swarmName, std::chrono::hours validity)
{
    auto key = ossl::generateEd25519();
    const auto now = std::chrono::system_clock::now();
    auto cert = ossl::makeCertificate(key.get(), "Rookery swarm CA: " + swarmName, nullptr, key.get(),
                                      now - std::chrono::minutes(5), now + validity, true);
    return fromPem(ossl::privateKeyPem(key.get()), ossl::certificatePem(cert.get()));
}

CertificateAuthority CertificateAuthority::loadOrCreate(const std::filesystem::path &dir, const std::string &swarmName)
{
    ensurePrivateDirectory(dir);
    const auto keyPath = dir / "ca.key", certPath = dir / "ca.crt";
    if (std::filesystem::exists(keyPath) || std::filesystem::exists(certPath))
        return fromPem(readPrivateFile(keyPath), ossl::readFile(certPath));
    auto ca = create(swarmName);
    writePrivateFile(keyPath, ca.m_privateKeyPem);
    writePrivateFile(certPath, ca.m_certificatePem);
    return ca;
}

CertificateAuthority CertificateAuthority::fromPem(std::string privateKeyPem, std::string certificatePem)
{
    auto key = ossl::privateKeyFromPem(privateKeyPem, "the CA key");
    auto cert = ossl::certificateFromPem(certificatePem, "the CA certificate");
    if (X509_check_private_key(cert.get(), key.get()) != 1)
        throw Error("the CA certificate does not belong to the CA key");
    CertificateAuthority ca;
    ca.m_fingerprint = ossl::certFingerprint(cert.get());
    ca.m_privateKeyPem = std::move(privateKeyPem);
    ca.m_certificatePem = std::move(certificatePem);
    return ca;
}

std::string CertificateAuthority::issue(std::string_view publicKeyPem, TimePoint notBefore, TimePoint notAfter) const
{
    auto subject = ossl::publicKeyFromPem(publicKeyPem, "the node's public key");
    auto key = ossl::privateKeyFromPem(m_privateKeyPem, "the CA key");
    auto caCert = ossl::certificateFromPem(m_certificatePem, "the CA certificate");
    auto cert = ossl::makeCertificate(subject.get(), ossl::keyFingerprint(subject.get()), caCert.get(), key.get(),
                                      notBefore, notAfter, false);
    return ossl::certificatePem(cert.get());
}

std::string CertificateAuthority::issue(std::string_view publicKeyPem, std::chrono::seconds validity) const
{
    const auto now = std::chrono::system_clock::now();
    return issue(publicKeyPem, now - std::chrono::minutes(5), now + validity);
}

std::chrono::system_clock::time_point certificateExpiry(std::string_view pem)
{
    auto cert = ossl::certificateFromPem(pem, "the certificate");
    int days = 0, seconds = 0; // from now to notAfter
    if (!ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(cert.get())))
        ossl::fail("the certificate's expiry");
    return std::chrono::system_clock::now() + std::chrono::hours(24) * days + std::chrono::seconds(seconds);
}

} // namespace rookery::net
