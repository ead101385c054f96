// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace rookery::net {

/// A swarm's certificate authority: the coordinator holds it and signs each node's
/// certificate when the node registers. Peers trust this CA alone, so a certificate
/// from anywhere else (another swarm, a public CA) is refused.
///
/// A node certificate's subject CN is the node id (the fingerprint of its public key);
/// links check that the two agree, so a name cannot be borrowed by another key.
///
/// Thread safety: a plain value; const methods may be called from any thread.
class CertificateAuthority
{
public:
    using TimePoint = std::chrono::system_clock::time_point;

    /// A new CA with an Ed25519 key and a self-signed certificate named after the swarm.
    static CertificateAuthority create(const std::string &swarmName,
                                       std::chrono::hours validity = std::chrono::hours(24 * 365 * 10));
    /// Loads <dir>/ca.key (mode 0600) and <dir>/ca.crt, or creates both.
    static CertificateAuthority loadOrCreate(const std::filesystem::path &dir, const std::string &swarmName);
    static CertificateAuthority fromPem(std::string privateKeyPem, std::string certificatePem);

    const std::string &certificatePem() const { return m_certificatePem; }
    const std::string &privateKeyPem() const { return m_privateKeyPem; }
    /// SHA-256 of the CA certificate: the pin in a coordinator address when the
    /// coordinator presents this certificate.
    const std::string &fingerprint() const { return m_fingerprint; }

    /// Signs a certificate for the node that holds `publicKeyPem`, valid in
    /// [notBefore, notAfter]. Throws rookery::Error when the key is not a public key.
    std::string issue(std::string_view publicKeyPem, TimePoint notBefore, TimePoint notAfter) const;
    /// The same, valid from five minutes ago (clock skew) for `validity`.
    std::string issue(std::string_view publicKeyPem, std::chrono::seconds validity = std::chrono::hours(24 * 30)) const;

private:
    std::string m_privateKeyPem;
    std::string m_certificatePem;
    std::string m_fingerprint;
};

/// When the certificate in `pem` expires (its notAfter). Throws rookery::Error when
/// `pem` is not a certificate.
std::chrono::system_clock::time_point certificateExpiry(std::string_view pem);

} // namespace rookery::net
